package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/reports"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// pullHub is a real kube-apiserver with OCM's and our CRDs, Argo CD's CRDs from the
// pinned release, and a manager with the pull model that can be stopped and started.
type pullHub struct {
	*hub
	// tb is what the hub's processes live as long as: its test, or the package for the
	// shared pull hub.
	tb   testing.TB
	env  *testenv.Env
	stop func()
	// writes counts the manager's write requests (every client it builds shares its
	// config): an update that changes nothing leaves no new resourceVersion, but is a write.
	writes *writeCounter
	// applyTimeout is the manager's --pull-apply-timeout (its default when zero).
	applyTimeout time.Duration
}

// writeCounter records the write requests (not Events) a manager sends.
type writeCounter struct {
	mu    sync.Mutex
	paths []string
}

func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "/events") {
			c.mu.Lock()
			c.paths = append(c.paths, req.Method+" "+req.URL.Path)
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// since returns the writes recorded after the first n.
func (c *writeCounter) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths[n:]...)
}

func (c *writeCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.paths)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startPullHub starts the apiserver and the manager, and installs Argo CD's CRDs after
// the manager runs (the pull model must start by itself) unless argoFirst.
func startPullHub(t *testing.T, argoFirst bool) *pullHub {
	return startPullHubOn(t, argoFirst, testenv.OCMCRDPaths())
}

// startPullHubOn is startPullHub with the OCM CRDs at ocmCRDs (an older OCM's, say).
func startPullHubOn(t *testing.T, argoFirst bool, ocmCRDs []string) *pullHub {
	return startTunedPullHub(t, argoFirst, append(slices.Clone(ocmCRDs), ourCRDs()), 0)
}

// ourCRDs is the manager chart's CRD directory (GitOpsCluster, MulticlusterApplicationSetReport).
func ourCRDs() string { return filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon", "crds") }

// startTunedPullHub starts a pull hub whose apiserver serves crdPaths (OCM's and the
// hub's CRDs; Argo CD's are added) and whose manager has this apply timeout.
func startTunedPullHub(t *testing.T, argoFirst bool, crdPaths []string, applyTimeout time.Duration) *pullHub {
	return newPullHub(t, t, argoFirst, crdPaths, applyTimeout)
}

// newPullHub is startTunedPullHub for a hub whose processes live as long as tb (a test,
// or the package for the shared pull hub), its helpers failing t.
func newPullHub(tb testing.TB, t *testing.T, argoFirst bool, crdPaths []string, applyTimeout time.Duration) *pullHub {
	var argoCRDs []string
	if argoFirst {
		argoCRDs = testenv.ArgoCDCRDPaths(tb)
	}
	return newPullHubOn(tb, t, crdPaths, argoCRDs, applyTimeout)
}

// newPullHubOn is newPullHub with Argo CD's CRDs from argoCRDs (another Argo CD
// release's, say) installed before the manager starts; none: the pinned release's, after.
func newPullHubOn(tb testing.TB, t *testing.T, crdPaths, argoCRDs []string, applyTimeout time.Duration) *pullHub {
	argoFirst := len(argoCRDs) > 0
	paths := append(slices.Clone(crdPaths), argoCRDs...)
	env := testenv.Start(tb, testenv.WithCRDPaths(paths...))
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	p := &pullHub{hub: &hub{t: t, ctx: ctx, c: env.Client}, tb: tb, env: env, writes: &writeCounter{}, applyTimeout: applyTimeout}
	p.startManager(true)
	if !argoFirst {
		for _, crd := range testenv.ArgoCDCRDs(tb) {
			require.NoError(t, env.Client.Create(ctx, crd), "installing CRD %s", crd.Name)
		}
	}
	p.waitCRDsEstablished("applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io")
	p.namespace("openshift-gitops")
	p.namespace("team-b")
	p.managedCluster("cluster1", nil)
	p.managedCluster("cluster2", nil)
	p.placement("openshift-gitops", "gitops-managed", "cluster1", "cluster2")
	return p
}

func (p *pullHub) startManager(pullModel bool) {
	cfg := rest.CopyConfig(p.env.Config)
	cfg.WrapTransport = p.writes.wrap
	p.stop = runManager(p.tb, p.ctx, cfg, manager.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", AgentImage: "quay.io/gitops-addon/gitops-addon:test",
		PullModel: pullModel, PullWorkers: 4, PullApplyTimeout: p.applyTimeout, SkipControllerNameValidation: true,
	})
}

// with is p with its helpers failing t.
func (p *pullHub) with(t *testing.T) *pullHub {
	c := *p
	c.hub = p.hub.with(t)
	return &c
}

var sharedPull packageShared[*pullHub]

