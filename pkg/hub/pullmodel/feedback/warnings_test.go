package feedback

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// TestWarningsExplainTheReport: what the hub says of a report it cannot show whole, from
// what it knows of the cluster: a hub with one cluster that lost its lease and has no addon.
func TestWarningsExplainTheReport(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	scheme := fixtures.HubScheme(t)
	lost := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: metav1.ConditionUnknown, Reason: "ManagedClusterLeaseUpdateStopped", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}}
	e := Explainer{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(lost).Build(), ApplyTimeout: 5 * time.Minute}
	// unapplied is a ManifestWork shipped that long ago and not applied, with what its
	// Application reported before.
	unapplied := func(shipped time.Duration, values map[string]string) (*workv1.ManifestWork, Status) {
		w := pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", values)
		w.Status.Conditions = nil
		w.Annotations[pullnames.AnnotationShippedAt] = now.Add(-shipped).Format(time.RFC3339)
		return w, Of(w, "openshift-gitops", "guestbook-cluster1")
	}

	problems, wait, err := e.Warnings(ctx, now, nil, Status{})
	require.NoError(t, err)
	assert.Empty(t, problems, "a ManifestWork not created yet has nothing to explain")
	assert.Zero(t, wait)

	w, s := unapplied(time.Minute, nil)
	problems, wait, err = e.Warnings(ctx, now, w, s)
	require.NoError(t, err)
	assert.Empty(t, problems, "within the apply timeout")
	assert.Equal(t, 4*time.Minute, wait, "looked at again when it runs out")

	w, s = unapplied(10*time.Minute, map[string]string{KeySync: "Synced"})
	problems, wait, err = e.Warnings(ctx, now, w, s)
	require.NoError(t, err)
	assert.Zero(t, wait)
	require.Len(t, problems, 2)
	assert.Equal(t, v1alpha1.ReasonNotApplied, problems[0].Reason)
	assert.Contains(t, problems[0].Message, "the cluster is unavailable (ManagedClusterConditionAvailable Unknown since 2026-11-25T11:00:00Z")
	assert.Equal(t, v1alpha1.ReasonResourcesNotReported, problems[1].Reason)
	assert.Contains(t, problems[1].Message, "the gitops addon, whose agent summarises them, is not enabled on the cluster")

	e.HubOnly = true
	problems, _, err = e.Warnings(ctx, now, w, s)
	require.NoError(t, err)
	require.Len(t, problems, 2)
	assert.Contains(t, problems[1].Message, "this installation is hub-only")
}
