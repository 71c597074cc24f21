package gitopscluster

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// resolvePlacement reads the Placement a GitOpsCluster refers to and the clusters all of
// its PlacementDecisions decided. An unresolvable reference is a result, not an error:
// it is reported in the status with the fix.
func (r *Reconciler) resolvePlacement(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (placementResult, error) {
	ref := gc.Spec.PlacementRef
	if ref == nil || ref.Name == "" {
		return placementResult{
			reason:  appsv1beta1.ReasonPlacementNotFound,
			message: "spec.placementRef.name is empty. Fix: name a Placement in namespace " + gc.Namespace + ".",
		}, nil
	}
	if ref.Namespace != "" && ref.Namespace != gc.Namespace {
		return placementResult{
			reason: appsv1beta1.ReasonPlacementNamespace,
			message: fmt.Sprintf("spec.placementRef names Placement %q in namespace %q, but a GitOpsCluster in namespace %q can only use a Placement in its own "+
				"namespace. "+
				"Fix: create the Placement (and a ManagedClusterSetBinding) in namespace %q and remove placementRef.namespace, or create this GitOpsCluster in namespace "+
				"%q.",
				ref.Name, ref.Namespace, gc.Namespace, gc.Namespace, ref.Namespace),
		}, nil
	}

	placement := &clusterv1beta1.Placement{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: gc.Namespace, Name: ref.Name}, placement); err != nil {
		if apierrors.IsNotFound(err) {
			return placementResult{
				reason: appsv1beta1.ReasonPlacementNotFound,
				message: fmt.Sprintf("Placement %q not found in namespace %q. Fix: create it there, or set spec.placementRef.name to a Placement of namespace %q.",
					ref.Name, gc.Namespace, gc.Namespace),
			}, nil
		}
		return placementResult{}, fmt.Errorf("reading Placement %s/%s: %w", gc.Namespace, ref.Name, err)
	}

	clusters, err := r.decidedClusters(ctx, gc.Namespace, ref.Name)
	if err != nil {
		return placementResult{}, err
	}
	return placementResult{resolved: true, clusters: clusters}, nil
}

// decidedClusters unions the decisions of every PlacementDecision of a Placement: a
// Placement splits its decisions over several objects (decision groups, 100 per object).
func (r *Reconciler) decidedClusters(ctx context.Context, namespace, placement string) ([]string, error) {
	decisions := &clusterv1beta1.PlacementDecisionList{}
	if err := r.Client.List(ctx, decisions, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: placement}); err != nil {
		return nil, fmt.Errorf("listing PlacementDecisions of %s/%s: %w", namespace, placement, err)
	}
	seen := map[string]bool{}
	var clusters []string
	for _, d := range decisions.Items {
		for _, decision := range d.Status.Decisions {
			if decision.ClusterName != "" && !seen[decision.ClusterName] {
				seen[decision.ClusterName] = true
				clusters = append(clusters, decision.ClusterName)
			}
		}
	}
	sort.Strings(clusters)
	return clusters, nil
}