// sharedPullHub is the package's shared pull hub (see sharedHub): Argo CD's CRDs
// installed after the manager started, as on a hub where the GitOps operator comes
// second. Its scenarios each use a namespace and clusters of their own (startPullScenario).
func sharedPullHub(t *testing.T) *pullHub {
	t.Helper()
	return sharedPull.get(t, "shared pull hub", func(tb *packageTB) *pullHub {
		return newPullHub(tb, t, false, append(testenv.OCMCRDPaths(), ourCRDs()), 0)
	}).with(t)
}

// pullScenario is a namespace of hub Applications of its own, with two ManagedClusters of
// its own that a Placement of that namespace decides.
type pullScenario struct {
	*pullHub
	ns                 string
	cluster1, cluster2 string
}

// with is s with its helpers failing t.
func (s *pullScenario) with(t *testing.T) *pullScenario {
	c := *s
	c.pullHub = s.pullHub.with(t)
	return &c
}

// startPullScenario registers the clusters <ns>-1 and <ns>-2 and places them in ns.
func startPullScenario(p *pullHub, ns string) *pullScenario {
	p.t.Helper()
	s := &pullScenario{pullHub: p, ns: ns, cluster1: ns + "-1", cluster2: ns + "-2"}
	p.managedCluster(s.cluster1, nil)
	p.managedCluster(s.cluster2, nil)
	p.placement(ns, "gitops-managed", s.cluster1, s.cluster2)
	return s
}

// guestbook creates the seed's ApplicationSet in the scenario's namespace and its
// Application for cluster1, and waits for that Application's ManifestWork.
func (s *pullScenario) guestbook() (appSet *unstructured.Unstructured, w *workv1.ManifestWork) {
	s.t.Helper()
	appSet = &unstructured.Unstructured{}
	require.NoError(s.t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	appSet.SetNamespace(s.ns)
	require.NoError(s.t, s.c.Create(s.ctx, appSet))
	s.application(pullApp(s.guestbookApp(), s.ns, s.cluster1), appSet)
	w = s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(*workv1.ManifestWork) bool { return true }, "created")
	return appSet, w
}

func (s *pullScenario) guestbookApp() string { return "guestbook-" + s.cluster1 }

// reportGuestbookHealthy reports the guestbook Application of cluster1 synced and healthy,
// its last operation (started at 10:00) succeeded, and waits until the hub Application and
// the ApplicationSet's report show it; it returns that report.
func (s *pullScenario) reportGuestbookHealthy(w *workv1.ManifestWork) *v1alpha1.MulticlusterApplicationSetReport {
	s.t.Helper()
	s.report(w, map[string]string{
		feedback.KeyHealth: "Healthy", feedback.KeySync: "Synced", feedback.KeyRevision: "abc123",
		feedback.KeyOperationPhase: "Succeeded", feedback.KeyOperationStartedAt: "2026-11-23T10:00:00Z",
		feedback.KeyOperationMessage: "successfully synced (all tasks run)",
	}, nil)
	require.Eventually(s.t, func() bool {
		app := s.getApp(s.ns, s.guestbookApp())
		h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		r, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
		ph, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
		return h == "Healthy" && sync == "Synced" && r == "abc123" && ph == "Succeeded"
	}, timeout, poll, "hub Application shows the spoke's status")
	report := &v1alpha1.MulticlusterApplicationSetReport{}
	require.Eventually(s.t, func() bool {
		return s.c.Get(s.ctx, types.NamespacedName{Namespace: s.ns, Name: "guestbook"}, report) == nil &&
			report.Statuses.Summary.Healthy == "1"
	}, timeout, poll, "report with one healthy Application")
	return report
}

func (p *pullHub) waitCRDsEstablished(names ...string) {
	for _, name := range names {
		require.Eventually(p.t, func() bool {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if p.c.Get(p.ctx, client.ObjectKey{Name: name}, crd) != nil {
				return false
			}
			if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
				return false
			}
			// Established comes before discovery serves the kind (the apiserver updates its
			// aggregated discovery asynchronously); a Create in that gap fails with "no matches
			// for kind", so wait for the client's RESTMapper too.
			_, err := p.c.RESTMapper().RESTMapping(schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind})
			return err == nil
		}, timeout, poll, "CRD %s established and served by discovery", name)
	}
}

// application creates a hub Application from YAML, with the ApplicationSet as owner when
// appSet is not nil.
func (p *pullHub) application(doc string, appSet *unstructured.Unstructured) *unstructured.Unstructured {
	p.t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(p.t, yaml.Unmarshal([]byte(doc), &u.Object))
	if appSet != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet",
			Name: appSet.GetName(), UID: appSet.GetUID(), Controller: ptrTo(true)}})
	}
	require.NoError(p.t, p.c.Create(p.ctx, u))
	return u
}

func ptrTo[T any](v T) *T { return &v }

func (p *pullHub) getApp(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(pullnames.ApplicationGVK)
	if err := p.c.Get(p.ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
		return nil
	}
	return u
}

