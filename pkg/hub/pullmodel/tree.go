package pullmodel

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/treecache"
)

// Reasons of the warnings about an Application's resource tree.
const (
	// ReasonResourceTreeBounded: the tree is over apptree's bounds; the hub's Argo CD UI
	// shows its managed resources only.
	ReasonResourceTreeBounded = "ResourceTreeBounded"
	// ReasonResourceTreeUnreadable: the tree could not be decoded (a newer agent's format,
	// or out of bounds).
	ReasonResourceTreeUnreadable = "ResourceTreeUnreadable"
)

// reportedTree is the spoke agent's resource tree of an Application, decoded once.
type reportedTree struct {
	shipped apptree.Shipped
	value   string
	// ok: reported and readable; err: reported and not.
	ok  bool
	err error
}

// tree decodes the spoke agent's resource tree, if the spoke reported one.
func (s spokeStatus) tree() reportedTree {
	value, ok := s.get(FeedbackTree)
	if !ok || value == "" {
		return reportedTree{}
	}
	shipped, err := apptree.Decode(value)
	return reportedTree{shipped: shipped, value: value, ok: err == nil, err: err}
}

// treeProblems are the warnings about the tree the hub's Argo CD UI shows: bounded, or
// unreadable. None where the hub does not write trees.
func treeProblems(trees *treecache.Writer, cluster string, t reportedTree) []pullnames.Problem {
	if trees == nil {
		return nil
	}
	shipped, ok, err := t.shipped, t.ok, t.err
	switch {
	case err != nil:
		return []pullnames.Problem{{Reason: ReasonResourceTreeUnreadable, Message: fmt.Sprintf("the resource tree cluster %s reports cannot be read (%v): "+
			"upgrade the hub manager to the version of the cluster's gitops-addon agent", cluster, err)}}
	case ok && (shipped.ManagedOnly || shipped.Omitted > 0):
		return []pullnames.Problem{{Reason: ReasonResourceTreeBounded, Message: fmt.Sprintf("on cluster %s %s", cluster, shipped.Summary())}}
	}
	return nil
}

// writeTree puts the tree the spoke reported where the hub's argocd-server reads it.
// A tree no longer reported (the agent's reports turned off) or unreadable is removed: a
// stale tree would be drawn as the current one.
func writeTree(ctx context.Context, trees *treecache.Writer, app types.NamespacedName, t reportedTree) error {
	switch {
	case trees == nil:
		return nil
	case !t.ok:
		return trees.Forget(ctx, app)
	}
	return trees.Write(ctx, app, t.shipped, t.value)
}
