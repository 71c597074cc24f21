package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/doctor"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeguard"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/schemes"
	"github.com/gitops-addon/gitops-addon/test/fakeroute"
	"github.com/gitops-addon/gitops-addon/test/pki"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

var routesGVR = schema.GroupVersionResource{Group: "route.openshift.io", Version: "v1", Resource: "routes"}

// spoke is a real kube-apiserver with aggregation configured, the stand-in
// openshift-apiserver, and (in turns) the Route guard.
type spoke struct {
	t      *testing.T
	ctx    context.Context
	env    *testenv.Env
	c      client.Client
	dyn    dynamic.Interface
	raw    *http.Client
	fake   *fakeroute.Server
	report *addonstatus.Report
	stop   context.CancelFunc
	done   chan error
}

// frontProxyArgs writes a front-proxy CA and client certificate and returns the
// kube-apiserver flags that make the aggregator proxy to the stand-in server.
func frontProxyArgs(t *testing.T) []testenv.Option {
	ca, err := pki.NewCA("front-proxy-ca")
	require.NoError(t, err)
	client, err := ca.Client("front-proxy-client")
	require.NoError(t, err)
	dir := t.TempDir()
	caFile, _, err := ca.Write(dir, "front-proxy-ca")
	require.NoError(t, err)
	certFile, keyFile, err := client.Write(dir, "front-proxy-client")
	require.NoError(t, err)
	return []testenv.Option{
		testenv.WithAPIServerArg("enable-aggregator-routing", "false"),
		testenv.WithAPIServerArg("requestheader-client-ca-file", caFile),
		testenv.WithAPIServerArg("proxy-client-cert-file", certFile),
		testenv.WithAPIServerArg("proxy-client-key-file", keyFile),
		testenv.WithAPIServerArg("requestheader-allowed-names", "front-proxy-client"),
		testenv.WithAPIServerArg("requestheader-extra-headers-prefix", "X-Remote-Extra-"),
		testenv.WithAPIServerArg("requestheader-group-headers", "X-Remote-Group"),
		testenv.WithAPIServerArg("requestheader-username-headers", "X-Remote-User"),
	}
}

func startSpoke(t *testing.T) *spoke {
	opts := append(frontProxyArgs(t), testenv.WithCRDPaths(testenv.OCMCRDPaths()...), testenv.WithSchemeAdder(apiregistrationv1.AddToScheme))
	env := testenv.Start(t, opts...)
	fake, err := fakeroute.Start()
	require.NoError(t, err)
	t.Cleanup(fake.Stop)
	dyn, err := dynamic.NewForConfig(env.Config)
	require.NoError(t, err)
	raw, err := rest.HTTPClientFor(env.Config)
	require.NoError(t, err)
	return &spoke{t: t, ctx: context.Background(), env: env, c: env.Client, dyn: dyn, raw: raw, fake: fake}
}

// registerNativeRouteAPI registers the stand-in as openshift-apiserver.
func (s *spoke) registerNativeRouteAPI() {
	s.t.Helper()
	require.NoError(s.t, s.fake.Register(s.ctx, s.c))
}

func (s *spoke) waitAPIServiceAvailable(want bool) {
	s.t.Helper()
	require.NoError(s.t, fakeroute.WaitAvailable(s.ctx, s.c, want, 60*time.Second))
}

// startGuard runs the Route guard as the agent does, and its publisher to the hub (the
// same apiserver plays the hub here).
func (s *spoke) startGuard(o routeguard.Options) {
	s.t.Helper()
	// The test starts the guard several times in one process.
	mgr := newSpokeManager(s.t, s.env.Config, routeguard.CacheByObject())
	s.report = addonstatus.NewReport()
	o.Report = s.report
	_, err := routeguard.SetupWithManager(mgr, o)
	require.NoError(s.t, err)
	hubScheme, err := schemes.Hub()
	require.NoError(s.t, err)
	hub, err := client.New(s.env.Config, client.Options{Scheme: hubScheme})
	require.NoError(s.t, err)
	require.NoError(s.t, mgr.Add(&addonstatus.Publisher{Hub: hub, ClusterName: "spoke1", AddonName: contract.AddonName, Report: s.report}))
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan error, 1)
	go func() { s.done <- mgr.Start(ctx) }()
	s.t.Cleanup(s.stopGuard)
}

