package feedback

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
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
	_, small, err := apptree.Bound(wideTree(2), nil)
	require.NoError(t, err)
	_, large, err := apptree.Bound(wideTree(apptree.MaxNodes), nil)
	require.NoError(t, err)
	noise := make([]byte, apptree.MaxBytes)
	_, err = rand.Read(noise)
	require.NoError(t, err)
	_, diffLeftOut, err := apptree.Bound(wideTree(2), []apptree.Diff{{Kind: "ConfigMap", Name: "noise", TargetState: base64.StdEncoding.EncodeToString(noise)}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		value    string
		readable bool
		reason   string
		says     string
	}{
		{name: "a small tree: drawn, nothing to say", value: small, readable: true},
		{name: "over the bound: its managed resources drawn, and a warning", value: large, readable: true, reason: v1alpha1.ReasonResourceTreeBounded,
			says: "on cluster c1 the resource tree has 2000 nodes, over the bound of 1000 nodes or 48 KiB: the hub shows its 1000 managed resources"},
		{name: "a diff over the bound beside the tree: the tree drawn, and a warning", value: diffLeftOut, readable: true,
			reason: v1alpha1.ReasonResourceTreeBounded, says: "on cluster c1 the resource tree has 4 nodes; its diff does not fit in 48 KiB beside the tree"},
		{name: "unreadable: not drawn, a warning naming the fix", value: "garbage!", reason: v1alpha1.ReasonResourceTreeUnreadable, says: "upgrade the hub manager"},
		{name: "no tree reported (an older agent): nothing to draw, nothing to say"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Status{values: map[string]string{}}
			if tc.value != "" {
				s.values[KeyTree] = tc.value
			}
			tree := s.Tree()
			assert.Equal(t, tc.readable, tree.Readable())
			problems := tree.Problems("c1")
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
