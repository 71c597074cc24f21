package integration

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestPullModelResourcesAndUnappliedWorks: what the hub shows of an Application's
// resources on its cluster, from the spoke agent's summary as OCM's work agent feeds it
// back, and of a ManifestWork no work agent applies. The manager's apply timeout is 3 s.
func TestPullModelResourcesAndUnappliedWorks(t *testing.T) {
	p := startTunedPullHub(t, false, append(testenv.OCMCRDPaths(), ourCRDs()), 3*time.Second)
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	require.NoError(t, p.c.Create(p.ctx, appSet))
	p.application(pullApp("shop-cluster1", "openshift-gitops", "cluster1"), appSet)
	w := p.waitWork("cluster1", "openshift-gitops", "shop-cluster1", func(*workv1.ManifestWork) bool { return true }, "created")
	assert.NotEmpty(t, w.Annotations[pullnames.AnnotationShippedAt], "the time the spec was shipped")

	t.Run("not applied within the timeout: a warning naming the cluster's state, and a report entry", func(t *testing.T) {
		p.waitAppCondition("openshift-gitops", "shop-cluster1", v1alpha1.ConditionPullModelWarning, "has never reported")
		p.waitEvent("openshift-gitops", "shop-cluster1", v1alpha1.ReasonNotApplied)
		report := p.waitReport("guestbook", func(r *v1alpha1.MulticlusterApplicationSetReport) bool {
			return len(r.Statuses.ClusterConditions) == 1 && len(r.Statuses.ClusterConditions[0].Conditions) == 1
		}, "an entry with the apply warning")
		assert.Equal(t, "ApplyWarning", report.Statuses.ClusterConditions[0].Conditions[0].Type)

		// The cluster's klusterlet stops reporting: the warning says so.
		mc := &clusterv1.ManagedCluster{}
		require.NoError(t, p.c.Get(p.ctx, types.NamespacedName{Name: "cluster1"}, mc))
		mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
			Reason: "ManagedClusterLeaseUpdateStopped", Message: "Registration agent stopped updating its lease.", LastTransitionTime: metav1.Now()}}
		require.NoError(t, p.c.Status().Update(p.ctx, mc))
		p.waitAppCondition("openshift-gitops", "shop-cluster1", v1alpha1.ConditionPullModelWarning, "Registration agent stopped updating its lease")

		// Applied at last: the warning goes.
		p.markApplied(w)
		require.Eventually(t, func() bool {
			return findCondition(p.getApp("openshift-gitops", "shop-cluster1"), v1alpha1.ConditionPullModelWarning) == nil
		}, timeout, poll, "the warning is cleared once the work is applied")
	})

	broken := []appresources.Resource{
		{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"},
		{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"},
		{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass", Name: "high", Status: "OutOfSync", Health: "Missing",
			SyncResult: "SyncFailed", SyncMessage: `priorityclasses.scheduling.k8s.io is forbidden: User cannot create`},
	}

	t.Run("the spoke's resources on the hub Application and in the report, with the failed one's message", func(t *testing.T) {
		p.report(w, map[string]string{feedback.KeySync: "OutOfSync", feedback.KeyHealth: "Missing", feedback.KeyRevision: "abc",
			feedback.KeyOperationPhase: "Failed", feedback.KeyOperationStartedAt: "2026-11-25T10:00:00Z",
			feedback.KeyResources: summary(t, broken...)}, nil)
		var resources []any
		require.Eventually(t, func() bool {
			resources, _, _ = unstructured.NestedSlice(p.getApp("openshift-gitops", "shop-cluster1").Object, "status", "resources")
			return len(resources) == 3
		}, timeout, poll, "status.resources on the hub Application")
		assert.Equal(t, map[string]any{"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass", "name": "high",
			"status": "OutOfSync", "health": map[string]any{"status": "Missing"}}, resources[0], "the failed one first")
		failed, _, _ := unstructured.NestedSlice(p.getApp("openshift-gitops", "shop-cluster1").Object, "status", "operationState", "syncResult", "resources")
		require.Len(t, failed, 1, "the failed resource in the last sync's result, where `argocd app get` shows its message")
		assert.Contains(t, failed[0].(map[string]any)["message"], "forbidden")

		report := p.waitReport("guestbook", func(r *v1alpha1.MulticlusterApplicationSetReport) bool {
			return len(r.Statuses.ClusterConditions) == 1 && len(r.Statuses.ClusterConditions[0].Resources) == 3
		}, "the cluster's resources")
		entry := report.Statuses.ClusterConditions[0]
		assert.Equal(t, "SyncFailed", entry.Resources[0].SyncResult)
		assert.Contains(t, entry.Resources[0].Message, "forbidden")
		assert.Equal(t, int32(3), *entry.ResourceCount)
		assert.Len(t, report.Statuses.Resources, 3, "ACM's list of the ApplicationSet's resources")
		assert.Contains(t, conditionTypes(entry.Conditions), "ResourceError")
	})

	t.Run("recovered on the spoke: cleared on the hub and in the report", func(t *testing.T) {
		healthy := slices.Concat(broken[:2], []appresources.Resource{{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass", Name: "high",
			Status: "Synced", Health: "Healthy", SyncResult: "Synced"}})
		p.report(w, map[string]string{feedback.KeySync: "Synced", feedback.KeyHealth: "Healthy", feedback.KeyRevision: "abc",
			feedback.KeyOperationPhase: "Succeeded", feedback.KeyOperationStartedAt: "2026-11-25T10:05:00Z",
			feedback.KeyResources: summary(t, healthy...)}, nil)
		require.Eventually(t, func() bool {
			app := p.getApp("openshift-gitops", "shop-cluster1")
			_, failed, _ := unstructured.NestedSlice(app.Object, "status", "operationState", "syncResult", "resources")
			resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
			return !failed && len(resources) == 3 && resources[0].(map[string]any)["kind"] == "ConfigMap"
		}, timeout, poll, "no failed resource left on the hub Application")
		p.waitReport("guestbook", func(r *v1alpha1.MulticlusterApplicationSetReport) bool {
			e := r.Statuses.ClusterConditions[0]
			return len(e.Conditions) == 0 && len(e.Resources) == 3 && e.Resources[2].HealthStatus == "Healthy"
		}, "no ResourceError left")
	})

	t.Run("a cluster whose addon is not enabled reports no resources: said, not shown as none", func(t *testing.T) {
		p.application(pullApp("shop-cluster2", "openshift-gitops", "cluster2"), appSet)
		w2 := p.waitWork("cluster2", "openshift-gitops", "shop-cluster2", func(*workv1.ManifestWork) bool { return true }, "created")
		p.markApplied(w2)
		p.report(w2, map[string]string{feedback.KeySync: "Synced", feedback.KeyHealth: "Healthy"}, nil)
		p.waitAppCondition("openshift-gitops", "shop-cluster2", v1alpha1.ConditionPullModelWarning, v1alpha1.ReasonResourcesNotReported)
		p.waitAppCondition("openshift-gitops", "shop-cluster2", v1alpha1.ConditionPullModelWarning, "the gitops addon, whose agent summarises them, is not enabled")
		_, has, _ := unstructured.NestedSlice(p.getApp("openshift-gitops", "shop-cluster2").Object, "status", "resources")
		assert.False(t, has, "no empty list standing for resources nobody reported")
	})

	t.Run("zero writes while reconciles are triggered", func(t *testing.T) {
		p.assertNoWritesWhileTriggering()
	})
}

// TestPullModelReportOnACMsCRD: on a hub where Red Hat ACM's own CRD serves the reports
// (the manager leaves another installer's CRD alone), each cluster's resources are
// pruned by the apiserver; the failed ones still show as ResourceError conditions (ACM's
// schema), and an unchanged report is not written again and again.
func TestPullModelReportOnACMsCRD(t *testing.T) {
	paths := []string{filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon", "crds", "apps.open-cluster-management.io_gitopsclusters.yaml"),
		filepath.Join(fixtures.Dir(t, "acm"), "crds", "multiclusterapplicationsetreports.v1alpha1.main.yaml")}
	p := startTunedPullHub(t, false, append(testenv.OCMCRDPaths(), paths...), 0)
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	require.NoError(t, p.c.Create(p.ctx, appSet))
	p.application(pullApp("shop-cluster1", "openshift-gitops", "cluster1"), appSet)
	w := p.waitWork("cluster1", "openshift-gitops", "shop-cluster1", func(*workv1.ManifestWork) bool { return true }, "created")
	p.markApplied(w)
	p.report(w, map[string]string{feedback.KeySync: "OutOfSync", feedback.KeyHealth: "Degraded",
		feedback.KeyResources: summary(t,
			appresources.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced"},
			appresources.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "web", Status: "Synced",
				Health: "Degraded", HealthMessage: `Deployment "web" exceeded its progress deadline`})}, nil)
	report := p.waitReport("guestbook", func(r *v1alpha1.MulticlusterApplicationSetReport) bool {
		return len(r.Statuses.ClusterConditions) == 1 && slices.Contains(conditionTypes(r.Statuses.ClusterConditions[0].Conditions), "ResourceError")
	}, "the degraded Deployment as a ResourceError")
	assert.Contains(t, report.Statuses.ClusterConditions[0].Conditions[0].Message, "exceeded its progress deadline")
	assert.Empty(t, report.Statuses.ClusterConditions[0].Resources, "ACM's schema has no per-cluster resources: the scenario of this test")
	assert.Len(t, report.Statuses.Resources, 2, "ACM's own statuses.resources is kept")
	p.assertNoWritesWhileTriggering()
}

