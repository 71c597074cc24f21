package pullmodel

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// ClusterExists reads the ManagedCluster from the manager's cache.
func (r *Reconciler) ClusterExists(ctx context.Context, cluster string) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// HubEvidence tells, from the ManagedCluster in the manager's cache, whether cluster is
// the hub itself, and by which rules.
func (r *Reconciler) HubEvidence(ctx context.Context, cluster string) (localcluster.Evidence, error) {
	return r.Hub.OfCluster(ctx, r.Client, cluster)
}

// ClusterPlaced looks the cluster up in the index of PlacementDecisions by namespace and
// cluster: one cached lookup, whatever the number of decisions.
func (r *Reconciler) ClusterPlaced(ctx context.Context, namespace, cluster string) (bool, error) {
	list := &clusterv1beta1.PlacementDecisionList{}
	// Only counted: the cached decisions are not copied.
	if err := r.Client.List(ctx, list, client.MatchingFields{IndexDecisionByCluster: namespace + "/" + cluster}, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	return len(list.Items) > 0, nil
}

// AppProject reads an AppProject from the pull model's cache.
func (r *Reconciler) AppProject(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(pullnames.AppProjectGVK)
	err := r.Cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return p, nil
}

// addonEnabled says whether the cluster has the gitops-addon ManagedClusterAddOn.
func (r *Reconciler) addonEnabled(ctx context.Context, cluster string) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the gitops-addon ManagedClusterAddOn of %s: %w", cluster, err)
	}
	return true, nil
}
