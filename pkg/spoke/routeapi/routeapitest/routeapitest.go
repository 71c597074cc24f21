// Package routeapitest builds the APIServices and CRDs the Route API tests classify.
package routeapitest

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// NativeAPIService is openshift-apiserver's service-backed APIService for route.openshift.io/v1.
func NativeAPIService() apiregistrationv1.APIService {
	return apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.route.openshift.io"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "route.openshift.io", Version: "v1",
			Service: &apiregistrationv1.ServiceReference{Namespace: "openshift-apiserver", Name: "api"}},
	}
}

// LocalAPIService is what the apiserver's autoregister controller creates for a CRD.
func LocalAPIService(group, version string) apiregistrationv1.APIService {
	return apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec:       apiregistrationv1.APIServiceSpec{Group: group, Version: version},
	}
}

// CRD is a CustomResourceDefinition of group serving versions.
func CRD(name, group string, versions ...string) apiextensionsv1.CustomResourceDefinition {
	c := apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: group},
	}
	for _, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
	}
	return c
}

// RoutesCRD is the routes.route.openshift.io CRD.
func RoutesCRD() apiextensionsv1.CustomResourceDefinition {
	return CRD(contract.RoutesCRDName, "route.openshift.io", "v1")
}
