package reports

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

var reportNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// testReportReconciler answers from a fake hub with cluster1 (available, with the addon
// Available) and offline (unavailable since an hour).
func testReportReconciler(t *testing.T, objects ...client.Object) *Reconciler {
	t.Helper()
	scheme := fixtures.HubScheme(t)
	hour := metav1.NewTime(reportNow.Add(-time.Hour))
	objects = append(objects,
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
			Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable,
				Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", LastTransitionTime: hour}}}},
		&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "gitops-addon"},
			Status: addonv1beta1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{{Type: addonv1beta1.ManagedClusterAddOnConditionAvailable,
				Status: metav1.ConditionTrue, Reason: "ManagedClusterAddOnLeaseUpdated", LastTransitionTime: hour}}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "offline"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
			Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable,
				Status: metav1.ConditionUnknown, Reason: "ManagedClusterLeaseUpdateStopped", Message: "Registration agent stopped updating its lease.",
				LastTransitionTime: hour}}}},
	)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	return &Reconciler{Client: c, ApplyTimeout: 5 * time.Minute, Now: func() time.Time { return reportNow }}
}

func TestReportResourcesAndWarnings(t *testing.T) {
	appSet := types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}
	work := func(cluster, app string, values map[string]string) workv1.ManifestWork {
		w := pulltest.ReportedWork(cluster, "openshift-gitops", app, values)
		w.Annotations[pullnames.AnnotationHostingAppSet] = "openshift-gitops/guestbook"
		return *w
	}
	guestbook := []appresources.Resource{
		{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"},
		{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"},
		{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass", Name: "high", Status: "OutOfSync", Health: "Missing",
			SyncResult: "SyncFailed", SyncMessage: "priorityclasses.scheduling.k8s.io is forbidden"},
	}

	t.Run("each cluster's resources with health and the failed one's message; the union in ACM's list", func(t *testing.T) {
		works := []workv1.ManifestWork{
			work("cluster1", "gb-1", map[string]string{feedback.KeySync: "OutOfSync", feedback.KeyResources: pulltest.Summary(t, guestbook...)}),
			work("cluster2", "gb-2", map[string]string{feedback.KeySync: "Synced", feedback.KeyResources: pulltest.Summary(t, guestbook[:2]...)}),
		}
		r, _, err := testReportReconciler(t).buildReport(context.Background(), appSet, works)
		require.NoError(t, err)
		c1 := r.Statuses.ClusterConditions[0]
		require.Len(t, c1.Resources, 3)
		assert.Equal(t, v1alpha1.ClusterResource{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass", Name: "high", SyncStatus: "OutOfSync",
			HealthStatus: "Missing", SyncResult: "SyncFailed", Message: "priorityclasses.scheduling.k8s.io is forbidden"}, c1.Resources[0],
			"the failed resource first, with its message")
		assert.Equal(t, int32(3), *c1.ResourceCount)
		require.Len(t, c1.Conditions, 1)
		assert.Equal(t, "ResourceError", c1.Conditions[0].Type)
		assert.Contains(t, c1.Conditions[0].Message, "PriorityClass.scheduling.k8s.io high SyncFailed: priorityclasses.scheduling.k8s.io is forbidden")
		assert.Len(t, r.Statuses.ClusterConditions[1].Resources, 2)
		assert.Empty(t, r.Statuses.ClusterConditions[1].Conditions)
		assert.Equal(t, []v1alpha1.ResourceRef{
			{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass", Name: "high"},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui"},
			{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
		}, r.Statuses.Resources, "each resource once, over all clusters")
	})

	t.Run("resources not reported by an available addon's cluster: on their way, no warning", func(t *testing.T) {
		works := []workv1.ManifestWork{work("cluster1", "gb-1", map[string]string{feedback.KeySync: "Synced"})}
		r, _, err := testReportReconciler(t).buildReport(context.Background(), appSet, works)
		require.NoError(t, err)
		assert.Empty(t, r.Statuses.ClusterConditions[0].Conditions)
		assert.Nil(t, r.Statuses.ClusterConditions[0].ResourceCount, "no count where none was reported")
	})

	t.Run("resources not reported where the addon is not enabled: said, not an empty list", func(t *testing.T) {
		works := []workv1.ManifestWork{work("offline", "gb-1", map[string]string{feedback.KeySync: "Synced"})}
		r, _, err := testReportReconciler(t).buildReport(context.Background(), appSet, works)
		require.NoError(t, err)
		require.Len(t, r.Statuses.ClusterConditions[0].Conditions, 1)
		assert.Equal(t, "ResourcesWarning", r.Statuses.ClusterConditions[0].Conditions[0].Type)
		assert.Contains(t, r.Statuses.ClusterConditions[0].Conditions[0].Message, "the gitops addon, whose agent summarises them, is not enabled")
	})

	t.Run("an Application outside the Argo CD namespace on its cluster: no summary, and the report says why", func(t *testing.T) {
		w := work("cluster1", "gb-1", map[string]string{feedback.KeySync: "Synced"})
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{ResourceIdentifier: workv1.ResourceIdentifier{
			Group: "argoproj.io", Resource: "applications", Namespace: "team-a", Name: "gb-1"}}}
		w.Status.ResourceStatus.Manifests[0].ResourceMeta.Namespace = "team-a"
		r, _, err := testReportReconciler(t).buildReport(context.Background(), appSet, []workv1.ManifestWork{w})
		require.NoError(t, err)
		require.Len(t, r.Statuses.ClusterConditions[0].Conditions, 1)
		assert.Contains(t, r.Statuses.ClusterConditions[0].Conditions[0].Message, "runs in namespace team-a on the cluster")
	})

	t.Run("not applied within the timeout: an entry naming the cluster's state; before it, a requeue at the deadline", func(t *testing.T) {
		unapplied := func(shipped time.Time) workv1.ManifestWork {
			w := work("offline", "gb-1", nil)
			w.Status = workv1.ManifestWorkStatus{}
			w.Annotations[pullnames.AnnotationShippedAt] = shipped.Format(time.RFC3339)
			return w
		}
		r, requeue, err := testReportReconciler(t).buildReport(context.Background(), appSet, []workv1.ManifestWork{unapplied(reportNow.Add(-10 * time.Minute))})
		require.NoError(t, err)
		assert.Zero(t, requeue)
		require.Len(t, r.Statuses.ClusterConditions, 1, "the entry is there, for the cluster that has not applied it")
		conds := r.Statuses.ClusterConditions[0].Conditions
		require.Len(t, conds, 1)
		assert.Equal(t, "ApplyWarning", conds[0].Type)
		assert.Contains(t, conds[0].Message, "has not been applied on cluster offline since 2026-11-25T11:50:00Z")
		assert.Contains(t, conds[0].Message, "the cluster is unavailable (ManagedClusterConditionAvailable Unknown")
		assert.Contains(t, conds[0].Message, "Registration agent stopped updating its lease.")

		r, requeue, err = testReportReconciler(t).buildReport(context.Background(), appSet, []workv1.ManifestWork{unapplied(reportNow.Add(-time.Minute))})
		require.NoError(t, err)
		assert.Empty(t, r.Statuses.ClusterConditions[0].Conditions)
		assert.Equal(t, 4*time.Minute, requeue, "looked at again when the timeout runs out")
	})

	t.Run("a thousand resources on each of three clusters: the report lists an equal share", func(t *testing.T) {
		var many []appresources.Resource
		for i := range 1000 {
			many = append(many, appresources.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%04d", i), Status: "Synced"})
		}
		value := pulltest.Summary(t, many...)
		var works []workv1.ManifestWork
		for i := range 3 {
			works = append(works, work(fmt.Sprintf("c%d", i), fmt.Sprintf("gb-%d", i), map[string]string{feedback.KeyResources: value}))
		}
		r, _, err := testReportReconciler(t).buildReport(context.Background(), appSet, works)
		require.NoError(t, err)
		total := 0
		for _, c := range r.Statuses.ClusterConditions {
			total += len(c.Resources)
			assert.Equal(t, int32(1000), *c.ResourceCount, "the count is every resource")
		}
		assert.LessOrEqual(t, total, maxReportResources)
		assert.LessOrEqual(t, len(r.Statuses.Resources), maxReportResourceRefs)
		assert.False(t, strings.Contains(fmt.Sprint(r.Statuses.ClusterConditions[0].Conditions), "ResourceError"))
	})
}

func TestBuildReport(t *testing.T) {
	appSet := types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}
	work := func(cluster, app string, values map[string]string) workv1.ManifestWork {
		w := pulltest.ReportedWork(cluster, "openshift-gitops", app, values)
		w.Annotations[pullnames.AnnotationHostingAppSet] = "openshift-gitops/guestbook"
		w.Annotations[pullnames.AnnotationHostingAppSetUID] = "uid-1"
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{ResourceIdentifier: workv1.ResourceIdentifier{
			Group: "argoproj.io", Resource: "applications", Namespace: "openshift-gitops", Name: app}}}
		return *w
	}
	healthy := map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "Synced", feedback.KeyRevision: "r1"}
	tests := []struct {
		name        string
		works       []workv1.ManifestWork
		wantSummary v1alpha1.ReportSummary
		check       func(t *testing.T, r *v1alpha1.MulticlusterApplicationSetReport)
	}{
		{
			name:        "two clusters, both healthy and synced",
			works:       []workv1.ManifestWork{work("cluster2", "gb-cluster2", healthy), work("cluster1", "gb-cluster1", healthy)},
			wantSummary: v1alpha1.ReportSummary{Clusters: "2", Synced: "2", NotSynced: "0", Healthy: "2", NotHealthy: "0", InProgress: "0"},
			check: func(t *testing.T, r *v1alpha1.MulticlusterApplicationSetReport) {
				require.Len(t, r.Statuses.ClusterConditions, 2)
				c := r.Statuses.ClusterConditions[0]
				assert.Equal(t, "cluster1", c.Cluster, "sorted by cluster")
				assert.Equal(t, "openshift-gitops/gb-cluster1/cluster1/"+pullnames.WorkName("openshift-gitops", "gb-cluster1"), c.App)
				assert.Equal(t, "r1", c.SyncRevision)
			},
		},
		{
			name: "two Applications of the ApplicationSet on one cluster are two entries, one cluster",
			works: []workv1.ManifestWork{work("cluster1", "gb-a", healthy),
				work("cluster1", "gb-b", map[string]string{feedback.KeyHealth: "Progressing", feedback.KeySync: "OutOfSync"})},
			wantSummary: v1alpha1.ReportSummary{Clusters: "1", Synced: "1", NotSynced: "1", Healthy: "1", NotHealthy: "1", InProgress: "1"},
		},
		{
			name:        "missing feedback counts as neither synced nor healthy",
			works:       []workv1.ManifestWork{work("cluster1", "gb-cluster1", nil)},
			wantSummary: v1alpha1.ReportSummary{Clusters: "1", Synced: "0", NotSynced: "1", Healthy: "0", NotHealthy: "1", InProgress: "0"},
			check: func(t *testing.T, r *v1alpha1.MulticlusterApplicationSetReport) {
				assert.Empty(t, r.Statuses.ClusterConditions[0].HealthStatus)
			},
		},
		{
			name: "a failed sync and a failed apply are conditions of the entry",
			works: func() []workv1.ManifestWork {
				failed := work("cluster1", "gb-cluster1", map[string]string{feedback.KeyOperationPhase: "Failed", feedback.KeyOperationStartedAt: "t", feedback.KeyOperationMessage: "one or more objects failed to apply"})
				failed.Status.ResourceStatus.Manifests[0].Conditions = []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestFailed", Message: "boom"}}
				return []workv1.ManifestWork{failed}
			}(),
			wantSummary: v1alpha1.ReportSummary{Clusters: "1", Synced: "0", NotSynced: "1", Healthy: "0", NotHealthy: "1", InProgress: "0"},
			check: func(t *testing.T, r *v1alpha1.MulticlusterApplicationSetReport) {
				assert.Equal(t, []v1alpha1.Condition{
					{Type: "ApplyError", Message: "AppliedManifestFailed: boom"},
					{Type: "SyncError", Message: "one or more objects failed to apply"},
				}, r.Statuses.ClusterConditions[0].Conditions)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, requeue, err := testReportReconciler(t).buildReport(context.Background(), appSet, tt.works)
			require.NoError(t, err)
			assert.Zero(t, requeue, "every work is applied")
			assert.Equal(t, "guestbook", r.Name)
			assert.Equal(t, "openshift-gitops", r.Namespace)
			assert.Equal(t, "openshift-gitops.guestbook", r.Labels[pullnames.LabelHostingAppSetReport])
			require.Len(t, r.OwnerReferences, 1)
			assert.Equal(t, types.UID("uid-1"), r.OwnerReferences[0].UID)
			assert.Equal(t, "ApplicationSet", r.OwnerReferences[0].Kind)
			assert.Equal(t, tt.wantSummary, r.Statuses.Summary)
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}
