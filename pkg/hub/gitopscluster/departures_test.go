package gitopscluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// departing answers Leaving from a map of cluster -> Applications.
type departing map[string][]string

func (d departing) Leaving(_ context.Context, cluster string) ([]string, error) {
	return d[cluster], nil
}

// TestAddonRemovalWaitsForDepartingApplications: a cluster that leaves the Placement keeps
// its addon (and so its Argo CD) while Applications leaving it with it still need pruning,
// says so on AddOnsReady, and loses it once they are gone or the drain timeout passed.
func TestAddonRemovalWaitsForDepartingApplications(t *testing.T) {
	ctx := context.Background()
	addonOf := func(c client.Client, cluster string) (*addonv1beta1.ManagedClusterAddOn, bool) {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		err := c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca)
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		require.NoError(t, err)
		return mca, mca.DeletionTimestamp.IsZero()
	}
	dropC2 := func(t *testing.T, c client.Client) {
		pd := &clusterv1beta1.PlacementDecision{}
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "gitops", Name: "p-decision-1"}, pd))
		pd.Status.Decisions = pd.Status.Decisions[:1]
		require.NoError(t, c.Update(ctx, pd)) // the fake has no status subresource for it
	}

	tests := []struct {
		name        string
		leaving     departing
		timeout     time.Duration
		wantKept    bool
		wantReason  string
		wantRequeue bool
	}{
		{name: "nothing leaving: removed at once", leaving: departing{}, wantKept: false, wantReason: appsv1beta1.ReasonAddOnsProgressing},
		{name: "an Application leaving: held, and said", leaving: departing{"c2": {"gitops/guestbook-c2"}}, timeout: time.Hour,
			wantKept: true, wantReason: appsv1beta1.ReasonWaitingForApplications, wantRequeue: true},
		{name: "another cluster's Application leaving: not held", leaving: departing{"c1": {"gitops/guestbook-c1"}}, timeout: time.Hour,
			wantKept: false, wantReason: appsv1beta1.ReasonAddOnsProgressing},
		{name: "past the drain timeout: removed anyway", leaving: departing{"c2": {"gitops/guestbook-c2"}}, timeout: time.Nanosecond,
			wantKept: false, wantReason: appsv1beta1.ReasonAddOnsProgressing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			r, c := newReconciler(t, append(placementObjects("p", "c1", "c2"), gc)...)
			reconcileOnce(t, r, gc)
			_, live := addonOf(c, "c2")
			require.True(t, live)

			dropC2(t, c)
			r.Departures, r.DrainTimeout = tt.leaving, tt.timeout
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
			require.NoError(t, err)
			got := &appsv1beta1.GitOpsCluster{}
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gc), got))

			_, kept := addonOf(c, "c2")
			assert.Equal(t, tt.wantKept, kept, "c2's addon kept")
			cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
			require.NotNil(t, cond)
			assert.Equal(t, tt.wantReason, cond.Reason, cond.Message)
			if tt.wantRequeue {
				assert.Contains(t, cond.Message, "gitops/guestbook-c2")
				assert.Contains(t, cond.Message, "c2 left the Placement")
				assert.Equal(t, drainRecheck, res.RequeueAfter, "looks again soon: the Applications' events do not reach this controller")

				r.Departures = departing{} // the Application went
				reconcileOnce(t, r, gc)
				_, kept = addonOf(c, "c2")
				assert.False(t, kept, "removed once nothing is leaving")
			}
		})
	}
}
