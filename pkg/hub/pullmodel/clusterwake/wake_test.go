package clusterwake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
)

// enqueued is a queue that keeps the names it is given, in order.
type enqueued struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	names []string
}

func (q *enqueued) Add(req reconcile.Request) { q.names = append(q.names, req.Name) }

// woken are the names an event enqueues: the cluster's, as byName wakes it.
func woken(fire func(q workqueue.TypedRateLimitingInterface[reconcile.Request])) []string {
	q := &enqueued{}
	fire(q)
	return q.names
}

func byName(_ context.Context, cluster string) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: cluster}}}
}

// TestClusterChangesInTheViewWake: a cluster's change wakes its Applications only when it
// changes what the pull model reads of it.
func TestClusterChangesInTheViewWake(t *testing.T) {
	ctx := context.Background()
	h := OnClusterChanges(byName)
	cluster := func(edit func(mc *clusterv1.ManagedCluster)) *clusterv1.ManagedCluster {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
			Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable,
				Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable"}}}}
		edit(mc)
		return mc
	}
	update := func(edit func(mc *clusterv1.ManagedCluster)) []string {
		return woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.TypedUpdateEvent[*clusterv1.ManagedCluster]{ObjectOld: cluster(func(*clusterv1.ManagedCluster) {}), ObjectNew: cluster(edit)}, q)
		})
	}
	assert.Empty(t, woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Create(ctx, event.TypedCreateEvent[*clusterv1.ManagedCluster]{Object: cluster(func(*clusterv1.ManagedCluster) {}), IsInInitialList: true}, q)
	}), "the initial list")
	assert.Equal(t, []string{"cluster1"}, woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Create(ctx, event.TypedCreateEvent[*clusterv1.ManagedCluster]{Object: cluster(func(*clusterv1.ManagedCluster) {})}, q)
	}), "a cluster that appears")
	assert.Equal(t, []string{"cluster1"}, woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Delete(ctx, event.TypedDeleteEvent[*clusterv1.ManagedCluster]{Object: cluster(func(*clusterv1.ManagedCluster) {})}, q)
	}), "a cluster that goes")
	assert.Empty(t, update(func(mc *clusterv1.ManagedCluster) { mc.Labels = map[string]string{"team": "blue"} }), "a label of no meaning here")
	assert.Equal(t, []string{"cluster1"}, update(func(mc *clusterv1.ManagedCluster) { mc.Status.Conditions[0].Status = metav1.ConditionUnknown }),
		"the lease lost")
	assert.Equal(t, []string{"cluster1"}, update(func(mc *clusterv1.ManagedCluster) { mc.Spec.HubAcceptsClient = false }), "no longer accepted")
	assert.Equal(t, []string{"cluster1"}, update(func(mc *clusterv1.ManagedCluster) { mc.Labels = map[string]string{localcluster.Label: "true"} }),
		"now known as the hub itself")
}

// TestAddonChangesInTheViewWake: an addon's change wakes the Applications of its cluster
// only when it changes what the pull model reads of it.
func TestAddonChangesInTheViewWake(t *testing.T) {
	ctx := context.Background()
	h := OnAddonChanges(byName)
	addon := func(edit func(a *addonv1beta1.ManagedClusterAddOn)) *addonv1beta1.ManagedClusterAddOn {
		a := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: contract.AddonName}}
		edit(a)
		return a
	}
	update := func(edit func(a *addonv1beta1.ManagedClusterAddOn)) []string {
		return woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.TypedUpdateEvent[*addonv1beta1.ManagedClusterAddOn]{
				ObjectOld: addon(func(*addonv1beta1.ManagedClusterAddOn) {}), ObjectNew: addon(edit)}, q)
		})
	}
	assert.Empty(t, update(func(a *addonv1beta1.ManagedClusterAddOn) { a.Labels = map[string]string{"x": "y"} }), "a label of no meaning here")
	assert.Equal(t, []string{"cluster1"}, update(func(a *addonv1beta1.ManagedClusterAddOn) {
		a.Status.Conditions = []metav1.Condition{{Type: addonv1beta1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue}}
	}), "the agent available")
	assert.Equal(t, []string{"cluster1"}, update(func(a *addonv1beta1.ManagedClusterAddOn) {
		a.Status.Conditions = []metav1.Condition{{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionTrue, Reason: contract.ExistingArgoCDOLM}}
	}), "an Argo CD gitops-addon did not create, found")
	assert.Equal(t, []string{"cluster1"}, update(func(a *addonv1beta1.ManagedClusterAddOn) {
		a.Annotations = map[string]string{contract.ExistingArgoCDPolicy: contract.ExistingArgoCDUse}
	}), "the choice UseExisting")
}
