// Package clusterwake wakes the pull model's controllers when a managed cluster, or its
// gitops-addon ManagedClusterAddOn, changes in what they read of it: the cluster's
// acceptance and availability (why a ManifestWork is not applied) and whether it is the
// hub itself; the addon's availability, whether its agent can write resource summaries
// (why no resources come), and the Argo CD it found there with the choice for it. The
// propagation and report controllers wake on the same view, so that the hub Application
// and the MulticlusterApplicationSetReport are rebuilt from the same facts; a change
// outside the view (a label, a lease renewal) wakes nothing.
package clusterwake

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
)

// Wake is what a controller reconciles for a cluster: the Applications, or the
// ApplicationSets, with a pull Application on it.
type Wake func(ctx context.Context, cluster string) []reconcile.Request

// OnClusterChanges enqueues what wake returns for a cluster that appears, goes, or
// changes in its view.
func OnClusterChanges(wake Wake) handler.TypedEventHandler[*clusterv1.ManagedCluster, reconcile.Request] {
	return onChanges(wake, func(mc *clusterv1.ManagedCluster) string { return mc.Name }, clusterView)
}

// clusterView is what the explanation of an unapplied work reads of a cluster, and what
// tells whether it is the hub itself (its local-cluster label and cluster ID claim).
func clusterView(mc *clusterv1.ManagedCluster) string {
	hub := fmt.Sprint(mc.Labels[localcluster.Label], localcluster.ClusterID(mc))
	c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	if c == nil {
		return fmt.Sprint(hub, mc.Spec.HubAcceptsClient)
	}
	return fmt.Sprint(hub, mc.Spec.HubAcceptsClient, c.Status, c.Reason, c.Message)
}

// OnAddonChanges enqueues what wake returns for the cluster of a gitops-addon
// ManagedClusterAddOn that appears, goes or changes in its view.
func OnAddonChanges(wake Wake) handler.TypedEventHandler[*addonv1beta1.ManagedClusterAddOn, reconcile.Request] {
	return onChanges(wake, func(a *addonv1beta1.ManagedClusterAddOn) string { return a.Namespace }, addonView)
}

// addonView is what the explanation of missing resources reads of a cluster's addon,
// and what decides whether the Argo CD there may run pulled Applications.
func addonView(a *addonv1beta1.ManagedClusterAddOn) string {
	return fmt.Sprint(meta.IsStatusConditionTrue(a.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable),
		meta.IsStatusConditionTrue(a.Status.Conditions, contract.ConditionApplicationResourcesNotReported),
		contract.ExistingArgoCDOf(a.Status.Conditions), contract.SettingsOf(a.Annotations).ExistingArgoCD == contract.ExistingArgoCDUse)
}

// onChanges enqueues what wake returns for the cluster of an object that appears, goes,
// or changes in its view.
func onChanges[T client.Object](wake Wake, cluster func(T) string, view func(T) string) handler.TypedEventHandler[T, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(ctx context.Context, q queue, o T) {
		for _, req := range wake(ctx, cluster(o)) {
			q.Add(req)
		}
	}
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[T], q queue) {
			// The initial list at start-up wakes nothing: every Application and
			// ManifestWork is reconciled then anyway, and the pull cache, listed here,
			// may not have started yet.
			if !e.IsInInitialList {
				enqueue(ctx, q, e.Object)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[T], q queue) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[T], q queue) {
			if view(e.ObjectOld) != view(e.ObjectNew) {
				enqueue(ctx, q, e.ObjectNew)
			}
		},
	}
}
