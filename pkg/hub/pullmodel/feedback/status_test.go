package feedback

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

func TestDesiredHubStatus(t *testing.T) {
	tests := []struct {
		name     string
		existing map[string]any
		reported map[string]string
		want     map[string]any
	}{
		{name: "nothing reported, nothing written", want: map[string]any{}},
		{
			name:     "every value reported",
			reported: map[string]string{KeyHealth: "Healthy", KeySync: "Synced", KeyRevision: "abc", KeyOperationPhase: "Succeeded", KeyOperationStartedAt: "2026-11-23T10:00:00Z", KeyOperationMessage: "successfully synced", KeyReconciledAt: "2026-11-23T10:00:05Z"},
			want: map[string]any{
				"health": map[string]any{"status": "Healthy"},
				"sync":   map[string]any{"status": "Synced", "revision": "abc"},
				"operationState": map[string]any{"phase": "Succeeded", "startedAt": "2026-11-23T10:00:00Z",
					"message": "successfully synced", "operation": map[string]any{"sync": map[string]any{}}},
				"reconciledAt": "2026-11-23T10:00:05Z",
			},
		},
		{
			name:     "health only: no Progressing invented, no sync",
			reported: map[string]string{KeyHealth: "Degraded"},
			want:     map[string]any{"health": map[string]any{"status": "Degraded"}},
		},
		{
			name:     "a revision without a sync status is not written (schema requires sync.status)",
			reported: map[string]string{KeyRevision: "abc"},
			want:     map[string]any{},
		},
		{
			name:     "an operation phase without its start is not written (schema requires both)",
			reported: map[string]string{KeyOperationPhase: "Running"},
			want:     map[string]any{},
		},
		{
			name:     "values not reported keep what is there; other fields kept",
			existing: map[string]any{"sync": map[string]any{"status": "OutOfSync", "revision": "old"}, "resources": []any{"x"}},
			reported: map[string]string{KeyHealth: "Healthy"},
			want:     map[string]any{"sync": map[string]any{"status": "OutOfSync", "revision": "old"}, "resources": []any{"x"}, "health": map[string]any{"status": "Healthy"}},
		},
		{
			name:     "an existing operation is kept",
			existing: map[string]any{"operationState": map[string]any{"operation": map[string]any{"sync": map[string]any{"revision": "abc"}}, "phase": "Running", "startedAt": "t0", "message": "old"}},
			reported: map[string]string{KeyOperationPhase: "Succeeded", KeyOperationStartedAt: "t0"},
			want:     map[string]any{"operationState": map[string]any{"operation": map[string]any{"sync": map[string]any{"revision": "abc"}}, "phase": "Succeeded", "startedAt": "t0"}},
		},
		{
			name:     "an empty operation (ACM's stand-in) is given its kind, a sync, for the hub's UI",
			existing: map[string]any{"operationState": map[string]any{"operation": map[string]any{}, "phase": "Succeeded", "startedAt": "t0"}},
			reported: map[string]string{KeyOperationPhase: "Succeeded", KeyOperationStartedAt: "t0"},
			want:     map[string]any{"operationState": map[string]any{"operation": map[string]any{"sync": map[string]any{}}, "phase": "Succeeded", "startedAt": "t0"}},
		},
		{
			name: "the spoke's conditions stand in for the hub's, in order",
			reported: map[string]string{
				KeyConditionType(0): "ComparisonError", KeyConditionMessage(0): "failed to load open api schema",
				KeyConditionType(1): "SyncError", KeyConditionMessage(1): "priorityclasses is forbidden",
			},
			want: map[string]any{"conditions": []any{
				map[string]any{"type": "ComparisonError", "message": "failed to load open api schema"},
				map[string]any{"type": "SyncError", "message": "priorityclasses is forbidden"},
			}},
		},
		{
			name:     "conditions the spoke no longer reports leave the hub",
			existing: map[string]any{"conditions": []any{map[string]any{"type": "ComparisonError", "message": "old"}}},
			reported: map[string]string{KeySync: "Synced"},
			want:     map[string]any{"sync": map[string]any{"status": "Synced"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := pulltest.App(pulltest.SeedApp)
			if tt.existing != nil {
				app.Object["status"] = tt.existing
			}
			w := pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", tt.reported)
			s := Of(w, "openshift-gitops", "guestbook-cluster1")
			got := HubStatus(app, s, nil)
			assert.Equal(t, tt.want, got)
			assert.False(t, HubStatusDiffers(withStatus(app, got), got))
		})
	}
}

func withStatus(app *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
	c := app.DeepCopy()
	c.Object["status"] = status
	return c
}

func TestSpokeStatusOf(t *testing.T) {
	t.Run("another manifest's feedback is not ours", func(t *testing.T) {
		w := pulltest.ReportedWork("cluster1", "openshift-gitops", "other", map[string]string{KeyHealth: "Healthy"})
		assert.Empty(t, Of(w, "openshift-gitops", "guestbook-cluster1").values)
	})
	t.Run("not applied: the manifest's reason and message", func(t *testing.T) {
		w := pulltest.ReportedWork("cluster1", "openshift-gitops", "app", nil)
		w.Status.ResourceStatus.Manifests[0].Conditions = []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse,
			Reason: "AppliedManifestFailed", Message: `no matches for kind "Application" in version "argoproj.io/v1alpha1"`}}
		assert.Equal(t, `AppliedManifestFailed: no matches for kind "Application" in version "argoproj.io/v1alpha1"`,
			Of(w, "openshift-gitops", "app").applyFailure)
	})
	t.Run("a nil work reported nothing", func(t *testing.T) {
		assert.Empty(t, Of(nil, "ns", "app").values)
	})
}

