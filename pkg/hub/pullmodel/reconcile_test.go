package pullmodel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// readerCache serves the reconciler's cache reads from a client.
type readerCache struct {
	cache.Cache
	reader client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c readerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}

// TestCreateSchedulesTheApplyTimeoutCheck: the reconcile that creates a ManifestWork
// remembers the create (its watch echo wakes nothing) and so schedules, itself, the check
// of the apply timeout that the echo's reconcile scheduled before; the next reconcile,
// which sees the work pending, schedules it for what is left.
func TestCreateSchedulesTheApplyTimeoutCheck(t *testing.T) {
	r, c, app := fakeHubReconciler(t)
	now := r.Now().Time
	r.Now = func() metav1.Time { return metav1.NewTime(now) }
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)}

	res, err := r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, res.RequeueAfter, "the create schedules the apply-timeout check")
	works := &workv1.ManifestWorkList{}
	require.NoError(t, c.List(context.Background(), works))
	require.Len(t, works.Items, 1)
	assert.Equal(t, "cluster1", works.Items[0].Namespace)

	// A minute later another reconcile (a status report, say) sees the work pending since
	// it was shipped and schedules what is left.
	now = now.Add(time.Minute)
	res, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 4*time.Minute, res.RequeueAfter)
	assert.Empty(t, r.creates.versions, "a reconcile that read the work forgets its create")
}

// TestApplicationAimedAtTheHubIsRefused: once its cluster is known to be the hub itself
// (by label, or by its cluster ID claim under another name), a pull Application's
// ManifestWork goes and the Application says why, with the fix, in its PullModelError
// condition and an Event.
func TestApplicationAimedAtTheHubIsRefused(t *testing.T) {
	const hubID = "0c7a0c0e-1111-4222-8333-444455556666"
	tests := []struct {
		name     string
		makeHub  func(mc *clusterv1.ManagedCluster)
		evidence string
	}{
		{name: "by label", evidence: "it has the label local-cluster=true",
			makeHub: func(mc *clusterv1.ManagedCluster) { mc.Labels = map[string]string{localcluster.Label: "true"} }},
		{name: "by cluster ID under another name", evidence: "its ClusterClaim id.k8s.io is " + hubID + ", the hub's own cluster ID",
			makeHub: func(mc *clusterv1.ManagedCluster) {
				mc.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: localcluster.ClaimClusterID, Value: hubID}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r, c, app := fakeHubReconciler(t)
			r.Hub = localcluster.Hub{ID: hubID}
			recorder := events.NewFakeRecorder(10)
			r.Recorder = recorder
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)}
			_, err := r.Reconcile(ctx, req)
			require.NoError(t, err)
			works := &workv1.ManifestWorkList{}
			require.NoError(t, c.List(ctx, works))
			require.Len(t, works.Items, 1, "shipped while cluster1 is not known as the hub")

			mc := &clusterv1.ManagedCluster{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "cluster1"}, mc))
			tt.makeHub(mc)
			require.NoError(t, c.Update(ctx, mc))
			_, err = r.Reconcile(ctx, req)
			require.NoError(t, err)

			require.NoError(t, c.List(ctx, works))
			assert.Empty(t, works.Items, "no ManifestWork for the hub")
			got := newApplication()
			require.NoError(t, c.Get(ctx, req.NamespacedName, got))
			refused := findAppCondition(got, v1alpha1.ConditionPullModelError)
			require.NotNil(t, refused)
			message, _ := refused["message"].(string)
			assert.Contains(t, message, v1alpha1.ReasonHubClusterNotPulled+": cluster cluster1 is the hub itself ("+tt.evidence)
			assert.Contains(t, message, "remove the label "+pullnames.LabelPull)
			assert.Contains(t, <-recorder.Events, v1alpha1.ReasonHubClusterNotPulled)
		})
	}
}