// waitWork waits for the ManifestWork of a hub Application in a cluster's namespace to
// satisfy cond, and returns it.
func (p *pullHub) waitWork(cluster, appNS, appName string, cond func(*workv1.ManifestWork) bool, what string) *workv1.ManifestWork {
	p.t.Helper()
	w := &workv1.ManifestWork{}
	key := types.NamespacedName{Namespace: cluster, Name: pullnames.WorkName(appNS, appName)}
	require.Eventually(p.t, func() bool {
		return p.c.Get(p.ctx, key, w) == nil && cond(w)
	}, timeout, poll, "ManifestWork %s: %s", key, what)
	return w
}

func (p *pullHub) waitNoWork(cluster, appNS, appName, what string) {
	p.t.Helper()
	key := types.NamespacedName{Namespace: cluster, Name: pullnames.WorkName(appNS, appName)}
	require.Eventually(p.t, func() bool {
		return apierrors.IsNotFound(p.c.Get(p.ctx, key, &workv1.ManifestWork{}))
	}, timeout, poll, "no ManifestWork %s: %s", key, what)
}

// assertNoWorkFor checks that no ManifestWork carries the Application once the pull model
// has reconciled it again: the caller waited for the reconcile that decided (its condition
// or Event); this wakes it once more (an annotation it reads) and waits until it ran, so
// that a create on a later reconcile is seen too.
func (p *pullHub) assertNoWorkFor(t *testing.T, appNS, appName string) {
	t.Helper()
	waitReconcileAfter(t, pullmodel.ControllerName, func() {
		require.Eventually(t, func() bool {
			app := p.getApp(appNS, appName)
			if app == nil {
				return false
			}
			annotations := app.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations["test.example.com/wake"] = time.Now().String()
			app.SetAnnotations(annotations)
			return p.c.Update(p.ctx, app) == nil
		}, timeout, poll, "waking %s/%s", appNS, appName)
	})
	p.assertNoWorkNow(t, appNS, appName)
}

// assertNoWorkNow checks that no ManifestWork carries the Application.
func (p *pullHub) assertNoWorkNow(t *testing.T, appNS, appName string) {
	t.Helper()
	list := &workv1.ManifestWorkList{}
	require.NoError(t, p.c.List(p.ctx, list))
	for _, w := range list.Items {
		assert.False(t, w.Name == pullnames.WorkName(appNS, appName), "unexpected ManifestWork %s/%s", w.Namespace, w.Name)
	}
}

// spokeApp decodes the Application a ManifestWork carries.
func spokeApp(t *testing.T, w *workv1.ManifestWork) *unstructured.Unstructured {
	t.Helper()
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(m.Raw, &u.Object))
		if u.GetKind() == "Application" {
			return u
		}
	}
	t.Fatalf("ManifestWork %s/%s carries no Application", w.Namespace, w.Name)
	return nil
}

// report sets what OCM's work agent would report for the Application of a ManifestWork.
func (p *pullHub) report(w *workv1.ManifestWork, values map[string]string, applied *metav1.Condition) {
	p.t.Helper()
	app := spokeApp(p.t, w)
	require.Eventually(p.t, func() bool {
		cur := &workv1.ManifestWork{}
		if p.c.Get(p.ctx, client.ObjectKeyFromObject(w), cur) != nil {
			return false
		}
		var fv []workv1.FeedbackValue
		for k, v := range values {
			fv = append(fv, workv1.FeedbackValue{Name: k, Value: workv1.FieldValue{Type: workv1.String, String: ptrTo(v)}})
		}
		mc := workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application",
				Resource: "applications", Namespace: app.GetNamespace(), Name: app.GetName()},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: fv},
			Conditions:      []metav1.Condition{},
		}
		if applied != nil {
			applied.LastTransitionTime = metav1.Now()
			mc.Conditions = append(mc.Conditions, *applied)
		}
		cur.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{mc}
		return p.c.Status().Update(p.ctx, cur) == nil
	}, timeout, poll, "reporting feedback on %s/%s", w.Namespace, w.Name)
}

// waitAppCondition waits for a PullModel condition whose message contains want.
func (p *pullHub) waitAppCondition(ns, name, conditionType, want string) {
	p.t.Helper()
	var last any
	require.Eventually(p.t, func() bool {
		app := p.getApp(ns, name)
		if app == nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
		last = conds
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == conditionType && strings.Contains(fmt.Sprint(m["message"]), want) {
				return true
			}
		}
		return false
	}, timeout, poll, "condition %s containing %q on %s/%s (last: %v)", conditionType, want, ns, name, &last)
}

func (p *pullHub) waitEvent(ns, name, reason string) {
	p.t.Helper()
	require.Eventually(p.t, func() bool {
		list := &eventsv1.EventList{}
		if p.c.List(p.ctx, list, client.InNamespace(ns)) != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				return true
			}
		}
		return false
	}, timeout, poll, "Event %s on %s/%s", reason, ns, name)
}

