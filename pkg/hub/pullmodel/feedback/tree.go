package feedback

import (
	"fmt"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// Tree is the spoke agent's resource tree of an Application, decoded once.
type Tree struct {
	// Shipped is the tree as the agent bounded it, Value its encoding as reported.
	Shipped apptree.Shipped
	Value   string
	// ok: reported and readable; err: reported and not.
	ok  bool
	err error
}

// Tree decodes the spoke agent's resource tree, if the spoke reported one.
func (s Status) Tree() Tree {
	value, ok := s.Get(KeyTree)
	if !ok || value == "" {
		return Tree{}
	}
	shipped, err := apptree.Decode(value)
	return Tree{Shipped: shipped, Value: value, ok: err == nil, err: err}
}

// Readable says whether the spoke reported a tree and it could be decoded: only such a
// tree is drawn; any other is not the current one.
func (t Tree) Readable() bool { return t.ok }

// Problems are the warnings about the tree the hub's Argo CD UI draws: bounded, or
// unreadable. A hub that draws no trees has none to give.
func (t Tree) Problems(cluster string) []pullnames.Problem {
	shipped, ok, err := t.Shipped, t.ok, t.err
	switch {
	case err != nil:
		return []pullnames.Problem{{Reason: v1alpha1.ReasonResourceTreeUnreadable, Message: fmt.Sprintf(
			"the resource tree cluster %s reports cannot be read (%v): upgrade the hub manager to the version of the cluster's gitops-addon agent",
			cluster, err)}}
	case ok && (shipped.ManagedOnly || shipped.Omitted > 0 || shipped.DiffOmitted):
		return []pullnames.Problem{{Reason: v1alpha1.ReasonResourceTreeBounded, Message: fmt.Sprintf("on cluster %s %s", cluster, shipped.Summary())}}
	}
	return nil
}
