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
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// pullHub is a real kube-apiserver with OCM's and our CRDs, Argo CD's CRDs from the
// pinned release, and a manager with the pull model that can be stopped and started.
type pullHub struct {
	*hub
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
	paths := slices.Clone(crdPaths)
	if argoFirst {
		paths = append(paths, testenv.ArgoCDCRDPaths(t)...)
	}
	env := testenv.Start(t, testenv.WithCRDPaths(paths...))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &pullHub{hub: &hub{t: t, ctx: ctx, c: env.Client}, env: env, writes: &writeCounter{}, applyTimeout: applyTimeout}
	p.startManager(true)
	if !argoFirst {
		for _, crd := range testenv.ArgoCDCRDs(t) {
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
	p.stop = runManager(p.t, p.ctx, cfg, manager.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", AgentImage: "quay.io/gitops-addon/gitops-addon:test",
		PullModel: pullModel, PullWorkers: 4, PullApplyTimeout: p.applyTimeout, SkipControllerNameValidation: true,
	})
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
	u.SetGroupVersionKind(pullmodel.ApplicationGVK)
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
	key := types.NamespacedName{Namespace: cluster, Name: pullmodel.WorkName(appNS, appName)}
	require.Eventually(p.t, func() bool {
		return p.c.Get(p.ctx, key, w) == nil && cond(w)
	}, timeout, poll, "ManifestWork %s: %s", key, what)
	return w
}

func (p *pullHub) waitNoWork(cluster, appNS, appName, what string) {
	p.t.Helper()
	key := types.NamespacedName{Namespace: cluster, Name: pullmodel.WorkName(appNS, appName)}
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
		assert.False(t, w.Name == pullmodel.WorkName(appNS, appName), "unexpected ManifestWork %s/%s", w.Namespace, w.Name)
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

// TestPullModel runs the pull model on a real kube-apiserver with Argo CD's own CRDs,
// installed after the manager started.
func TestPullModel(t *testing.T) {
	p := startPullHub(t, false)
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	require.NoError(t, p.c.Create(p.ctx, appSet))

	t.Run("creation: one ManifestWork carrying the spoke's Application", func(t *testing.T) {
		p.application(pullApp("guestbook-cluster1", "openshift-gitops", "cluster1"), appSet)
		w := p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(*workv1.ManifestWork) bool { return true }, "created")
		assert.Equal(t, "true", w.Labels[pullmodel.LabelPullWork])
		assert.Equal(t, "true", w.Labels[pullmodel.LabelApplicationSet])
		assert.Equal(t, "openshift-gitops", w.Annotations[pullmodel.AnnotationHubAppNamespace])
		assert.Equal(t, "guestbook-cluster1", w.Annotations[pullmodel.AnnotationHubAppName])
		assert.Equal(t, "openshift-gitops/guestbook", w.Annotations[pullmodel.AnnotationHostingAppSet])
		app := spokeApp(t, w)
		dest, _, _ := unstructured.NestedMap(app.Object, "spec", "destination")
		assert.Equal(t, map[string]any{"server": pullmodel.InClusterServer, "namespace": "guestbook"}, dest)
		assert.Equal(t, map[string]string{"team": "blue"}, app.GetLabels())
		assert.Empty(t, app.GetAnnotations())
		p.waitEvent("openshift-gitops", "guestbook-cluster1", pullmodel.ReasonDestinationRewritten)
	})

	t.Run("update: a spec change reaches the ManifestWork", func(t *testing.T) {
		app := p.getApp("openshift-gitops", "guestbook-cluster1")
		require.NoError(t, unstructured.SetNestedField(app.Object, "v2", "spec", "source", "targetRevision"))
		require.NoError(t, p.c.Update(p.ctx, app))
		p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(w *workv1.ManifestWork) bool {
			rev, _, _ := unstructured.NestedString(spokeApp(t, w).Object, "spec", "source", "targetRevision")
			return rev == "v2"
		}, "targetRevision v2")
	})

	t.Run("status from feedback and the ApplicationSet report", func(t *testing.T) {
		w := p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(*workv1.ManifestWork) bool { return true }, "exists")
		p.report(w, map[string]string{
			pullmodel.FeedbackHealth: "Healthy", pullmodel.FeedbackSync: "Synced", pullmodel.FeedbackRevision: "abc123",
			pullmodel.FeedbackOperationPhase: "Succeeded", pullmodel.FeedbackOperationStartedAt: "2026-11-23T10:00:00Z",
			pullmodel.FeedbackOperationMessage: "successfully synced (all tasks run)",
		}, nil)
		require.Eventually(t, func() bool {
			app := p.getApp("openshift-gitops", "guestbook-cluster1")
			h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
			s, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
			r, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
			ph, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
			return h == "Healthy" && s == "Synced" && r == "abc123" && ph == "Succeeded"
		}, timeout, poll, "hub Application shows the spoke's status")
		report := &v1alpha1.MulticlusterApplicationSetReport{}
		require.Eventually(t, func() bool {
			return p.c.Get(p.ctx, types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}, report) == nil &&
				report.Statuses.Summary.Healthy == "1"
		}, timeout, poll, "report with one healthy Application")
		assert.Equal(t, "openshift-gitops.guestbook", report.Labels[pullmodel.LabelHostingAppSetReport])
		require.Len(t, report.OwnerReferences, 1)
		assert.Equal(t, appSet.GetUID(), report.OwnerReferences[0].UID)
		require.Len(t, report.Statuses.ClusterConditions, 1)
		assert.Equal(t, "cluster1", report.Statuses.ClusterConditions[0].Cluster)
		assert.Equal(t, "Synced", report.Statuses.ClusterConditions[0].SyncStatus)
	})

	t.Run("two Applications of the ApplicationSet on one cluster are two report entries", func(t *testing.T) {
		p.application(pullApp("guestbook-extra", "openshift-gitops", "cluster1"), appSet)
		report := &v1alpha1.MulticlusterApplicationSetReport{}
		require.Eventually(t, func() bool {
			return p.c.Get(p.ctx, types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}, report) == nil &&
				len(report.Statuses.ClusterConditions) == 2
		}, timeout, poll, "report with two entries")
		assert.Equal(t, "1", report.Statuses.Summary.Clusters)
		assert.Equal(t, "1", report.Statuses.Summary.NotHealthy)
	})

	t.Run("manual sync reaches the spoke once and is cleared on the hub", func(t *testing.T) {
		app := p.getApp("openshift-gitops", "guestbook-cluster1")
		app.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "v2"}, "initiatedBy": map[string]any{"username": "admin"}}
		require.NoError(t, p.c.Update(p.ctx, app))
		w := p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(w *workv1.ManifestWork) bool {
			_, ok := spokeApp(t, w).Object["operation"]
			return ok
		}, "carries the operation")
		assert.Equal(t, "2026-11-23T10:00:00Z", w.Annotations[pullmodel.AnnotationOperationBaseline],
			"the baseline is the operation start reported before the request")
		// Until the spoke starts it, the request stays, on both sides: the spoke reports
		// something else (the positive control, a status the hub Application shows), not
		// the operation started.
		p.report(w, map[string]string{pullmodel.FeedbackHealth: "Healthy", pullmodel.FeedbackSync: "OutOfSync",
			pullmodel.FeedbackOperationPhase: "Succeeded", pullmodel.FeedbackOperationStartedAt: "2026-11-23T10:00:00Z"}, nil)
		require.Eventually(t, func() bool {
			s, _, _ := unstructured.NestedString(p.getApp("openshift-gitops", "guestbook-cluster1").Object, "status", "sync", "status")
			return s == "OutOfSync"
		}, timeout, poll, "the hub Application shows the spoke's report that came before the operation started")
		_, still := p.getApp("openshift-gitops", "guestbook-cluster1").Object["operation"]
		assert.True(t, still, "the hub keeps .operation until the spoke starts it")
		p.report(w, map[string]string{pullmodel.FeedbackHealth: "Healthy", pullmodel.FeedbackSync: "Synced",
			pullmodel.FeedbackOperationPhase: "Running", pullmodel.FeedbackOperationStartedAt: "2026-11-23T11:00:00Z"}, nil)
		require.Eventually(t, func() bool {
			_, has := p.getApp("openshift-gitops", "guestbook-cluster1").Object["operation"]
			return !has
		}, timeout, poll, ".operation cleared on the hub")
		p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(w *workv1.ManifestWork) bool {
			_, op := spokeApp(t, w).Object["operation"]
			_, baseline := w.Annotations[pullmodel.AnnotationOperationBaseline]
			return !op && !baseline
		}, "no operation, no baseline")
	})

	t.Run("tenant isolation: a cluster no PlacementDecision of the namespace lists", func(t *testing.T) {
		p.application(pullApp("sneaky", "team-b", "cluster1"), nil)
		p.waitAppCondition("team-b", "sneaky", pullmodel.ConditionPullError, pullmodel.ReasonClusterNotPermitted)
		p.waitEvent("team-b", "sneaky", pullmodel.ReasonClusterNotPermitted)
		p.assertNoWorkFor(t, "team-b", "sneaky")
		// Once team-b's own Placement selects cluster1, it is delivered.
		p.placement("team-b", "team-b", "cluster1")
		p.waitWork("cluster1", "team-b", "sneaky", func(*workv1.ManifestWork) bool { return true }, "delivered once placed")
		require.Eventually(t, func() bool {
			return findCondition(p.getApp("team-b", "sneaky"), pullmodel.ConditionPullError) == nil
		}, timeout, poll, "error condition cleared")
	})

	t.Run("the annotation without the pull label: warned, nothing shipped", func(t *testing.T) {
		doc := strings.Replace(pullApp("unlabelled", "openshift-gitops", "cluster1"), `apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true", `, "", 1)
		p.application(doc, nil)
		p.waitAppCondition("openshift-gitops", "unlabelled", pullmodel.ConditionPullWarning, pullmodel.ReasonPullLabelMissing)
		p.waitEvent("openshift-gitops", "unlabelled", pullmodel.ReasonPullLabelMissing)
		p.assertNoWorkFor(t, "openshift-gitops", "unlabelled")
	})

	t.Run("an unknown cluster", func(t *testing.T) {
		p.application(pullApp("lost", "openshift-gitops", "cluster9"), nil)
		p.waitAppCondition("openshift-gitops", "lost", pullmodel.ConditionPullError, pullmodel.ReasonClusterNotFound)
		p.assertNoWorkFor(t, "openshift-gitops", "lost")
	})

	t.Run("skip-reconcile missing: shipped with a warning", func(t *testing.T) {
		doc := strings.Replace(pullApp("unskipped", "openshift-gitops", "cluster2"), `, argocd.argoproj.io/skip-reconcile: "true"`, "", 1)
		p.application(doc, nil)
		p.waitWork("cluster2", "openshift-gitops", "unskipped", func(*workv1.ManifestWork) bool { return true }, "shipped")
		p.waitAppCondition("openshift-gitops", "unskipped", pullmodel.ConditionPullWarning, pullmodel.ReasonSkipReconcileMissing)
	})

	t.Run("the spoke cannot apply it: the condition says the addon is not enabled", func(t *testing.T) {
		w := p.waitWork("cluster2", "openshift-gitops", "unskipped", func(*workv1.ManifestWork) bool { return true }, "exists")
		p.report(w, nil, &metav1.Condition{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestFailed",
			Message: `failed to apply: no matches for kind "Application" in version "argoproj.io/v1alpha1"`})
		p.waitAppCondition("openshift-gitops", "unskipped", pullmodel.ConditionPullError, "the gitops addon is not enabled on cluster cluster2")
	})

	t.Run("a changed cluster annotation moves the ManifestWork", func(t *testing.T) {
		p.application(pullApp("mover", "openshift-gitops", "cluster1"), nil)
		p.waitWork("cluster1", "openshift-gitops", "mover", func(*workv1.ManifestWork) bool { return true }, "on cluster1")
		app := p.getApp("openshift-gitops", "mover")
		a := app.GetAnnotations()
		a[pullmodel.AnnotationCluster] = "cluster2"
		app.SetAnnotations(a)
		require.NoError(t, p.c.Update(p.ctx, app))
		p.waitWork("cluster2", "openshift-gitops", "mover", func(*workv1.ManifestWork) bool { return true }, "on cluster2")
		p.waitNoWork("cluster1", "openshift-gitops", "mover", "moved away")
	})

	t.Run("deletion without a finalizer deletes the ManifestWork", func(t *testing.T) {
		p.application(pullApp("short-lived", "openshift-gitops", "cluster1"), nil)
		p.waitWork("cluster1", "openshift-gitops", "short-lived", func(*workv1.ManifestWork) bool { return true }, "created")
		require.NoError(t, p.c.Delete(p.ctx, p.getApp("openshift-gitops", "short-lived")))
		p.waitNoWork("cluster1", "openshift-gitops", "short-lived", "deleted with its Application")
	})

	t.Run("deletion with Argo CD's finalizer: ManifestWork first, then the finalizer is released", func(t *testing.T) {
		app := p.application(strings.Replace(pullApp("finalized", "openshift-gitops", "cluster1"), "  labels:",
			"  finalizers: [resources-finalizer.argocd.argoproj.io]\n  labels:", 1), nil)
		w := p.waitWork("cluster1", "openshift-gitops", "finalized", func(*workv1.ManifestWork) bool { return true }, "created")
		assert.Equal(t, []string{"resources-finalizer.argocd.argoproj.io"}, spokeApp(t, w).GetFinalizers(),
			"the spoke Application prunes, as in Argo CD")
		require.NoError(t, p.c.Delete(p.ctx, app))
		p.waitNoWork("cluster1", "openshift-gitops", "finalized", "deleted")
		require.Eventually(t, func() bool { return p.getApp("openshift-gitops", "finalized") == nil }, timeout, poll,
			"the hub Application is gone once its finalizer is released")
	})

	t.Run("zero writes while reconciles are triggered", func(t *testing.T) {
		p.assertNoWritesWhileTriggering()
	})

	t.Run("vanished while the manager was down: cleaned up at start", func(t *testing.T) {
		p.application(pullApp("orphan", "openshift-gitops", "cluster1"), nil)
		p.waitWork("cluster1", "openshift-gitops", "orphan", func(*workv1.ManifestWork) bool { return true }, "created")
		p.stop()
		require.NoError(t, p.c.Delete(p.ctx, p.getApp("openshift-gitops", "orphan")))
		require.Eventually(t, func() bool { return p.getApp("openshift-gitops", "orphan") == nil }, timeout, poll,
			"the Application is gone (it has no finalizer)")
		require.NoError(t, p.c.Get(p.ctx, types.NamespacedName{Namespace: "cluster1", Name: pullmodel.WorkName("openshift-gitops", "orphan")}, &workv1.ManifestWork{}),
			"nothing deleted the ManifestWork while the manager was down")
		p.startManager(true)
		p.waitNoWork("cluster1", "openshift-gitops", "orphan", "removed at start-up")
		p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(*workv1.ManifestWork) bool { return true }, "others kept")
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
		pullReconciles := reconcileTotal(t, pullmodel.ControllerName)
		p.applyYAML(`{apiVersion: apps.open-cluster-management.io/v1beta1, kind: GitOpsCluster, metadata: {name: kill-switch, namespace: openshift-gitops}, ` +
			`spec: {argoServer: {argoNamespace: openshift-gitops}, placementRef: {kind: Placement, name: gitops-managed}}}`)
		p.waitCondition("openshift-gitops", "kill-switch", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		assert.Equal(t, pullReconciles, reconcileTotal(t, pullmodel.ControllerName), "no pull model reconcile")
		p.assertNoWorkNow(t, "openshift-gitops", "late")
		require.NoError(t, p.c.Get(p.ctx, types.NamespacedName{Namespace: "cluster1", Name: pullmodel.WorkName("openshift-gitops", "early")}, &workv1.ManifestWork{}),
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
		l.SetGroupVersionKind(pullmodel.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
		return l
	}())
	reportsBefore := p.versions(&v1alpha1.MulticlusterApplicationSetReportList{})
	require.NotEmpty(t, appsBefore)
	require.NotEmpty(t, reportsBefore)
	touched := map[string]string{}
	writesBefore := p.writes.count()
	for i := range 4 {
		waitControllerIdle(t, pullmodel.ReportControllerName)
		reportsReconciled := reconcileTotal(t, pullmodel.ReportControllerName)
		waitReconcileAfter(t, pullmodel.ControllerName, func() {
			works := &workv1.ManifestWorkList{}
			require.NoError(t, p.c.List(p.ctx, works, client.MatchingLabels{pullmodel.LabelPullWork: "true"}))
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
		require.Eventually(t, func() bool { return reconcileTotal(t, pullmodel.ReportControllerName) > reportsReconciled }, timeout, poll,
			"the report controller reconciles after round %d", i)
		waitControllerIdle(t, pullmodel.ReportControllerName)
	}
	assert.Equal(t, appsBefore, p.versions(func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(pullmodel.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
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