func (s *spoke) stopGuard() {
	if s.stop == nil {
		return
	}
	s.stop()
	select {
	case err := <-s.done:
		assert.NoError(s.t, err)
	case <-time.After(30 * time.Second):
		s.t.Error("the guard did not stop")
	}
	s.stop = nil
}

// waitReport waits for the agent's report to have a condition reason; t is the calling
// (sub)test, so that a failure stops that test and not its parent.
func (s *spoke) waitReport(t testing.TB, condType, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	require.Eventually(t, func() bool {
		c, ok := s.report.Condition(condType)
		got = c
		return ok && c.Reason == reason
	}, 30*time.Second, 100*time.Millisecond, "report %s=%s", condType, reason)
	return got
}

func routesCRD() *apiextensionsv1.CustomResourceDefinition {
	return crd("route.openshift.io", "Route", "routes")
}

func crd(group, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTrue(),
				}},
			}},
		},
	}
}

func ptrTrue() *bool { return ptr.To(true) }

func (s *spoke) crdExists(name string) bool {
	err := s.c.Get(s.ctx, types.NamespacedName{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
	return err == nil
}

// crdEstablished tells whether a CRD is Established: only then does a starting
// kube-apiserver put its paths into the first /openapi/v2 it builds.
func (s *spoke) crdEstablished(name string) bool {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if s.c.Get(s.ctx, types.NamespacedName{Name: name}, crd) != nil {
		return false
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// routesServedByAggregatedServer lists Routes and tells whether the stand-in answered.
func (s *spoke) routesServedByAggregatedServer() bool {
	list, err := s.dyn.Resource(routesGVR).Namespace("default").List(s.ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) == 0 {
		return false
	}
	for _, item := range list.Items {
		if item.GetAnnotations()[fakeroute.ServedByAnnotation] != "aggregated" {
			return false
		}
	}
	return true
}

// watchRoutes lists Routes every 100ms until stopped and counts lists not answered by
// the aggregated server.
func (s *spoke) watchRoutes() (stop func() (lists, misses int64)) {
	stop, _ = s.countRouteLists()
	return stop
}

// countRouteLists is watchRoutes, with a count of the lists made so far.
func (s *spoke) countRouteLists() (stop func() (lists, misses int64), listed func() int64) {
	var n, miss atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			n.Add(1)
			if !s.routesServedByAggregatedServer() {
				miss.Add(1)
			}
		}
	}()
	return func() (int64, int64) { close(done); wg.Wait(); return n.Load(), miss.Load() }, n.Load
}

func (s *spoke) openAPIV2() (int, []byte) {
	s.t.Helper()
	resp, err := s.raw.Get(strings.TrimSuffix(s.env.Config.Host, "/") + "/openapi/v2")
	require.NoError(s.t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, body
}

// restartUntilOpenAPIV2Fails restarts kube-apiserver, with the duplicate Routes CRD in
// place, until /openapi/v2 answers 503, and returns that answer's body. A restart
// reproduces the trap only when the first merge of /openapi/v2 sees both the aggregated
// Route spec and the CRD's: a merge made earlier succeeds and is served from then on.
// The caller makes sure the CRD is Established (a starting kube-apiserver leaves an
// unestablished CRD out of its initial spec and adds it later), and nothing fetches
// /openapi/v2 here before the restarted aggregator has downloaded the stand-in's
// document. Should a first merge still come too early (two full `make test` runs
// failed at this step before the Established wait was added), the restart is logged
// and retried.
func (s *spoke) restartUntilOpenAPIV2Fails(t *testing.T, attempts int) []byte {
	t.Helper()
	for attempt := 1; attempt <= attempts; attempt++ {
		downloads := s.fake.AggregatorV2Downloads()
		require.NoError(t, s.env.RestartAPIServer())
		require.Eventually(t, func() bool { return s.fake.AggregatorV2Downloads() > downloads }, 60*time.Second, 100*time.Millisecond,
			"the restarted aggregator downloads the stand-in's /openapi/v2")
		var status int
		var body []byte
		failed := assert.Eventually(&quietT{}, func() bool {
			status, body = s.openAPIV2()
			return status == http.StatusServiceUnavailable
		}, 10*time.Second, 200*time.Millisecond)
		if failed {
			t.Logf("restart %d: /openapi/v2 answers 503", attempt)
			return body
		}
		t.Logf("restart %d: /openapi/v2 answers %d with the Route paths %s: its first merge came before every spec was loaded",
			attempt, status, map[bool]string{true: "present", false: "absent"}[bytes.Contains(body, []byte("/apis/route.openshift.io/v1/routes"))])
	}
	require.Failf(t, "the trap did not reproduce", "/openapi/v2 never answered 503 with the duplicate Routes CRD present, in %d kube-apiserver restarts", attempts)
	return nil
}

// quietT lets assert.Eventually report a timeout as false without failing the test.
type quietT struct{}

func (quietT) Errorf(string, ...any) {}

func (s *spoke) inOpenAPIV3(groupVersion string) bool {
	resp, err := s.raw.Get(strings.TrimSuffix(s.env.Config.Host, "/") + "/openapi/v3")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return bytes.Contains(body, []byte(`"apis/`+groupVersion+`"`))
}

func (s *spoke) doctor() (int, string) {
	var out bytes.Buffer
	code := doctor.Run(s.ctx, s.env.Config, &out)
	return code, out.String()
}

func (s *spoke) guardExists() bool {
	err := s.c.Get(s.ctx, types.NamespacedName{Name: routeguard.GuardName}, &admissionregistrationv1.ValidatingAdmissionPolicy{})
	return err == nil
}

// TestRouteGuardOnARealAggregatedRouteAPI runs the guard against a kube-apiserver that
// serves route.openshift.io/v1 through a real aggregated API server.
func TestRouteGuardOnARealAggregatedRouteAPI(t *testing.T) {
	s := startSpoke(t)
	s.fake.AddRoute("default", "frontend")
	s.registerNativeRouteAPI()
	require.True(t, s.routesServedByAggregatedServer(), "Routes are served by the aggregated server")
	require.NoError(t, s.c.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spoke1"}}))
	require.NoError(t, s.c.Create(s.ctx, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "spoke1", Name: contract.AddonName}}))

	// First without the admission guard, so that a duplicate can appear while the agent
	// runs, as it does where the apiserver cannot serve ValidatingAdmissionPolicy.
	s.startGuard(routeguard.Options{DisableAdmissionGuard: true})

	t.Run("classifies Native; the admission guard is off on request", func(t *testing.T) {
		s.waitReport(t, contract.ConditionRouteAPI, contract.RouteAPINative)
		c := s.waitReport(t, contract.ConditionRoutesCRDGuard, contract.ReasonGuardDisabled)
		assert.Equal(t, metav1.ConditionFalse, c.Status)
		s.waitReport(t, contract.ConditionDuplicateAPISurfaces, contract.ReasonNoDuplicates)
		s.waitReport(t, contract.ConditionOpenAPIV2Available, contract.ReasonOpenAPIV2Served)
		assert.False(t, s.guardExists())
	})

	t.Run("a duplicate CRD created while the agent runs is gone within 5 seconds and Routes keep working", func(t *testing.T) {
		stopWatching, listed := s.countRouteLists()
		require.NoError(t, s.c.Create(s.ctx, routesCRD()))
		created := time.Now()
		require.Eventually(t, func() bool { return !s.crdExists(contract.RoutesCRDName) }, 5*time.Second, 50*time.Millisecond,
			"the duplicate CRD is deleted within 5 s")
		t.Logf("duplicate CRD removed %v after it was created", time.Since(created).Round(10*time.Millisecond))
		// Routes keep working after the removal too: ten more lists are made (and checked).
		afterRemoval := listed()
		require.Eventually(t, func() bool { return listed() >= afterRemoval+10 }, 30*time.Second, 50*time.Millisecond,
			"Routes are listed after the duplicate CRD is gone")
		lists, misses := stopWatching()
		assert.Positive(t, lists)
		assert.Zero(t, misses, "every Route list was answered by the aggregated server")
		c := s.waitReport(t, contract.ConditionRoutesCRDGuard, contract.ReasonDuplicateRemoved)
		assert.Contains(t, c.Message, "Deleted a duplicate")
		a := &apiregistrationv1.APIService{}
		require.NoError(t, s.c.Get(s.ctx, types.NamespacedName{Name: "v1.route.openshift.io"}, a))
		assert.NotNil(t, a.Spec.Service, "the aggregated APIService is never modified")
		require.Eventually(t, func() bool {
			events := &eventsv1.EventList{}
			require.NoError(t, s.c.List(s.ctx, events))
			for _, e := range events.Items {
				if e.Reason == "DuplicateRoutesCRDRemoved" && e.Regarding.Name == "v1.route.openshift.io" {
					return true
				}
			}
			return false
		}, 10*time.Second, 200*time.Millisecond, "an Event on the spoke says what was deleted")
	})

	t.Run("conditions reach the hub", func(t *testing.T) {
		var got []metav1.Condition
		require.Eventually(t, func() bool {
			mca := &addonv1beta1.ManagedClusterAddOn{}
			require.NoError(t, s.c.Get(s.ctx, types.NamespacedName{Namespace: "spoke1", Name: contract.AddonName}, mca))
			got = mca.Status.Conditions
			for _, want := range s.report.Conditions() {
				c := meta.FindStatusCondition(got, want.Type)
				if c == nil || c.Status != want.Status || c.Reason != want.Reason || c.Message != want.Message {
					return false
				}
			}
			return len(got) == 4
		}, 30*time.Second, 200*time.Millisecond, "conditions on the hub: %+v", &got)
		assert.Equal(t, contract.RouteAPINative, meta.FindStatusCondition(got, contract.ConditionRouteAPI).Reason)
		assert.Equal(t, contract.ReasonDuplicateRemoved, meta.FindStatusCondition(got, contract.ConditionRoutesCRDGuard).Reason)
	})

	t.Run("with the admission guard, creating the duplicate is rejected with its message", func(t *testing.T) {
		s.stopGuard()
		s.startGuard(routeguard.Options{})
		s.waitReport(t, contract.ConditionRoutesCRDGuard, contract.ReasonGuardInstalled)
		var err error
		require.Eventually(t, func() bool {
			err = s.c.Create(s.ctx, routesCRD())
			return err != nil && strings.Contains(err.Error(), "already served natively by openshift-apiserver")
		}, 30*time.Second, 200*time.Millisecond, "the guard rejects the duplicate CRD with its message")
		t.Logf("rejected: %v", err)
		// A create that slipped in before the policy took effect is removed by the agent.
		require.Eventually(t, func() bool { return !s.crdExists(contract.RoutesCRDName) }, 5*time.Second, 50*time.Millisecond)
	})

	t.Run("an unavailable openshift-apiserver is still Native", func(t *testing.T) {
		s.fake.Stop()
		s.waitAPIServiceAvailable(false)
		// The agent's report says it saw the outage, and that it is still Native.
		var c metav1.Condition
		require.Eventually(t, func() bool {
			var ok bool
			c, ok = s.report.Condition(contract.ConditionRouteAPI)
			return ok && strings.Contains(c.Message, "not Available at the moment")
		}, 30*time.Second, 100*time.Millisecond, "the agent reports the unavailable APIService")
		assert.Equal(t, contract.RouteAPINative, c.Reason, c.Message)
		assert.True(t, s.guardExists(), "the guard stays")
		require.NoError(t, s.fake.Restart())
		s.waitAPIServiceAvailable(true)
		require.Eventually(t, func() bool {
			c, ok := s.report.Condition(contract.ConditionRouteAPI)
			return ok && c.Reason == contract.RouteAPINative && !strings.Contains(c.Message, "not Available")
		}, 30*time.Second, 100*time.Millisecond, "and that it is back")
	})

	t.Run("doctor: healthy", func(t *testing.T) {
		code, out := s.doctor()
		assert.Equal(t, doctor.Healthy, code, out)
		assert.Contains(t, out, "Route API:              Native")
	})

	t.Run("doctor: a frozen /openapi/v2 and the duplicate", func(t *testing.T) {
		s.stopGuard()
		require.NoError(t, s.c.Delete(s.ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: routeguard.GuardName}}))
		code, _ := s.openAPIV2()
		require.Equal(t, http.StatusOK, code, "the merged document is built before the duplicate exists")
		require.Eventually(t, func() bool { return s.c.Create(s.ctx, routesCRD()) == nil }, 30*time.Second, 100*time.Millisecond)
		require.NoError(t, s.c.Create(s.ctx, crd("canary.gitops-addon.test", "Canary", "canaries")))
		require.Eventually(t, func() bool { return s.inOpenAPIV3("canary.gitops-addon.test/v1") }, 30*time.Second, 200*time.Millisecond)
		var out string
		require.Eventually(t, func() bool {
			code, out = s.doctor()
			return code == doctor.ProblemFound && strings.Contains(out, "frozen")
		}, 30*time.Second, 500*time.Millisecond, "doctor reports the frozen document")
		assert.Contains(t, out, "canary.gitops-addon.test/v1")
		assert.Contains(t, out, "kubectl delete crd routes.route.openshift.io")
		status, body := s.openAPIV2()
		assert.Equal(t, http.StatusOK, status, "a running apiserver keeps answering 200 with the frozen document")
		assert.NotContains(t, string(body), "canary.gitops-addon.test", "the canary is missing from v2")
	})

	t.Run("the agent started on a broken cluster repairs /openapi/v2", func(t *testing.T) {
		s.startGuard(routeguard.Options{})
		require.Eventually(t, func() bool { return !s.crdExists(contract.RoutesCRDName) }, 5*time.Second, 50*time.Millisecond,
			"the duplicate CRD is deleted within 5 s of the agent starting")
		require.Eventually(t, func() bool {
			status, body := s.openAPIV2()
			return status == http.StatusOK && bytes.Contains(body, []byte("/apis/canary.gitops-addon.test/v1/")) &&
				bytes.Contains(body, []byte("/apis/route.openshift.io/v1/namespaces/{namespace}/routes"))
		}, 30*time.Second, 250*time.Millisecond, "v2 has the canary and the aggregated Route paths again")
		s.waitReport(t, contract.ConditionOpenAPIV2Available, contract.ReasonOpenAPIV2Served)
		code, out := s.doctor()
		assert.Equal(t, doctor.Healthy, code, out)
		assert.True(t, s.routesServedByAggregatedServer())
	})

	t.Run("the trap: a duplicate across an apiserver restart answers 503; the agent repairs it", func(t *testing.T) {
		s.stopGuard()
		require.NoError(t, client.IgnoreNotFound(s.c.Delete(s.ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: routeguard.GuardName}})))
		require.Eventually(t, func() bool { return s.c.Create(s.ctx, routesCRD()) == nil }, 30*time.Second, 100*time.Millisecond)
		require.Eventually(t, func() bool { return s.crdEstablished(contract.RoutesCRDName) }, 30*time.Second, 100*time.Millisecond,
			"the duplicate is Established before the restart")
		body := s.restartUntilOpenAPIV2Fails(t, 3)
		assert.Empty(t, body, "the 503 has an empty body")
		code, out := s.doctor()
		assert.Equal(t, doctor.ProblemFound, code, out)
		assert.Contains(t, out, "503")
		assert.Contains(t, out, "kubectl delete crd routes.route.openshift.io")

		stopWatching := s.watchRoutes()
		s.startGuard(routeguard.Options{})
		started := time.Now()
		require.NoError(t, s.c.Create(s.ctx, crd("canary2.gitops-addon.test", "Canary", "canaries")))
		require.Eventually(t, func() bool { return !s.crdExists(contract.RoutesCRDName) }, 5*time.Second, 50*time.Millisecond,
			"the agent deletes the duplicate within 5 s of starting")
		t.Logf("duplicate CRD removed %v after the agent started", time.Since(started).Round(10*time.Millisecond))
		require.Eventually(t, func() bool {
			status, body := s.openAPIV2()
			return status == http.StatusOK && bytes.Contains(body, []byte("/apis/canary2.gitops-addon.test/v1/")) &&
				bytes.Contains(body, []byte("/apis/route.openshift.io/v1/namespaces/{namespace}/routes"))
		}, 30*time.Second, 250*time.Millisecond, "v2 is 200 with the aggregated Route paths and the canary created meanwhile")
		t.Logf("/openapi/v2 healthy %v after the agent started", time.Since(started).Round(10*time.Millisecond))
		lists, misses := stopWatching()
		assert.Positive(t, lists)
		assert.Zero(t, misses, "every Route list was answered by the aggregated server")
		s.waitReport(t, contract.ConditionOpenAPIV2Available, contract.ReasonOpenAPIV2Served)
		code, out = s.doctor()
		assert.Equal(t, doctor.Healthy, code, out)
	})

	t.Run("vanilla: a Routes CRD alone is CRD, kept, and unguarded", func(t *testing.T) {
		s.stopGuard()
		require.NoError(t, s.c.Delete(s.ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.route.openshift.io"}}))
		require.Eventually(t, func() bool {
			err := s.c.Get(s.ctx, types.NamespacedName{Name: "v1.route.openshift.io"}, &apiregistrationv1.APIService{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second, 100*time.Millisecond)
		s.startGuard(routeguard.Options{})
		s.waitReport(t, contract.ConditionRouteAPI, contract.RouteAPIAbsent)
		require.Eventually(t, func() bool { return !s.guardExists() }, 10*time.Second, 100*time.Millisecond, "our guard is removed where the CRD is legitimate")
		require.Eventually(t, func() bool { return s.c.Create(s.ctx, routesCRD()) == nil }, 30*time.Second, 100*time.Millisecond)
		s.waitReport(t, contract.ConditionRouteAPI, contract.RouteAPICRD)
		s.waitReport(t, contract.ConditionRoutesCRDGuard, contract.ReasonNotNative)
		// The positive control: a change to the CRD (another tool's annotation) makes the
		// guard reconcile, and it is waited for.
		waitReconcileAfter(t, "routeguard", func() {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			require.NoError(t, s.c.Get(s.ctx, types.NamespacedName{Name: contract.RoutesCRDName}, crd))
			metav1.SetMetaDataAnnotation(&crd.ObjectMeta, "example.com/seen", "true")
			require.NoError(t, s.c.Update(s.ctx, crd))
		})
		assert.True(t, s.crdExists(contract.RoutesCRDName), "nothing is deleted on a cluster without a native Route API")
		code, out := s.doctor()
		assert.Equal(t, doctor.Healthy, code, out)
		assert.Contains(t, out, "Route API:              CRD")
	})
}
