package treecache

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
)

// fakeStore is the hub Argo CD's redis, counting what the writer does.
type fakeStore struct {
	keys               map[string][]byte
	sets, publishes    int
	deletes            []string
	published          []string
	failSet, failReach error
}

func (f *fakeStore) Set(_ context.Context, key string, value []byte) error {
	if f.failSet != nil {
		return f.failSet
	}
	f.sets++
	f.keys[key] = value
	return nil
}

func (f *fakeStore) Exists(_ context.Context, key string) (bool, error) {
	_, ok := f.keys[key]
	return ok, f.failReach
}

func (f *fakeStore) Delete(_ context.Context, keys ...string) error {
	for _, k := range keys {
		delete(f.keys, k)
	}
	f.deletes = append(f.deletes, keys...)
	return f.failReach
}

func (f *fakeStore) Publish(_ context.Context, channel string) error {
	f.publishes++
	f.published = append(f.published, channel)
	return nil
}

func shipped(t *testing.T, names ...string) (apptree.Shipped, string) {
	var tree apptree.Tree
	for _, n := range names {
		tree.Nodes = append(tree.Nodes, apptree.Node{Ref: apptree.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: n}})
	}
	s, value, err := apptree.Bound(tree, nil)
	require.NoError(t, err)
	return s, value
}

func TestWriteOnlyWhatChangedOrWasLost(t *testing.T) {
	store := &fakeStore{keys: map[string][]byte{}}
	w := &Writer{Store: store, ArgoNamespace: "openshift-gitops"}
	ctx := context.Background()
	app := types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook-vanilla"}
	s, v := shipped(t, "a")

	require.NoError(t, w.Write(ctx, app, s, v))
	assert.Equal(t, 1, store.sets)
	assert.Equal(t, []string{argocdcache.TreeChannel("guestbook-vanilla")}, store.published, "an open UI page is told")
	var stored apptree.Tree
	require.NoError(t, argocdcache.Decode(store.keys[argocdcache.TreeKey("guestbook-vanilla")], 1<<20, &stored))
	assert.Equal(t, s.Tree, stored, "Argo CD's key and encoding")

	require.NoError(t, w.Write(ctx, app, s, v))
	assert.Equal(t, 1, store.sets, "the same tree again: no write")

	delete(store.keys, argocdcache.TreeKey("guestbook-vanilla")) // redis restarted
	require.NoError(t, w.Write(ctx, app, s, v))
	assert.Equal(t, 2, store.sets, "a lost tree is written again")

	s2, v2 := shipped(t, "a", "b")
	require.NoError(t, w.Write(ctx, app, s2, v2))
	assert.Equal(t, 3, store.sets, "a changed tree is written")

	other := types.NamespacedName{Namespace: "team-a", Name: "guestbook"}
	require.NoError(t, w.Write(ctx, other, s, v))
	assert.Contains(t, store.keys, argocdcache.TreeKey("team-a_guestbook"), "an Application outside Argo CD's namespace, as Argo CD names it")
}

func TestForgetRemovesOnlyWhatItWrote(t *testing.T) {
	store := &fakeStore{keys: map[string][]byte{argocdcache.TreeKey("theirs"): []byte("x")}}
	w := &Writer{Store: store, ArgoNamespace: "openshift-gitops"}
	ctx := context.Background()
	ours := types.NamespacedName{Namespace: "openshift-gitops", Name: "ours"}
	s, v := shipped(t, "a")
	require.NoError(t, w.Write(ctx, ours, s, v))

	require.NoError(t, w.Forget(ctx, types.NamespacedName{Namespace: "openshift-gitops", Name: "theirs"}))
	assert.Contains(t, store.keys, argocdcache.TreeKey("theirs"), "no longer pulled, never written by us: the hub's controller may own it")
	require.NoError(t, w.Forget(ctx, ours))
	assert.NotContains(t, store.keys, argocdcache.TreeKey("ours"))

	// A restarted manager knows nothing it wrote, until it writes each pulled tree once again.
	restarted := &Writer{Store: store, ArgoNamespace: "openshift-gitops"}
	require.NoError(t, restarted.Write(ctx, ours, s, v))
	require.NoError(t, restarted.Forget(ctx, ours))
	assert.NotContains(t, store.keys, argocdcache.TreeKey("ours"))
}

func TestWriteErrorsAreReturned(t *testing.T) {
	store := &fakeStore{keys: map[string][]byte{}, failSet: errors.New("connection refused")}
	w := &Writer{Store: store}
	s, v := shipped(t, "a")
	require.ErrorContains(t, w.Write(context.Background(), types.NamespacedName{Namespace: "x", Name: "y"}, s, v), "connection refused")
	store.failSet = nil
	require.NoError(t, w.Write(context.Background(), types.NamespacedName{Namespace: "x", Name: "y"}, s, v))
	assert.Equal(t, 1, store.sets, "a failed write is not remembered as written")
}

// The diff shipped with a tree goes where argocd-server's managed-resources call reads it,
// before the tree is announced; a tree that comes without one (its diff left out over the
// bound) removes the one written before, and so does Forget.
func TestTheDiffIsWrittenBesideTheTree(t *testing.T) {
	store := &fakeStore{keys: map[string][]byte{}}
	w := &Writer{Store: store, ArgoNamespace: "openshift-gitops"}
	ctx := context.Background()
	app := types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook-vanilla"}
	key := argocdcache.ManagedResourcesKey("guestbook-vanilla")
	diff := []apptree.Diff{{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "web", TargetState: `{"spec":{}}`, Modified: true}}
	withDiff, value, err := apptree.Bound(apptree.Tree{Nodes: []apptree.Node{{Ref: apptree.Ref{Kind: "Deployment", Name: "web"}}}}, diff)
	require.NoError(t, err)

	require.NoError(t, w.Write(ctx, app, withDiff, value))
	var stored []map[string]any
	require.NoError(t, argocdcache.Decode(store.keys[key], 1<<20, &stored))
	assert.Equal(t, []map[string]any{{"group": "apps", "kind": "Deployment", "namespace": "guestbook", "name": "web",
		"targetState": `{"spec":{}}`, "modified": true}}, stored, "Argo CD's ResourceDiff fields")

	without, value2 := shipped(t, "web", "other")
	require.NoError(t, w.Write(ctx, app, without, value2))
	assert.NotContains(t, store.keys, key, "no diff came with the new tree: the old one is not shown as current")
	deletes := len(store.deletes)
	again, value3 := shipped(t, "web")
	require.NoError(t, w.Write(ctx, app, again, value3))
	assert.Len(t, store.deletes, deletes, "no diff written since: nothing to remove, no redis call")

	require.NoError(t, w.Write(ctx, app, withDiff, value))
	require.NoError(t, w.Forget(ctx, app))
	assert.NotContains(t, store.keys, key)
	assert.NotContains(t, store.keys, argocdcache.TreeKey("guestbook-vanilla"))
}
