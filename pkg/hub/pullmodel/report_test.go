package pullmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
)

func TestBuildReport(t *testing.T) {
	appSet := types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}
	work := func(cluster, app string, values map[string]string) workv1.ManifestWork {
		w := reportedWork(cluster, "openshift-gitops", app, values)
		w.Annotations[AnnotationHostingAppSet] = "openshift-gitops/guestbook"
		w.Annotations[AnnotationHostingAppSetUID] = "uid-1"
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{ResourceIdentifier: workv1.ResourceIdentifier{
			Group: "argoproj.io", Resource: "applications", Namespace: "openshift-gitops", Name: app}}}
		return *w
	}
	healthy := map[string]string{FeedbackHealth: "Healthy", FeedbackSync: "Synced", FeedbackRevision: "r1"}
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
				assert.Equal(t, "openshift-gitops/gb-cluster1/cluster1/"+WorkName("openshift-gitops", "gb-cluster1"), c.App)
				assert.Equal(t, "r1", c.SyncRevision)
			},
		},
		{
			name: "two Applications of the ApplicationSet on one cluster are two entries, one cluster",
			works: []workv1.ManifestWork{work("cluster1", "gb-a", healthy),
				work("cluster1", "gb-b", map[string]string{FeedbackHealth: "Progressing", FeedbackSync: "OutOfSync"})},
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
				failed := work("cluster1", "gb-cluster1", map[string]string{FeedbackOperationPhase: "Failed", FeedbackOperationStartedAt: "t", FeedbackOperationMessage: "one or more objects failed to apply"})
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
			r := buildReport(appSet, tt.works)
			assert.Equal(t, "guestbook", r.Name)
			assert.Equal(t, "openshift-gitops", r.Namespace)
			assert.Equal(t, "openshift-gitops.guestbook", r.Labels[LabelHostingAppSetReport])
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
