package routeapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi/routeapitest"
)

func TestClassify(t *testing.T) {
	unavailable := routeapitest.NativeAPIService()
	unavailable.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse}}
	cases := map[string]struct {
		facts   Facts
		err     error
		want    string
		wantCRD bool
	}{
		"service-backed APIService":              {facts: Facts{APIServices: []apiregistrationv1.APIService{routeapitest.NativeAPIService()}}, want: contract.RouteAPINative},
		"unavailable service-backed APIService":  {facts: Facts{APIServices: []apiregistrationv1.APIService{unavailable}}, want: contract.RouteAPINative},
		"native with a duplicate CRD":            {facts: Facts{APIServices: []apiregistrationv1.APIService{routeapitest.NativeAPIService()}, CRDs: []apiextensionsv1.CustomResourceDefinition{routeapitest.RoutesCRD()}}, want: contract.RouteAPINative, wantCRD: true},
		"CRD with its local APIService":          {facts: Facts{APIServices: []apiregistrationv1.APIService{routeapitest.LocalAPIService("route.openshift.io", "v1")}, CRDs: []apiextensionsv1.CustomResourceDefinition{routeapitest.RoutesCRD()}}, want: contract.RouteAPICRD, wantCRD: true},
		"a local APIService alone is not native": {facts: Facts{APIServices: []apiregistrationv1.APIService{routeapitest.LocalAPIService("route.openshift.io", "v1")}}, want: contract.RouteAPIAbsent},
		"another version is not route v1": {facts: Facts{APIServices: []apiregistrationv1.APIService{func() apiregistrationv1.APIService {
			a := routeapitest.NativeAPIService()
			a.Spec.Version = "v2"
			return a
		}()}}, want: contract.RouteAPIAbsent},
		"nothing":                 {want: contract.RouteAPIAbsent},
		"read error fails closed": {facts: Facts{APIServices: []apiregistrationv1.APIService{routeapitest.NativeAPIService()}}, err: errors.New("boom"), want: contract.RouteAPIUnknown},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := Classify(tc.facts, tc.err)
			assert.Equal(t, tc.want, c.Reason)
			assert.Equal(t, tc.wantCRD, c.RoutesCRD != nil)
			assert.NotEmpty(t, c.Message)
		})
	}
}

func TestDuplicateSurfaces(t *testing.T) {
	metrics := apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1", Service: &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "metrics-server"}}}
	notServed := routeapitest.CRD("pods.metrics.k8s.io", "metrics.k8s.io", "v1beta1")
	notServed.Spec.Versions[0].Served = false
	f := Facts{
		APIServices: []apiregistrationv1.APIService{routeapitest.NativeAPIService(), metrics, routeapitest.LocalAPIService("argoproj.io", "v1alpha1")},
		CRDs: []apiextensionsv1.CustomResourceDefinition{
			routeapitest.RoutesCRD(), routeapitest.CRD("nodes.metrics.k8s.io", "metrics.k8s.io", "v1beta1"), notServed,
			routeapitest.CRD("applications.argoproj.io", "argoproj.io", "v1alpha1"),
		},
	}
	dups := DuplicateSurfaces(f)
	require.Len(t, dups, 2, "every CRD duplicating a service-backed APIService, not only Routes; unserved versions and local APIServices do not count")
	assert.Equal(t, "nodes.metrics.k8s.io", dups[0].CRD)
	assert.Equal(t, "kube-system/metrics-server", dups[0].Service)
	assert.Equal(t, contract.RoutesCRDName, dups[1].CRD)
	assert.Contains(t, DescribeDuplicates(dups), "CRD routes.route.openshift.io duplicates route.openshift.io/v1 served by APIService v1.route.openshift.io")
	assert.Empty(t, DuplicateSurfaces(Facts{CRDs: f.CRDs}))

	assert.Equal(t, []string{"argoproj.io/v1alpha1", "metrics.k8s.io/v1beta1", "route.openshift.io/v1"}, ServedCRDGroupVersions(f))
}
