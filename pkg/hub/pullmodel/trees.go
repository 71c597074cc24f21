package pullmodel

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/treecache"
)

// forgetTree removes the tree this manager wrote for an Application that is gone or no
// longer pulled (a manager writes every pulled Application's tree once after its start, so
// it knows them all). A redis that is down holds up nothing: a tree left in a cache is
// drawn for no Application.
func (r *Reconciler) forgetTree(ctx context.Context, app types.NamespacedName) {
	if r.Trees == nil {
		return
	}
	if err := r.Trees.Forget(ctx, app); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "the resource tree stays in the hub Argo CD's redis")
	}
}

// writeTree puts the tree the spoke reported where the hub's argocd-server reads it.
// A tree no longer reported (the agent's reports turned off) or unreadable is removed: a
// stale tree would be drawn as the current one.
func writeTree(ctx context.Context, trees *treecache.Writer, app types.NamespacedName, t feedback.Tree) error {
	switch {
	case trees == nil:
		return nil
	case !t.Readable():
		return trees.Forget(ctx, app)
	}
	return trees.Write(ctx, app, t.Shipped, t.Value)
}