const pullAppTemplate = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
  labels: {apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true", team: blue}
  annotations: {apps.open-cluster-management.io/ocm-managed-cluster: %s, argocd.argoproj.io/skip-reconcile: "true"}
spec:
  project: default
  source: {repoURL: "https://example.com/guestbook.git", path: guestbook, targetRevision: HEAD}
  destination: {name: %s, namespace: guestbook}
  syncPolicy: {automated: {prune: true}}
`

func pullApp(name, namespace, cluster string) string {
	return fmt.Sprintf(pullAppTemplate, name, namespace, cluster, cluster)
}

// The pull model scenarios below run on the shared pull hub, each in a namespace of its
// own with clusters of its own, except the two that need a hub to themselves: the one
// counting every write the manager makes, and the one that stops the manager.

func TestPullModelCreation(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-create")
	t.Run("creation: one ManifestWork carrying the spoke's Application", func(t *testing.T) {
		s := s.with(t)
		_, w := s.guestbook()
		assert.Equal(t, "true", w.Labels[pullnames.LabelPullWork])
		assert.Equal(t, "true", w.Labels[pullnames.LabelApplicationSet])
		assert.Equal(t, s.ns, w.Annotations[pullnames.AnnotationHubAppNamespace])
		assert.Equal(t, s.guestbookApp(), w.Annotations[pullnames.AnnotationHubAppName])
		assert.Equal(t, s.ns+"/guestbook", w.Annotations[pullnames.AnnotationHostingAppSet])
		app := spokeApp(t, w)
		dest, _, _ := unstructured.NestedMap(app.Object, "spec", "destination")
		assert.Equal(t, map[string]any{"server": pullmodel.InClusterServer, "namespace": "guestbook"}, dest)
		assert.Equal(t, map[string]string{"team": "blue"}, app.GetLabels())
		assert.Empty(t, app.GetAnnotations())
		s.waitEvent(s.ns, s.guestbookApp(), v1alpha1.ReasonDestinationNameCleared)
	})
}

func TestPullModelUpdate(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-update")
	s.guestbook()
	t.Run("update: a spec change reaches the ManifestWork", func(t *testing.T) {
		s := s.with(t)
		app := s.getApp(s.ns, s.guestbookApp())
		require.NoError(t, unstructured.SetNestedField(app.Object, "v2", "spec", "source", "targetRevision"))
		require.NoError(t, s.c.Update(s.ctx, app))
		s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(w *workv1.ManifestWork) bool {
			rev, _, _ := unstructured.NestedString(spokeApp(t, w).Object, "spec", "source", "targetRevision")
			return rev == "v2"
		}, "targetRevision v2")
	})
}

func TestPullModelStatusAndReport(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-status")
	appSet, _ := s.guestbook()
	t.Run("status from feedback and the ApplicationSet report", func(t *testing.T) {
		s := s.with(t)
		w := s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(*workv1.ManifestWork) bool { return true }, "exists")
		report := s.reportGuestbookHealthy(w)
		assert.Equal(t, s.ns+".guestbook", report.Labels[pullnames.LabelHostingAppSetReport])
		require.Len(t, report.OwnerReferences, 1)
		assert.Equal(t, appSet.GetUID(), report.OwnerReferences[0].UID)
		require.Len(t, report.Statuses.ClusterConditions, 1)
		assert.Equal(t, s.cluster1, report.Statuses.ClusterConditions[0].Cluster)
		assert.Equal(t, "Synced", report.Statuses.ClusterConditions[0].SyncStatus)
	})
}

func TestPullModelTwoApplicationsOnOneCluster(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-two")
	appSet, w := s.guestbook()
	s.reportGuestbookHealthy(w)
	t.Run("two Applications of the ApplicationSet on one cluster are two report entries", func(t *testing.T) {
		s := s.with(t)
		s.application(pullApp("guestbook-extra", s.ns, s.cluster1), appSet)
		report := &v1alpha1.MulticlusterApplicationSetReport{}
		require.Eventually(t, func() bool {
			return s.c.Get(s.ctx, types.NamespacedName{Namespace: s.ns, Name: "guestbook"}, report) == nil &&
				len(report.Statuses.ClusterConditions) == 2
		}, timeout, poll, "report with two entries")
		assert.Equal(t, "1", report.Statuses.Summary.Clusters)
		assert.Equal(t, "1", report.Statuses.Summary.NotHealthy)
	})
}

func TestPullModelManualSync(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-sync")
	_, w := s.guestbook()
	s.reportGuestbookHealthy(w)
	t.Run("manual sync reaches the spoke once, stays while it runs and is cleared on the hub when it ends; asked again, it goes again", func(t *testing.T) {
		s := s.with(t)
		op := map[string]any{"sync": map[string]any{"revision": "v2"}, "initiatedBy": map[string]any{"username": "admin"}}
		request := s.askSync(op)
		// Until the spoke starts it, the request stays, on both sides: the spoke reports
		// something else (the positive control, a status the hub Application shows), its
		// earlier operation, not this request.
		s.report(s.work(), map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "OutOfSync",
			feedback.KeyOperationPhase: "Succeeded", feedback.KeyOperationStartedAt: "2026-11-23T10:00:00Z"}, nil)
		require.Eventually(t, func() bool {
			sync, _, _ := unstructured.NestedString(s.getApp(s.ns, s.guestbookApp()).Object, "status", "sync", "status")
			return sync == "OutOfSync"
		}, timeout, poll, "the hub Application shows the spoke's report that came before the operation started")
		_, still := s.getApp(s.ns, s.guestbookApp()).Object["operation"]
		assert.True(t, still, "the hub keeps .operation until the spoke starts it")
		// Started: while it runs, the spoke's Argo CD needs .operation on its Application
		// (a sync with waves goes on only while it is there), so it stays in the work.
		s.report(s.work(), map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "OutOfSync",
			feedback.KeyOperationPhase: "Running", feedback.KeyOperationStartedAt: "2026-11-23T11:00:00Z", feedback.KeyOperationRequest: request}, nil)
		require.Eventually(t, func() bool {
			phase, _, _ := unstructured.NestedString(s.getApp(s.ns, s.guestbookApp()).Object, "status", "operationState", "phase")
			return phase == "Running"
		}, timeout, poll, "the hub Application shows the operation running")
		_, still = s.getApp(s.ns, s.guestbookApp()).Object["operation"]
		assert.True(t, still, "the hub keeps .operation while the spoke runs it")
		s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(w *workv1.ManifestWork) bool {
			_, op := spokeApp(t, w).Object["operation"]
			return op
		}, "keeps the operation while the spoke runs it")
		s.reportSyncEnded(request)

		// The same operation asked again (a RollingSync asks with the same content), while
		// the spoke still reports the last one, started in the same second: a new request,
		// shipped under a new name, and cleared only once the spoke reports that one.
		again := s.askSync(op)
		assert.NotEqual(t, request, again, "a sync asked again is a new request")
		s.report(s.work(), map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "OutOfSync",
			feedback.KeyOperationPhase: "Succeeded", feedback.KeyOperationStartedAt: "2026-11-23T11:00:00Z", feedback.KeyOperationRequest: request}, nil)
		require.Eventually(t, func() bool {
			sync, _, _ := unstructured.NestedString(s.getApp(s.ns, s.guestbookApp()).Object, "status", "sync", "status")
			return sync == "OutOfSync"
		}, timeout, poll, "the hub Application shows the report of the last request")
		_, still = s.getApp(s.ns, s.guestbookApp()).Object["operation"]
		assert.True(t, still, "the hub keeps the new request while the spoke reports the last one, though it started in the same second")
		s.report(s.work(), map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "Synced",
			feedback.KeyOperationPhase: "Succeeded", feedback.KeyOperationStartedAt: "2026-11-23T11:00:00Z", feedback.KeyOperationRequest: again}, nil)
		require.Eventually(t, func() bool {
			_, has := s.getApp(s.ns, s.guestbookApp()).Object["operation"]
			return !has
		}, timeout, poll, "the new request cleared on the hub once the spoke reports it ended")
	})
}

// askSync sets a manual sync on the scenario's guestbook Application and waits until its
// ManifestWork carries it; it returns the request's name, which the shipped operation
// carries first in its info.
func (s *pullScenario) askSync(op map[string]any) string {
	s.t.Helper()
	app := s.getApp(s.ns, s.guestbookApp())
	app.Object["operation"] = op
	require.NoError(s.t, s.c.Update(s.ctx, app))
	w := s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(w *workv1.ManifestWork) bool {
		_, ok := spokeApp(s.t, w).Object["operation"]
		return ok && w.Annotations[pullnames.AnnotationOperationRequest] != ""
	}, "carries the operation")
	request := w.Annotations[pullnames.AnnotationOperationRequest]
	info, _, _ := unstructured.NestedSlice(spokeApp(s.t, w).Object, "operation", "info")
	require.NotEmpty(s.t, info)
	assert.Equal(s.t, map[string]any{"name": pullnames.InfoOperationRequest, "value": request}, info[0],
		"the shipped operation names its request first")
	return request
}

// reportSyncEnded reports the operation named request succeeded on the spoke (started at
// 11:00) and waits until the hub Application's .operation is cleared and the ManifestWork
// carries neither the operation nor its request name.
func (s *pullScenario) reportSyncEnded(request string) {
	s.t.Helper()
	s.report(s.work(), map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "Synced",
		feedback.KeyOperationPhase: "Succeeded", feedback.KeyOperationStartedAt: "2026-11-23T11:00:00Z", feedback.KeyOperationRequest: request}, nil)
	require.Eventually(s.t, func() bool {
		_, has := s.getApp(s.ns, s.guestbookApp()).Object["operation"]
		return !has
	}, timeout, poll, ".operation cleared on the hub once the spoke's operation ended")
	s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(w *workv1.ManifestWork) bool {
		_, op := spokeApp(s.t, w).Object["operation"]
		_, named := w.Annotations[pullnames.AnnotationOperationRequest]
		return !op && !named
	}, "no operation, no request name")
}

// work is the scenario's guestbook ManifestWork on cluster1, as stored now.
func (s *pullScenario) work() *workv1.ManifestWork {
	s.t.Helper()
	return s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(*workv1.ManifestWork) bool { return true }, "exists")
}

func TestPullModelTenantIsolation(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-tenant")
	// Another tenant's namespace, where no Placement selects the scenario's clusters.
	other := s.ns + "-b"
	s.namespace(other)
	t.Run("tenant isolation: a cluster no PlacementDecision of the namespace lists", func(t *testing.T) {
		s := s.with(t)
		s.application(pullApp("sneaky", other, s.cluster1), nil)
		s.waitAppCondition(other, "sneaky", v1alpha1.ConditionPullModelError, v1alpha1.ReasonClusterNotPermitted)
		s.waitEvent(other, "sneaky", v1alpha1.ReasonClusterNotPermitted)
		s.assertNoWorkFor(t, other, "sneaky")
		// Once the namespace's own Placement selects the cluster, it is delivered.
		s.placement(other, other, s.cluster1)
		s.waitWork(s.cluster1, other, "sneaky", func(*workv1.ManifestWork) bool { return true }, "delivered once placed")
		require.Eventually(t, func() bool {
			return findCondition(s.getApp(other, "sneaky"), v1alpha1.ConditionPullModelError) == nil
		}, timeout, poll, "error condition cleared")
	})
}

func TestPullModelAnnotationWithoutLabel(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-unlabelled")
	t.Run("the annotation without the pull label: warned, nothing shipped", func(t *testing.T) {
		s := s.with(t)
		doc := strings.Replace(pullApp("unlabelled", s.ns, s.cluster1), `apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true", `, "", 1)
		s.application(doc, nil)
		s.waitAppCondition(s.ns, "unlabelled", v1alpha1.ConditionPullModelWarning, v1alpha1.ReasonPullLabelMissing)
		s.waitEvent(s.ns, "unlabelled", v1alpha1.ReasonPullLabelMissing)
		s.assertNoWorkFor(t, s.ns, "unlabelled")
	})
}

