package routeguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/openapicheck"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi/routeapitest"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func newGuard(t *testing.T, c client.Client, disabled bool) (*Guard, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(10)
	return &Guard{Client: c, Recorder: rec, Report: addonstatus.NewReport(), recheck: make(chan struct{}, 1), admissionGuardDisabled: disabled}, rec
}

func objects(apiServices []apiregistrationv1.APIService, crds []apiextensionsv1.CustomResourceDefinition) []client.Object {
	var out []client.Object
	for i := range apiServices {
		out = append(out, &apiServices[i])
	}
	for i := range crds {
		out = append(out, &crds[i])
	}
	return out
}

func TestReconcile(t *testing.T) {
	cases := map[string]struct {
		apiServices     []apiregistrationv1.APIService
		crds            []apiextensionsv1.CustomResourceDefinition
		existingGuard   bool
		disabled        bool
		wantRouteAPI    string
		wantGuardReason string
		wantCRDKept     bool
		wantGuard       bool
		wantEvent       bool
	}{
		"native: the duplicate is deleted and the guard installed": {
			apiServices: []apiregistrationv1.APIService{routeapitest.NativeAPIService()}, crds: []apiextensionsv1.CustomResourceDefinition{routeapitest.RoutesCRD()},
			wantRouteAPI: contract.RouteAPINative, wantGuardReason: contract.ReasonDuplicateRemoved, wantGuard: true, wantEvent: true,
		},
		"native without a duplicate: guard only": {
			apiServices:  []apiregistrationv1.APIService{routeapitest.NativeAPIService()},
			wantRouteAPI: contract.RouteAPINative, wantGuardReason: contract.ReasonGuardInstalled, wantGuard: true,
		},
		"native with the admission guard disabled: the duplicate still goes, our guard is removed": {
			apiServices: []apiregistrationv1.APIService{routeapitest.NativeAPIService()}, crds: []apiextensionsv1.CustomResourceDefinition{routeapitest.RoutesCRD()},
			existingGuard: true, disabled: true,
			wantRouteAPI: contract.RouteAPINative, wantGuardReason: contract.ReasonDuplicateRemoved, wantEvent: true,
		},
		"vanilla with the CRD: kept, no guard, an old guard removed": {
			apiServices: []apiregistrationv1.APIService{routeapitest.LocalAPIService("route.openshift.io", "v1")}, crds: []apiextensionsv1.CustomResourceDefinition{routeapitest.RoutesCRD()},
			existingGuard: true,
			wantRouteAPI:  contract.RouteAPICRD, wantGuardReason: contract.ReasonNotNative, wantCRDKept: true,
		},
		"absent: nothing": {
			wantRouteAPI: contract.RouteAPIAbsent, wantGuardReason: contract.ReasonNotNative,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := objects(tc.apiServices, tc.crds)
			if tc.existingGuard {
				objs = append(objs, desiredPolicy(), desiredBinding())
			}
			c := fixtures.FakeSpoke(t, objs...).Build()
			g, rec := newGuard(t, c, tc.disabled)
			_, err := g.Reconcile(context.Background(), singleton)
			require.NoError(t, err)

			routeAPI, _ := g.Report.Condition(contract.ConditionRouteAPI)
			assert.Equal(t, tc.wantRouteAPI, routeAPI.Reason)
			guard, _ := g.Report.Condition(contract.ConditionRoutesCRDGuard)
			assert.Equal(t, tc.wantGuardReason, guard.Reason, guard.Message)
			err = c.Get(context.Background(), client.ObjectKey{Name: contract.RoutesCRDName}, &apiextensionsv1.CustomResourceDefinition{})
			assert.Equal(t, tc.wantCRDKept, err == nil, "CRD kept")
			err = c.Get(context.Background(), client.ObjectKey{Name: GuardName}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})
			assert.Equal(t, tc.wantGuard, err == nil, "guard binding present")
			assert.Equal(t, tc.wantEvent, len(rec.Events) > 0, "event")
			for _, as := range tc.apiServices {
				got := &apiregistrationv1.APIService{}
				require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: as.Name}, got))
				assert.Equal(t, as.Spec, got.Spec, "APIServices are never modified")
			}
		})
	}
}

