package gitopscluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// nextClaimant is the live GitOpsCluster, other than gc, that wants cluster too (its
// Placement decides it and want says it needs the object), first by namespace and name;
// nil when none does. A contested object goes to it instead of being deleted, so that a
// cluster changing hands keeps its GitOps stack and its Argo CD registration.
func (r *Reconciler) nextClaimant(ctx context.Context, gc *appsv1beta1.GitOpsCluster, cluster string,
	want func(*appsv1beta1.GitOpsCluster) bool) (*appsv1beta1.GitOpsCluster, error) {
	others, err := r.otherLiveGitOpsClusters(ctx, gc)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(others, func(a, b appsv1beta1.GitOpsCluster) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range others {
		o := &others[i]
		if !want(o) || o.Spec.PlacementRef == nil || o.Spec.PlacementRef.Name == "" ||
			(o.Spec.PlacementRef.Namespace != "" && o.Spec.PlacementRef.Namespace != o.Namespace) {
			continue
		}
		clusters, err := r.decidedClusters(ctx, o.Namespace, o.Spec.PlacementRef.Name)
		if err != nil {
			return nil, err
		}
		if slices.Contains(clusters, cluster) {
			return o, nil
		}
	}
	return nil, nil
}

// handOverIfClaimed hands obj, which gc lets go, to the next GitOpsCluster that wants
// cluster, if there is one, and tells whether it did.
func (r *Reconciler) handOverIfClaimed(ctx context.Context, gc *appsv1beta1.GitOpsCluster, obj client.Object, cluster string,
	want func(*appsv1beta1.GitOpsCluster) bool) (bool, error) {
	next, err := r.nextClaimant(ctx, gc, cluster, want)
	if err != nil || next == nil {
		return false, err
	}
	return true, r.handOver(ctx, gc, next, obj)
}

// handOver makes next the owner of obj: its owner labels and annotation change, nothing
// else; next's own reconcile, which the change wakes, brings the rest to what it wants.
func (r *Reconciler) handOver(ctx context.Context, gc, next *appsv1beta1.GitOpsCluster, obj client.Object) error {
	labels := obj.GetLabels()
	for k, v := range ownerLabels(next) {
		labels[k] = v
	}
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	delete(annotations, constants.AnnotationOwner)
	for k, v := range ownerAnnotations(next) {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k] = v
	}
	obj.SetAnnotations(annotations)
	if err := r.Client.Update(ctx, obj); err != nil {
		return fmt.Errorf("handing %s %s over to GitOpsCluster %s/%s: %w", kindOf(obj), client.ObjectKeyFromObject(obj), next.Namespace, next.Name, err)
	}
	r.event(gc, corev1.EventTypeNormal, "HandedOver", "Handed %s %s over to GitOpsCluster %s/%s, which selects the cluster too",
		kindOf(obj), client.ObjectKeyFromObject(obj), next.Namespace, next.Name)
	return nil
}

// wantsAddon and wantsSecretIn say which GitOpsClusters need the object being let go.
func wantsAddon(o *appsv1beta1.GitOpsCluster) bool { return o.AddonEnabled() }

func wantsSecretIn(namespace string) func(*appsv1beta1.GitOpsCluster) bool {
	return func(o *appsv1beta1.GitOpsCluster) bool { return o.Spec.ArgoServer.ArgoNamespace == namespace }
}