func TestPullModelUnknownCluster(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-unknown")
	t.Run("an unknown cluster", func(t *testing.T) {
		s := s.with(t)
		s.application(pullApp("lost", s.ns, s.ns+"-9"), nil)
		s.waitAppCondition(s.ns, "lost", v1alpha1.ConditionPullModelError, v1alpha1.ReasonClusterNotFound)
		s.assertNoWorkFor(t, s.ns, "lost")
	})
}

// shipUnskipped ships an Application without argocd.argoproj.io/skip-reconcile to cluster2.
func (s *pullScenario) shipUnskipped() {
	s.t.Helper()
	doc := strings.Replace(pullApp("unskipped", s.ns, s.cluster2), `, argocd.argoproj.io/skip-reconcile: "true"`, "", 1)
	s.application(doc, nil)
	s.waitWork(s.cluster2, s.ns, "unskipped", func(*workv1.ManifestWork) bool { return true }, "shipped")
}

func TestPullModelSkipReconcileMissing(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-unskipped")
	t.Run("skip-reconcile missing: shipped with a warning", func(t *testing.T) {
		s := s.with(t)
		s.shipUnskipped()
		s.waitAppCondition(s.ns, "unskipped", v1alpha1.ConditionPullModelWarning, v1alpha1.ReasonSkipReconcileMissing)
	})
}