// TestReconcileFailsClosed: when the facts cannot be read, the guard reports Unknown and
// deletes nothing, even a CRD that looks like a duplicate.
func TestReconcileFailsClosed(t *testing.T) {
	for _, failing := range []string{"APIServiceList", "CustomResourceDefinitionList"} {
		t.Run(failing, func(t *testing.T) {
			var deletes int
			c := fixtures.FakeSpoke(t).
				WithObjects(objects([]apiregistrationv1.APIService{routeapitest.NativeAPIService()}, []apiextensionsv1.CustomResourceDefinition{routeapitest.RoutesCRD()})...).
				WithInterceptorFuncs(interceptor.Funcs{
					List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
						if gvk, _ := c.GroupVersionKindFor(list); gvk.Kind == failing {
							return apierrors.NewServiceUnavailable("etcd is sad")
						}
						return c.List(ctx, list, opts...)
					},
					Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
						deletes++
						return c.Delete(ctx, obj, opts...)
					},
				}).Build()
			g, rec := newGuard(t, c, false)
			_, err := g.Reconcile(context.Background(), singleton)
			require.Error(t, err, "the error is returned so the request is retried")
			routeAPI, _ := g.Report.Condition(contract.ConditionRouteAPI)
			assert.Equal(t, contract.RouteAPIUnknown, routeAPI.Reason)
			assert.Equal(t, metav1.ConditionUnknown, routeAPI.Status)
			guard, _ := g.Report.Condition(contract.ConditionRoutesCRDGuard)
			assert.Equal(t, contract.ReasonGuardUnknown, guard.Reason)
			assert.Zero(t, deletes, "nothing is deleted while the facts are unknown")
			assert.Empty(t, rec.Events)
		})
	}
}

// TestEnsureGuardWritesOnlyOnChange: a steady state makes no writes; a tampered policy
// is repaired.
func TestEnsureGuardWritesOnlyOnChange(t *testing.T) {
	var writes int
	c := fixtures.FakeSpoke(t).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes++
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	ctx := context.Background()
	state, err := ensureGuard(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, guardInstalled, state)
	assert.Equal(t, 2, writes)
	_, err = ensureGuard(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 2, writes, "no writes in a steady state")

	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: GuardName}, p))
	p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	require.NoError(t, c.Update(ctx, p))
	writes = 0
	_, err = ensureGuard(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 1, writes)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: GuardName}, p))
	assert.Equal(t, admissionregistrationv1.Fail, *p.Spec.FailurePolicy)
}

func TestReportSignalsOnlyOnChange(t *testing.T) {
	r := addonstatus.NewReport()
	setRouteAPI(r, routeapi.Classification{Reason: contract.RouteAPINative, Message: "m"})
	select {
	case <-r.Changed():
	default:
		t.Fatal("a new condition signals")
	}
	setRouteAPI(r, routeapi.Classification{Reason: contract.RouteAPINative, Message: "m"})
	select {
	case <-r.Changed():
		t.Fatal("an unchanged condition does not signal")
	default:
	}
	setRouteAPI(r, routeapi.Classification{Reason: contract.RouteAPIUnknown, Message: "x"})
	c, _ := r.Condition(contract.ConditionRouteAPI)
	assert.Equal(t, metav1.ConditionUnknown, c.Status)
}

func TestOpenAPIRecheckDelays(t *testing.T) {
	var r openAPIRecheck
	var got []time.Duration
	for _, healthy := range []bool{false, false, false, true, false} {
		got = append(got, r.after(healthy))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, OpenAPIRecheckInterval, time.Second}, got,
		"unhealthy: 1 s doubling; healthy: the interval, and the next outage starts at 1 s again")
	for range 20 {
		r.after(false)
	}
	assert.Equal(t, OpenAPIRecheckInterval, r.after(false), "a lasting outage is checked once per interval")
}

// TestRepairedOpenAPIIsReportedWithoutAnEvent: the apiserver rebuilds /openapi/v2 some time
// after the duplicate CRD goes, and no watch event says so; the guard still reports the
// repair within seconds, not at the next periodic check (CI failure of stop 56).
func TestRepairedOpenAPIIsReportedWithoutAnEvent(t *testing.T) {
	var repaired atomic.Bool
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/openapi/v2" && !repaired.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte(`{"paths":{}}`))
		}
	}))
	t.Cleanup(server.Close)
	checker, err := openapicheck.New(&rest.Config{Host: server.URL})
	require.NoError(t, err)
	g, _ := newGuard(t, fixtures.FakeSpoke(t).Build(), false)
	g.Checker = checker
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.runOpenAPIChecks(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	waitReason := func(reason string) {
		require.Eventually(t, func() bool {
			c, _ := g.Report.Condition(contract.ConditionOpenAPIV2Available)
			return c.Reason == reason
		}, 15*time.Second, 20*time.Millisecond, "OpenAPIV2Available=%s", reason)
	}
	waitReason(contract.ReasonOpenAPIV2ServiceUnavailable)
	repaired.Store(true)
	waitReason(contract.ReasonOpenAPIV2Served)
}
