package routeapi

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi/routeapitest"
)

// FuzzClassify feeds the APIServices and CRDs a cluster may hold (their groups, versions
// and services are anyone's to create) through the Route API classification and the
// duplicate finder. No input may panic; the reason is always one of the four; a routes
// CRD is reported only when it exists, and "Native" only with a service-backed APIService.
func FuzzClassify(f *testing.F) {
	f.Add("route.openshift.io", "v1", "openshift-apiserver/api", "routes.route.openshift.io", "route.openshift.io", "v1")
	f.Add("route.openshift.io", "v1", "", "routes.route.openshift.io", "route.openshift.io", "v1,v2")
	f.Add("metrics.k8s.io", "v1beta1", "kube-system/metrics", "nodes.metrics.k8s.io", "metrics.k8s.io", "v1beta1")
	f.Add("", "", "/", "", "", ",")
	f.Fuzz(func(t *testing.T, group, version, service, crdName, crdGroup, crdVersions string) {
		api := routeapitest.LocalAPIService(group, version)
		if ns, name, ok := strings.Cut(service, "/"); ok {
			api.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: ns, Name: name}
		}
		crd := routeapitest.CRD(crdName, crdGroup, strings.Split(crdVersions, ",")...)
		facts := Facts{APIServices: []apiregistrationv1.APIService{api}, CRDs: []apiextensionsv1.CustomResourceDefinition{crd}}
		c := Classify(facts, nil)
		if !slices.Contains([]string{contract.RouteAPINative, contract.RouteAPICRD, contract.RouteAPIAbsent}, c.Reason) {
			t.Fatalf("reason %q", c.Reason)
		}
		if c.RoutesCRD != nil && c.RoutesCRD.Name != contract.RoutesCRDName {
			t.Fatalf("CRD %s reported as the routes CRD", c.RoutesCRD.Name)
		}
		if c.Reason == contract.RouteAPINative && (c.NativeAPIService == nil || c.NativeAPIService.Spec.Service == nil) {
			t.Fatal("Native without a service-backed APIService")
		}
		dups := DuplicateSurfaces(facts)
		_ = DescribeDuplicates(dups)
		_ = ServedCRDGroupVersions(facts)
	})
}