func TestPullModelSpokeCannotApply(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-unapplied")
	s.shipUnskipped()
	t.Run("the spoke cannot apply it: the condition says the addon is not enabled", func(t *testing.T) {
		s := s.with(t)
		w := s.waitWork(s.cluster2, s.ns, "unskipped", func(*workv1.ManifestWork) bool { return true }, "exists")
		s.report(w, nil, &metav1.Condition{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestFailed",
			Message: `failed to apply: no matches for kind "Application" in version "argoproj.io/v1alpha1"`})
		s.waitAppCondition(s.ns, "unskipped", v1alpha1.ConditionPullModelError, "the gitops addon is not enabled on cluster "+s.cluster2)
	})
}

func TestPullModelClusterAnnotationChanged(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-mover")
	t.Run("a changed cluster annotation moves the ManifestWork", func(t *testing.T) {
		s := s.with(t)
		s.application(pullApp("mover", s.ns, s.cluster1), nil)
		s.waitWork(s.cluster1, s.ns, "mover", func(*workv1.ManifestWork) bool { return true }, "on cluster1")
		app := s.getApp(s.ns, "mover")
		a := app.GetAnnotations()
		a[pullnames.AnnotationCluster] = s.cluster2
		app.SetAnnotations(a)
		require.NoError(t, s.c.Update(s.ctx, app))
		s.waitWork(s.cluster2, s.ns, "mover", func(*workv1.ManifestWork) bool { return true }, "on cluster2")
		s.waitNoWork(s.cluster1, s.ns, "mover", "moved away")
	})
}

