package gitopscluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// The hub itself, registered as a managed cluster (Red Hat ACM's local-cluster), already
// runs its own Argo CD: the GitOps stack is never shipped there (a second operator would
// fight the hub's over the ArgoCD openshift-gitops, and removing the addon could delete
// it), and it is registered as the in-cluster destination Argo CD has for it, so that
// ApplicationSets over "all clusters" still include it.

// hubClusters maps each decided cluster that is the hub itself to the evidence.
type hubClusters map[string]localcluster.Evidence

// targets are the clusters of clusters that are not the hub: the only ones a
// ManagedClusterAddOn is created for.
func (h hubClusters) targets(clusters []string) []string {
	return slices.DeleteFunc(slices.Clone(clusters), func(c string) bool { return h[c].IsHub() })
}

// names are the hub clusters, sorted.
func (h hubClusters) names() []string {
	return slices.Sorted(maps.Keys(h))
}

// hubsAmong finds the decided clusters that are the hub itself.
func (r *Reconciler) hubsAmong(ctx context.Context, clusters []string) (hubClusters, error) {
	hubs := hubClusters{}
	for _, cluster := range clusters {
		evidence, err := r.Hub.OfCluster(ctx, r.Client, cluster)
		if err != nil {
			return nil, err
		}
		if evidence.IsHub() {
			hubs[cluster] = evidence
		}
	}
	return hubs, nil
}

// asInClusterDestination makes a hub cluster's Secret register Argo CD's in-cluster
// address. Its config carries no username, password or bearer token, so Argo CD reaches
// the hub with its own ServiceAccount (Argo CD's Cluster.RawRestConfig: in-cluster
// config for that address without credentials); name and labels stay the ManagedCluster's,
// so that ApplicationSets select and name it like every other cluster.
func asInClusterDestination(s *corev1.Secret) {
	s.Data["server"] = []byte(localcluster.InClusterServer)
}

// inClusterPlan says, per hub cluster, who registers Argo CD's in-cluster address when it
// is not this GitOpsCluster: Argo CD keeps one cluster per server address (it looks a
// destination up by address and takes the first Secret it finds), so there must never be
// two Secrets for it.
type inClusterPlan map[string]string

// planInClusterSecrets decides which hub cluster's Secret registers the in-cluster
// address: none when a Secret someone else wrote does already (a user's in-cluster
// Secret, most often), else the first hub cluster's; the others are said to be
// registered by that one. The Argo CD namespace is read uncached (our cache holds only
// our Secrets) once per GitOpsCluster after the manager starts, and then only while a hub
// cluster has no Secret of this GitOpsCluster: a steady state reads nothing. A Secret for
// the in-cluster address that someone adds beside ours is therefore seen at the next
// manager start, when ours makes way for it.
func (r *Reconciler) planInClusterSecrets(ctx context.Context, gc *appsv1beta1.GitOpsCluster, hubs hubClusters, owned map[string]bool) (inClusterPlan, error) {
	plan := inClusterPlan{}
	if len(hubs) == 0 {
		return plan, nil
	}
	names := hubs.names()
	holder, checked := r.inClusterHolders.Load(gc.UID)
	if !checked || r.unregistered(gc, names[0], owned) {
		found, err := r.foreignInClusterSecret(ctx, gc, names)
		if err != nil {
			return nil, err
		}
		r.inClusterHolders.Store(gc.UID, found)
		holder = found
	}
	if held, _ := holder.(string); held != "" {
		for _, cluster := range names {
			plan[cluster] = fmt.Sprintf("Secret %s, which this GitOpsCluster did not write", held)
		}
		return plan, nil
	}
	for _, cluster := range names[1:] {
		plan[cluster] = fmt.Sprintf("the Secret of cluster %s, the same hub", names[0])
	}
	return plan, nil
}

// foreignInClusterSecret names ("namespace/name") a cluster Secret of the Argo CD
// namespace that registers the in-cluster address and that is not one this GitOpsCluster
// keeps, adopts or removes for a hub cluster; "" when there is none.
func (r *Reconciler) foreignInClusterSecret(ctx context.Context, gc *appsv1beta1.GitOpsCluster, hubs []string) (string, error) {
	list := &corev1.SecretList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(gc.ArgoNamespace()), client.MatchingLabels{labelSecretType: "cluster"}); err != nil {
		return "", fmt.Errorf("listing the Argo CD cluster secrets in %s: %w", gc.ArgoNamespace(), err)
	}
	ours := map[string]bool{}
	for _, cluster := range hubs {
		for _, name := range append([]string{ClusterSecretName(cluster)}, acmClusterSecretNames(cluster)...) {
			ours[name] = true
		}
	}
	for i := range list.Items {
		s := &list.Items[i]
		// Argo CD compares server addresses without their trailing slashes.
		if strings.TrimRight(string(s.Data["server"]), "/") != localcluster.InClusterServer || ours[s.Name] {
			continue
		}
		if who, _ := ownership.Classify(s, gc); who != ownership.OwnedByIt {
			return s.Namespace + "/" + s.Name, nil
		}
	}
	return "", nil
}

// clusterIDChanged passes a ManagedCluster update that changes its ClusterClaim
// id.k8s.io, which decides whether it is the hub.
func clusterIDChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*clusterv1.ManagedCluster)
		updated, okNew := e.ObjectNew.(*clusterv1.ManagedCluster)
		return !okOld || !okNew || localcluster.ClusterID(old) != localcluster.ClusterID(updated)
	}}
}
