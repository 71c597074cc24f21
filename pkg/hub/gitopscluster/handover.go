package gitopscluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// claimants are the live GitOpsClusters other than gc with the clusters their Placements
// decide, in the order a contested object goes to them (namespace, then name). One
// reconcile lets go of many objects (a Placement shrinking by hundreds of clusters):
// the GitOpsClusters are listed and their decisions resolved once, on the first object
// let go, not once per object.
type claimants struct {
	r      *Reconciler
	gc     *appsv1beta1.GitOpsCluster
	loaded bool
	list   []claimant
}

type claimant struct {
	gc       *appsv1beta1.GitOpsCluster
	clusters map[string]bool
}

func (r *Reconciler) claimants(gc *appsv1beta1.GitOpsCluster) *claimants {
	return &claimants{r: r, gc: gc}
}

func (c *claimants) load(ctx context.Context) error {
	if c.loaded {
		return nil
	}
	others, err := c.r.otherLiveGitOpsClusters(ctx, c.gc)
	if err != nil {
		return err
	}
	slices.SortFunc(others, func(a, b appsv1beta1.GitOpsCluster) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range others {
		o := &others[i]
		if o.Spec.PlacementRef == nil || o.Spec.PlacementRef.Name == "" ||
			(o.Spec.PlacementRef.Namespace != "" && o.Spec.PlacementRef.Namespace != o.Namespace) {
			continue
		}
		decided, err := c.r.decidedClusters(ctx, o.Namespace, o.Spec.PlacementRef.Name)
		if err != nil {
			return err
		}
		clusters := make(map[string]bool, len(decided))
		for _, name := range decided {
			clusters[name] = true
		}
		c.list = append(c.list, claimant{gc: o, clusters: clusters})
	}
	c.loaded = true
	return nil
}

// next is the first claimant whose Placement decides cluster and that wants the object
// (want); nil when none does. A contested object goes to it instead of being deleted, so
// that a cluster changing hands keeps its GitOps stack and its Argo CD registration.
func (c *claimants) next(ctx context.Context, cluster string, want func(*appsv1beta1.GitOpsCluster) bool) (*appsv1beta1.GitOpsCluster, error) {
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	for _, o := range c.list {
		if o.clusters[cluster] && want(o.gc) {
			return o.gc, nil
		}
	}
	return nil, nil
}

// handOverIfClaimed hands obj, which gc lets go, to the next GitOpsCluster that wants
// cluster, if there is one, and tells whether it did.
func (c *claimants) handOverIfClaimed(ctx context.Context, obj client.Object, cluster string,
	want func(*appsv1beta1.GitOpsCluster) bool) (bool, error) {
	next, err := c.next(ctx, cluster, want)
	if err != nil || next == nil {
		return false, err
	}
	return true, c.r.handOver(ctx, c.gc, next, obj)
}

// handOver makes next the owner of obj: its owner labels and annotation change, nothing
// else; next's own reconcile, which the change wakes, brings the rest to what it wants.
func (r *Reconciler) handOver(ctx context.Context, gc, next *appsv1beta1.GitOpsCluster, obj client.Object) error {
	ownership.Transfer(obj, next)
	if err := r.Client.Update(ctx, obj); err != nil {
		return fmt.Errorf("handing %s %s over to GitOpsCluster %s/%s: %w", ownership.KindOf(obj), client.ObjectKeyFromObject(obj), next.Namespace, next.Name, err)
	}
	r.event(gc, corev1.EventTypeNormal, appsv1beta1.ReasonHandedOver, "Handed %s %s over to GitOpsCluster %s/%s, which selects the cluster too",
		ownership.KindOf(obj), client.ObjectKeyFromObject(obj), next.Namespace, next.Name)
	return nil
}

// wantsAddon and wantsSecretIn say which GitOpsClusters need the object being let go.
func wantsAddon(o *appsv1beta1.GitOpsCluster) bool { return o.AddonEnabled() }

func wantsSecretIn(namespace string) func(*appsv1beta1.GitOpsCluster) bool {
	return func(o *appsv1beta1.GitOpsCluster) bool { return o.ArgoNamespace() == namespace }
}