func TestPullModelDeletionWithoutFinalizer(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-delete")
	t.Run("deletion without a finalizer deletes the ManifestWork", func(t *testing.T) {
		s := s.with(t)
		s.application(pullApp("short-lived", s.ns, s.cluster1), nil)
		s.waitWork(s.cluster1, s.ns, "short-lived", func(*workv1.ManifestWork) bool { return true }, "created")
		require.NoError(t, s.c.Delete(s.ctx, s.getApp(s.ns, "short-lived")))
		s.waitNoWork(s.cluster1, s.ns, "short-lived", "deleted with its Application")
	})
}

func TestPullModelDeletionWithFinalizer(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-finalized")
	t.Run("deletion with Argo CD's finalizer: ManifestWork first, then the finalizer is released", func(t *testing.T) {
		s := s.with(t)
		app := s.application(strings.Replace(pullApp("finalized", s.ns, s.cluster1), "  labels:",
			"  finalizers: [resources-finalizer.argocd.argoproj.io]\n  labels:", 1), nil)
		w := s.waitWork(s.cluster1, s.ns, "finalized", func(*workv1.ManifestWork) bool { return true }, "created")
		assert.Equal(t, []string{"resources-finalizer.argocd.argoproj.io"}, spokeApp(t, w).GetFinalizers(),
			"the spoke Application prunes, as in Argo CD")
		require.NoError(t, s.c.Delete(s.ctx, app))
		s.waitNoWork(s.cluster1, s.ns, "finalized", "deleted")
		require.Eventually(t, func() bool { return s.getApp(s.ns, "finalized") == nil }, timeout, poll,
			"the hub Application is gone once its finalizer is released")
	})
}

// TestPullModelNoWritesWhileTriggered counts every write request the manager sends, so it
// runs on a pull hub of its own, with Applications in the states the other scenarios
// leave: reported on, in an ApplicationSet's report, shipped with a warning, not shipped.
func TestPullModelNoWritesWhileTriggered(t *testing.T) {
	s := startPullScenario(startPullHub(t, false), "pull-steady")
	appSet, w := s.guestbook()
	s.reportGuestbookHealthy(w)
	s.application(pullApp("guestbook-extra", s.ns, s.cluster1), appSet)
	s.waitWork(s.cluster1, s.ns, "guestbook-extra", func(*workv1.ManifestWork) bool { return true }, "created")
	s.shipUnskipped()
	s.waitAppCondition(s.ns, "unskipped", v1alpha1.ConditionPullModelWarning, v1alpha1.ReasonSkipReconcileMissing)
	s.application(pullApp("lost", s.ns, s.ns+"-9"), nil)
	s.waitAppCondition(s.ns, "lost", v1alpha1.ConditionPullModelError, v1alpha1.ReasonClusterNotFound)
	t.Run("zero writes while reconciles are triggered", func(t *testing.T) {
		s.with(t).assertNoWritesWhileTriggering()
	})
}

// TestPullModelOrphanCleanedUpAtStart stops the manager, so it runs on a pull hub of its own.
func TestPullModelOrphanCleanedUpAtStart(t *testing.T) {
	p := startPullHub(t, false)
	s := startPullScenario(p, "pull-orphan")
	s.guestbook()
	t.Run("vanished while the manager was down: cleaned up at start", func(t *testing.T) {
		s := s.with(t)
		s.application(pullApp("orphan", s.ns, s.cluster1), nil)
		s.waitWork(s.cluster1, s.ns, "orphan", func(*workv1.ManifestWork) bool { return true }, "created")
		p.stop()
		require.NoError(t, s.c.Delete(s.ctx, s.getApp(s.ns, "orphan")))
		require.Eventually(t, func() bool { return s.getApp(s.ns, "orphan") == nil }, timeout, poll,
			"the Application is gone (it has no finalizer)")
		require.NoError(t, s.c.Get(s.ctx, types.NamespacedName{Namespace: s.cluster1, Name: pullnames.WorkName(s.ns, "orphan")}, &workv1.ManifestWork{}),
			"nothing deleted the ManifestWork while the manager was down")
		p.startManager(true)
		s.waitNoWork(s.cluster1, s.ns, "orphan", "removed at start-up")
		s.waitWork(s.cluster1, s.ns, s.guestbookApp(), func(*workv1.ManifestWork) bool { return true }, "others kept")
	})
}