// TestSetConditions: the pull model's conditions are replaced or removed, everybody
// else's are kept.
func TestSetConditions(t *testing.T) {
	ours := []any{map[string]any{"type": v1alpha1.ConditionPullModelError, "message": "ClusterNotFound: gone"}}
	status := map[string]any{"conditions": []any{
		map[string]any{"type": "SyncError", "message": "x"},
		map[string]any{"type": v1alpha1.ConditionPullModelError, "message": "old"},
	}}
	setConditions(status, nil)
	assert.Equal(t, []any{map[string]any{"type": "SyncError", "message": "x"}}, status["conditions"])
	setConditions(status, ours)
	assert.Len(t, status["conditions"], 2)
}

// An Application the hub's own Argo CD also reconciles (no skip-reconcile) keeps the
// conditions that Argo CD writes: mirroring the spoke's would fight it.
func TestSpokeConditionsOnlyReplaceThoseOfSkippedApplications(t *testing.T) {
	app := pulltest.App(pulltest.SeedApp)
	annotations := app.GetAnnotations()
	delete(annotations, pullnames.AnnotationSkipReconcile)
	app.SetAnnotations(annotations)
	hubOwn := map[string]any{"type": "ComparisonError", "message": "the hub's Argo CD says so"}
	app.Object["status"] = map[string]any{"conditions": []any{hubOwn}}
	w := pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", map[string]string{
		KeyConditionType(0): "SyncError", KeyConditionMessage(0): "from the spoke"})
	got := HubStatus(app, Of(w, "openshift-gitops", "guestbook-cluster1"), nil)
	assert.Equal(t, []any{hubOwn}, got["conditions"])
}

