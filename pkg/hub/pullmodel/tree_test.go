package pullmodel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/treecache"
)

// wideTree is n Deployments with a Pod each: 2n nodes.
func wideTree(n int) apptree.Tree {
	var t apptree.Tree
	for i := range n {
		d := apptree.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "big", Name: fmt.Sprintf("app-%04d", i)}
		t.Nodes = append(t.Nodes, apptree.Node{Ref: d},
			apptree.Node{Ref: apptree.Ref{Version: "v1", Kind: "Pod", Namespace: "big", Name: fmt.Sprintf("app-%04d-pod", i)}, ParentRefs: []apptree.Ref{d}})
	}
	return t
}

func TestTreeProblems(t *testing.T) {
	_, small, err := apptree.Bound(wideTree(2))
	require.NoError(t, err)
	_, large, err := apptree.Bound(wideTree(apptree.MaxNodes))
	require.NoError(t, err)
	writer := &treecache.Writer{}
	for _, tc := range []struct {
		name   string
		trees  *treecache.Writer
		value  string
		reason string
		says   string
	}{
		{name: "a small tree: nothing to say", trees: writer, value: small},
		{name: "over the bound: its managed resources, and a warning", trees: writer, value: large, reason: ReasonResourceTreeBounded,
			says: "on cluster c1 the resource tree has 2000 nodes, over the bound of 1000 nodes or 48 KiB: the hub shows its 1000 managed resources"},
		{name: "unreadable: a warning naming the fix", trees: writer, value: "garbage!", reason: ReasonResourceTreeUnreadable, says: "upgrade the hub manager"},
		{name: "no trees on this hub: nothing to say", value: large},
		{name: "no tree reported (an older agent): nothing to say", trees: writer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spokeStatus{values: map[string]string{}}
			if tc.value != "" {
				s.values[FeedbackTree] = tc.value
			}
			problems := treeProblems(tc.trees, "c1", s.tree())
			if tc.reason == "" {
				assert.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1)
			assert.Equal(t, tc.reason, problems[0].Reason)
			assert.Contains(t, problems[0].Message, tc.says)
		})
	}
}