// TestPullModelStartsWithArgoCDInstalledFirst: the CRDs exist before the manager starts.
func TestPullModelStartsWithArgoCDInstalledFirst(t *testing.T) {
	p := startPullHub(t, true)
	p.application(pullApp("early", "openshift-gitops", "cluster1"), nil)
	p.waitWork("cluster1", "openshift-gitops", "early", func(*workv1.ManifestWork) bool { return true }, "created")

	t.Run("kill switch: a manager with --pull-model=false ships nothing and deletes nothing", func(t *testing.T) {
		p.stop()
		p.startManager(false)
		p.application(pullApp("late", "openshift-gitops", "cluster1"), nil)
		require.NoError(t, p.c.Delete(p.ctx, p.getApp("openshift-gitops", "early")))
		// The positive control: the manager started without the pull model is up and
		// reconciling (a GitOpsCluster made now is registered), and its pull controller
		// would have seen "late" and "early" by then.
		p.applyYAML(`{apiVersion: apps.open-cluster-management.io/v1beta1, kind: GitOpsCluster, metadata: {name: kill-switch, namespace: openshift-gitops}, ` +
			`spec: {argoServer: {argoNamespace: openshift-gitops}, placementRef: {kind: Placement, name: gitops-managed}}}`)
		p.waitCondition("openshift-gitops", "kill-switch", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		p.assertNoWorkNow(t, "openshift-gitops", "late")
		require.NoError(t, p.c.Get(p.ctx, types.NamespacedName{Namespace: "cluster1", Name: pullnames.WorkName("openshift-gitops", "early")}, &workv1.ManifestWork{}),
			"the existing ManifestWork is left alone")
	})
}

func findCondition(app *unstructured.Unstructured, conditionType string) map[string]any {
	if app == nil {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == conditionType {
			return m
		}
	}
	return nil
}

// assertNoWritesWhileTriggering touches every pull ManifestWork (a foreign annotation:
// each touch makes the manager reconcile its Application and its report) in four rounds,
// each waited for until both controllers reconciled after it, and checks that the manager
// sent no write request at all (an update that changes nothing leaves the resourceVersion
// alone, so that is counted on the wire), and that the Applications and reports kept
// their resourceVersions.
func (p *pullHub) assertNoWritesWhileTriggering() {
	t := p.t
	p.writes.waitQuiet(t, 2*time.Second) // what earlier steps set off has settled
	appsBefore := p.versions(func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(pullnames.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
		return l
	}())
	reportsBefore := p.versions(&v1alpha1.MulticlusterApplicationSetReportList{})
	require.NotEmpty(t, appsBefore)
	require.NotEmpty(t, reportsBefore)
	touched := map[string]string{}
	writesBefore := p.writes.count()
	for i := range 4 {
		waitControllerIdle(t, reports.ControllerName)
		reportsReconciled := reconcileTotal(t, reports.ControllerName)
		waitReconcileAfter(t, pullmodel.ControllerName, func() {
			works := &workv1.ManifestWorkList{}
			require.NoError(t, p.c.List(p.ctx, works, client.MatchingLabels{pullnames.LabelPullWork: "true"}))
			for j := range works.Items {
				w := &works.Items[j]
				patch := client.MergeFrom(w.DeepCopy())
				if w.Annotations == nil {
					w.Annotations = map[string]string{}
				}
				w.Annotations["test.example.com/touch"] = fmt.Sprint(i)
				require.NoError(t, p.c.Patch(p.ctx, w, patch))
				touched[w.Namespace+"/"+w.Name] = w.ResourceVersion
			}
		})
		require.Eventually(t, func() bool { return reconcileTotal(t, reports.ControllerName) > reportsReconciled }, timeout, poll,
			"the report controller reconciles after round %d", i)
		waitControllerIdle(t, reports.ControllerName)
	}
	assert.Equal(t, appsBefore, p.versions(func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(pullnames.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
		return l
	}()), "the manager wrote to an Application")
	assert.Equal(t, reportsBefore, p.versions(&v1alpha1.MulticlusterApplicationSetReportList{}), "the manager wrote to a report")
	assert.Empty(t, p.writes.since(writesBefore), "the manager's write requests while nothing changed")
	worksAfter := p.versions(&workv1.ManifestWorkList{})
	for k, v := range touched {
		assert.Equal(t, v, worksAfter[k], "the manager wrote to ManifestWork %s", k)
	}
}

func (p *pullHub) versions(list client.ObjectList) map[string]string {
	p.t.Helper()
	require.NoError(p.t, p.c.List(p.ctx, list))
	items, err := apimeta.ExtractList(list)
	require.NoError(p.t, err)
	out := map[string]string{}
	for _, item := range items {
		o, err := apimeta.Accessor(item)
		require.NoError(p.t, err)
		out[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out
}