// summary is the feedback value of a spoke agent's summary of these resources.
func summary(t *testing.T, resources ...appresources.Resource) string {
	t.Helper()
	v, err := appresources.Of(resources...).Encode()
	require.NoError(t, err)
	return v
}

func conditionTypes(cs []v1alpha1.Condition) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Type)
	}
	return out
}

// markApplied sets the work's Applied condition, as the work agent does once it applied it.
func (p *pullHub) markApplied(w *workv1.ManifestWork) {
	p.t.Helper()
	require.Eventually(p.t, func() bool {
		cur := &workv1.ManifestWork{}
		if p.c.Get(p.ctx, client.ObjectKeyFromObject(w), cur) != nil {
			return false
		}
		cur.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete",
			ObservedGeneration: cur.Generation, LastTransitionTime: metav1.Now()}}
		return p.c.Status().Update(p.ctx, cur) == nil
	}, timeout, poll, "marking %s/%s applied", w.Namespace, w.Name)
}

// waitReport waits for the report of an ApplicationSet in openshift-gitops to satisfy ok.
func (p *pullHub) waitReport(name string, ok func(*v1alpha1.MulticlusterApplicationSetReport) bool, what string) *v1alpha1.MulticlusterApplicationSetReport {
	p.t.Helper()
	report := &v1alpha1.MulticlusterApplicationSetReport{}
	require.Eventually(p.t, func() bool {
		return p.c.Get(p.ctx, types.NamespacedName{Namespace: "openshift-gitops", Name: name}, report) == nil && ok(report)
	}, timeout, poll, "report %s: %s (last: %+v)", name, what, &report.Statuses)
	return report
}
