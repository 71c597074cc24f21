package apptree

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guestbook is the seed's tree as the spoke's Argo CD keeps it: a Deployment, its
// ReplicaSet and Pod, a Service and its EndpointSlice.
func guestbook() Tree {
	dep := Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", UID: "d"}
	rs := Ref{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "guestbook", Name: "guestbook-ui-5d8", UID: "r"}
	svc := Ref{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", UID: "s"}
	return Tree{Nodes: []Node{
		{Ref: svc, Health: &Health{Status: "Healthy"}},
		{Ref: dep, Health: &Health{Status: "Healthy"}, Images: []string{"gcr.io/heptio-images/ks-guestbook-demo:0.2"}},
		{Ref: rs, ParentRefs: []Ref{dep}, Info: []Info{{Name: "Revision", Value: "Rev:1"}}},
		{Ref: Ref{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: "guestbook-ui-5d8-x", UID: "p"}, ParentRefs: []Ref{rs},
			Info: []Info{{Name: "Status Reason", Value: "Running"}, {Name: "Containers", Value: "1/1"}}, Health: &Health{Status: "Healthy"}},
		{Ref: Ref{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice", Namespace: "guestbook", Name: "guestbook-ui-abc"},
			ParentRefs: []Ref{svc}},
	}}
}

// wide is a tree of n Deployments with a Pod each.
func wide(n int) Tree {
	var t Tree
	for i := range n {
		d := Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "big", Name: fmt.Sprintf("app-%04d", i), UID: fmt.Sprintf("uid-d-%d", i)}
		t.Nodes = append(t.Nodes, Node{Ref: d, Health: &Health{Status: "Healthy"}},
			Node{Ref: Ref{Version: "v1", Kind: "Pod", Namespace: "big", Name: fmt.Sprintf("app-%04d-pod", i), UID: fmt.Sprintf("uid-p-%d", i)},
				ParentRefs: []Ref{d}, Info: []Info{{Name: "Node", Value: "node-" + fmt.Sprint(i)}}})
	}
	return t
}

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		name            string
		tree            Tree
		managedOnly     bool
		shown, omitted  int
		total           int
		summaryContains string
	}{
		{name: "a small tree crosses whole", tree: guestbook(), shown: 5, total: 5, summaryContains: "has 5 nodes"},
		{name: "over MaxNodes: the managed resources", tree: wide(MaxNodes/2 + 1), managedOnly: true, shown: MaxNodes/2 + 1, total: MaxNodes + 2,
			summaryContains: "shows its 501 managed resources"},
		{name: "managed resources over MaxBytes: cut", tree: wide(5000), managedOnly: true, total: 10000, summaryContains: "more managed resources left out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, value, err := Bound(tc.tree, nil)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(value), MaxBytes)
			assert.Equal(t, tc.managedOnly, s.ManagedOnly)
			assert.Equal(t, tc.total, s.Total)
			if tc.shown > 0 {
				assert.Len(t, s.Tree.Nodes, tc.shown)
			}
			for _, n := range s.Tree.Nodes {
				if s.ManagedOnly {
					assert.True(t, n.Managed(), "only managed resources when degraded: %s", n.fullName())
				}
			}
			assert.Equal(t, s.Total, len(s.Tree.Nodes)+s.Omitted+childrenLeft(tc.tree, s), "every node is shown, a dropped child, or counted as omitted")
			assert.Contains(t, s.Summary(), tc.summaryContains)
			back, err := Decode(value)
			require.NoError(t, err)
			assert.Equal(t, s, back)
		})
	}
}

// guestbookDiff is Argo CD's diff of the guestbook's managed resources, not in its cache's
// order (a core kind's empty group sorts first): a Deployment whose replicas differ and a
// Service in sync.
func guestbookDiff() []Diff {
	return []Diff{
		{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", TargetState: `{"spec":{"replicas":2}}`,
			NormalizedLiveState: `{"spec":{"replicas":1}}`, PredictedLiveState: `{"spec":{"replicas":2}}`, Modified: true},
		{Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", TargetState: `{"kind":"Service"}`,
			NormalizedLiveState: `{"kind":"Service"}`, PredictedLiveState: `{"kind":"Service"}`},
	}
}

// bigDiff is a diff whose states (random, so that gzip cannot shrink them) take more than
// MaxBytes.
func bigDiff(t *testing.T) []Diff {
	noise := make([]byte, MaxBytes)
	_, err := rand.Read(noise)
	require.NoError(t, err)
	return []Diff{{Kind: "ConfigMap", Namespace: "big", Name: "noise", TargetState: base64.StdEncoding.EncodeToString(noise)}}
}

func TestBoundShipsTheDiffWhenItFits(t *testing.T) {
	for _, tc := range []struct {
		name            string
		diff            []Diff
		wantDiff        []Diff
		omitted         bool
		summaryContains string
	}{
		{name: "none kept on the spoke: none shipped", diff: nil},
		{name: "a diff that fits crosses sorted as Argo CD sorts it", diff: guestbookDiff(),
			wantDiff: []Diff{guestbookDiff()[1], guestbookDiff()[0]}},
		{name: "a diff over the bound beside the tree is left out, the tree kept", diff: bigDiff(t), omitted: true,
			summaryContains: "its diff does not fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, value, err := Bound(guestbook(), tc.diff)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(value), MaxBytes)
			assert.Len(t, s.Tree.Nodes, 5, "the tree comes first")
			assert.Equal(t, tc.wantDiff, s.Diff)
			assert.Equal(t, tc.wantDiff != nil, s.HasDiff())
			assert.Equal(t, tc.omitted, s.DiffOmitted)
			if tc.summaryContains != "" {
				assert.Contains(t, s.Summary(), tc.summaryContains)
			}
			back, err := Decode(value)
			require.NoError(t, err)
			assert.Equal(t, s, back)
		})
	}
}

func childrenLeft(t Tree, s Shipped) int {
	if !s.ManagedOnly {
		return 0
	}
	return len(t.Nodes) + len(t.OrphanedNodes) - len(managed(t.Nodes))
}

// Equal trees in any order encode to equal values: the agent writes only on a change.
func TestEqualTreesEncodeEqually(t *testing.T) {
	a, b := guestbook(), guestbook()
	b.Nodes[0], b.Nodes[4] = b.Nodes[4], b.Nodes[0]
	b.ShardsCount = 1
	_, va, err := Bound(a, nil)
	require.NoError(t, err)
	_, vb, err := Bound(b, nil)
	require.NoError(t, err)
	assert.Equal(t, va, vb)
}

func TestDecodeRefuses(t *testing.T) {
	_, good, err := Bound(guestbook(), nil)
	require.NoError(t, err)
	newer := strings.Replace(mustInflate(t, good), `"v":1`, `"v":2`, 1)
	for _, tc := range []struct{ name, value, want string }{
		{"too long", strings.Repeat("A", MaxBytes+1), "over the bound"},
		{"not base64", "!!", "not base64"},
		{"not gzip", base64.StdEncoding.EncodeToString([]byte("plain")), "not gzip"},
		{"a newer format", deflate(t, newer), "newer format"},
		{"negative counts", deflate(t, `{"v":1,"total":-1,"tree":{}}`), "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.value)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func mustInflate(t *testing.T, value string) string {
	s, err := Decode(value)
	require.NoError(t, err)
	v, err := encode(s)
	require.NoError(t, err)
	raw, _ := base64.StdEncoding.DecodeString(v)
	return inflate(t, raw)
}