// TestHubStatusCarriesResources: the spoke's summary becomes status.resources (health
// and its message), status.summary and the failed resources of the last sync's result;
// a multi-source Application gets its revisions once every source reported one.
func TestHubStatusCarriesResources(t *testing.T) {
	summary := pulltest.Summary(t,
		appresources.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"},
		appresources.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "web", Status: "Synced",
			Health: "Degraded", HealthMessage: "exceeded its progress deadline"},
		appresources.Resource{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass", Name: "high", Status: "OutOfSync",
			SyncResult: "SyncFailed", SyncMessage: "forbidden"},
	)
	app := pulltest.App(pulltest.SeedApp)
	status := HubStatus(app, Status{values: map[string]string{
		KeySync: "OutOfSync", KeyRevision: "abc", KeyOperationPhase: "Failed", KeyOperationStartedAt: "t0",
		KeyResources: summary,
	}}, nil)
	assert.Equal(t, []any{
		map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook", "name": "web", "status": "Synced",
			"health": map[string]any{"status": "Degraded", "message": "exceeded its progress deadline"}},
		map[string]any{"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass", "name": "high", "status": "OutOfSync"},
		map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "guestbook", "name": "guestbook-ui", "status": "Synced",
			"health": map[string]any{"status": "Healthy"}},
	}, status["resources"])
	assert.Equal(t, map[string]any{}, status["summary"])
	result, _, _ := unstructured.NestedMap(status, "operationState", "syncResult")
	assert.Equal(t, map[string]any{"revision": "abc", "resources": []any{map[string]any{"group": "scheduling.k8s.io", "version": "v1",
		"kind": "PriorityClass", "namespace": "", "name": "high", "status": "SyncFailed", "message": "forbidden"}}}, result)

	t.Run("a summary without failures clears the failed results", func(t *testing.T) {
		healthy := pulltest.Summary(t, appresources.Resource{Version: "v1", Kind: "ConfigMap", Name: "x", Status: "Synced", Health: "Healthy"})
		app := pulltest.App(pulltest.SeedApp)
		app.Object["status"] = status
		again := HubStatus(app, Status{values: map[string]string{KeySync: "Synced", KeyOperationPhase: "Succeeded",
			KeyOperationStartedAt: "t1", KeyResources: healthy}}, nil)
		_, has, _ := unstructured.NestedMap(again, "operationState", "syncResult")
		assert.False(t, has)
		assert.Len(t, again["resources"], 1)
	})

	t.Run("no summary: status.resources left as it was", func(t *testing.T) {
		app := pulltest.App(pulltest.SeedApp)
		app.Object["status"] = map[string]any{"resources": []any{"kept"}}
		again := HubStatus(app, Status{values: map[string]string{KeySync: "Synced"}}, nil)
		assert.Equal(t, []any{"kept"}, again["resources"])
	})

	t.Run("multi-source revisions, once every source reported", func(t *testing.T) {
		app := pulltest.App(pulltest.SeedApp)
		unstructured.RemoveNestedField(app.Object, "spec", "source")
		require.NoError(t, unstructured.SetNestedSlice(app.Object, []any{map[string]any{"repoURL": "a"}, map[string]any{"repoURL": "b"}}, "spec", "sources"))
		partial := HubStatus(app, Status{values: map[string]string{KeySync: "Synced", KeySourceRevision(0): "r0"}}, nil)
		_, has, _ := unstructured.NestedSlice(partial, "sync", "revisions")
		assert.False(t, has, "one of two revisions is not a list to show")
		full := HubStatus(app, Status{values: map[string]string{KeySync: "Synced", KeySourceRevision(0): "r0",
			KeySourceRevision(1): "r1"}}, nil)
		revisions, _, _ := unstructured.NestedSlice(full, "sync", "revisions")
		assert.Equal(t, []any{"r0", "r1"}, revisions)
		paths := PathsFor(app)
		assert.Equal(t, workv1.JsonPath{Name: "syncRevisions1", Path: ".status.sync.revisions[1]"}, paths[len(paths)-1])
	})
}

// TestWhatRollingSyncReadsComesBack: the hub's ApplicationSet controller moves a RollingSync
// step on (Waiting, Pending, Progressing, Healthy) from the hub Application alone: its
// health, sync status, revision (pending changes) and operation phase and start (a sync
// it asked for ran and finished). Each must be asked of the work agent and land at the
// same path on the hub, else a rollout across clusters stops at Pending.
func TestWhatRollingSyncReadsComesBack(t *testing.T) {
	reads := map[string]string{
		".status.health.status":            "Healthy",
		".status.sync.status":              "Synced",
		".status.sync.revision":            "abc123",
		".status.operationState.phase":     "Succeeded",
		".status.operationState.startedAt": "2026-11-26T08:00:00Z",
	}
	app := pulltest.App(pulltest.SeedApp)
	reported := map[string]string{}
	for path, value := range reads {
		i := slices.IndexFunc(PathsFor(app), func(p workv1.JsonPath) bool { return p.Path == path })
		require.NotEqual(t, -1, i, "no feedback rule asks the work agent for %s", path)
		reported[PathsFor(app)[i].Name] = value
	}
	w := pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", reported)
	status := withStatus(app, HubStatus(app, Of(w, "openshift-gitops", "guestbook-cluster1"), nil))
	for path, value := range reads {
		got, _, _ := unstructured.NestedString(status.Object, strings.Split(strings.TrimPrefix(path, "."), ".")...)
		assert.Equal(t, value, got, "the hub Application's %s", path)
	}
}
