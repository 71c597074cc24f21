package gitopscluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// TestAStuckDeletionIsExplained: a GitOpsCluster whose deletion waits longer than
// StuckAfter for a ManagedClusterAddOn says on its status which cluster and which
// finalizers it waits for, once; before that it only asks to be woken at the threshold.
func TestAStuckDeletionIsExplained(t *testing.T) {
	deleting := func(since time.Duration) (*appsv1beta1.GitOpsCluster, *addonv1beta1.ManagedClusterAddOn) {
		gc := gitOpsCluster("gc", "p", true)
		gc.Finalizers = []string{Finalizer}
		gc.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-since)}
		held := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{
			Namespace: "c1", Name: contract.AddonName, Labels: ownership.Labels(gc),
			Finalizers: []string{"cluster.open-cluster-management.io/addon-pre-delete"},
		}}
		return gc, held
	}
	t.Run("just deleted: woken when the threshold passes, nothing written", func(t *testing.T) {
		gc, held := deleting(time.Minute)
		r, c := newReconciler(t, append(placementObjects("p", "c1"), gc, held)...)
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
		require.NoError(t, err)
		assert.InDelta(t, (StuckAfter - time.Minute).Seconds(), res.RequeueAfter.Seconds(), 5)
		got := &appsv1beta1.GitOpsCluster{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gc), got))
		assert.Nil(t, meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionReady))
	})
	t.Run("waiting longer than the threshold: the status names the cluster and its finalizers, once", func(t *testing.T) {
		gc, held := deleting(StuckAfter + time.Minute)
		r, c := newReconciler(t, append(placementObjects("p", "c1"), gc, held)...)
		reconcileDeleted(t, r, gc)
		got := &appsv1beta1.GitOpsCluster{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gc), got))
		ready := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionReady)
		require.NotNil(t, ready)
		assert.Equal(t, metav1.ConditionFalse, ready.Status)
		assert.Equal(t, appsv1beta1.ReasonWaitingForAddOnRemoval, ready.Reason)
		assert.Contains(t, ready.Message, "cluster c1 (finalizers cluster.open-cluster-management.io/addon-pre-delete)")
		assert.Contains(t, got.Finalizers, Finalizer, "still waiting: the finalizer stays")

		reconcileDeleted(t, r, got)
		again := &appsv1beta1.GitOpsCluster{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gc), again))
		assert.Equal(t, got.ResourceVersion, again.ResourceVersion, "no write while nothing changed")
	})
}

// TestAStuckAddonRemovalIsExplained: a ManagedClusterAddOn removed because its cluster
// left the Placement, still there after StuckAfter, is named on the GitOpsCluster's
// AddOnsReady condition with its finalizers; one removed recently only schedules a look.
func TestAStuckAddonRemovalIsExplained(t *testing.T) {
	leaving := func(name string, since time.Duration) *addonv1beta1.ManagedClusterAddOn {
		return &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{
			Namespace: name, Name: contract.AddonName, Labels: ownership.Labels(gitOpsCluster("gc", "p", true)),
			Finalizers:        []string{"cluster.open-cluster-management.io/addon-pre-delete"},
			DeletionTimestamp: &metav1.Time{Time: time.Now().Add(-since)},
		}}
	}
	t.Run("recently removed: a look is scheduled, no problem yet", func(t *testing.T) {
		gc := gitOpsCluster("gc", "p", true)
		r, c := newReconciler(t, append(placementObjects("p", "c1"), gc, leaving("gone", time.Minute))...)
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
		require.NoError(t, err)
		assert.InDelta(t, (StuckAfter - time.Minute).Seconds(), res.RequeueAfter.Seconds(), 5)
		got := &appsv1beta1.GitOpsCluster{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gc), got))
		assert.NotContains(t, meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady).Message, "Removing the addon")
	})
	t.Run("removal waiting longer than the threshold: named with its finalizers", func(t *testing.T) {
		gc := gitOpsCluster("gc", "p", true)
		r, c := newReconciler(t, append(placementObjects("p", "c1"), gc, leaving("gone", StuckAfter+time.Minute))...)
		reconcileOnce(t, r, gc)
		got := &appsv1beta1.GitOpsCluster{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gc), got))
		addons := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
		require.NotNil(t, addons)
		assert.Equal(t, metav1.ConditionFalse, addons.Status)
		assert.Contains(t, addons.Message, "cluster gone (finalizers cluster.open-cluster-management.io/addon-pre-delete)")
	})
}
