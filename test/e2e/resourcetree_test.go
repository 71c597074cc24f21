package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
)

// resourceTreeScenario: for each spoke's guestbook, argocd-server on the hub answers the
// UI's resource-tree call with the tree the spoke's application controller keeps in the
// spoke's redis (node for node: managed resources and their children), through the pull
// model's feedback alone; the hub application controller never compares it. What the
// other calls of the Application page answer in the basic pull model is logged (the
// table in docs/guides/pull-model.md).
func resourceTreeScenario(t *testing.T, ctx context.Context, a *argoFleet) {
	token, err := a.server.Login(ctx)
	require.NoError(t, err)
	for _, cluster := range []string{vanilla, openshift} {
		name := "guestbook-" + cluster
		spokeTree := spokeTree(t, ctx, a.argo.Spokes[cluster].RedisAddress, name)
		want := nodeNames(spokeTree.Nodes)
		require.Contains(t, want, "Service guestbook/guestbook-ui", "the spoke's Argo CD keeps the guestbook's tree in its redis under Argo CD's key")
		var got []string
		var last error
		ok := assert.Eventually(t, func() bool {
			var tree apptree.Tree
			last = a.server.Get(ctx, token, "/api/v1/applications/"+name+"/resource-tree", url.Values{"appNamespace": {contract.GitOpsNamespace}}, &tree)
			got = nodeNames(tree.Nodes)
			return last == nil && slices.Equal(got, want)
		}, 2*time.Minute, time.Second)
		require.True(t, ok, "argocd-server's tree of %s: %v (last error %v); the spoke's: %v", name, got, last, want)
		assert.True(t, slices.ContainsFunc(spokeTree.Nodes, func(n apptree.Node) bool { return !n.Managed() }),
			"the tree has children, not only the managed resources: %v", want)
		t.Logf("%s: argocd-server draws %d nodes: %v", name, len(got), got)
		hubApp := application(contract.GitOpsNamespace, name)
		require.NoError(t, a.f.Hub.Client.Get(ctx, client.ObjectKeyFromObject(hubApp), hubApp))
		assert.NotContains(t, fmt.Sprint(hubApp.Object["status"]), pullmodel.ReasonResourceTreeBounded, "a small tree is shown whole")
		logOtherCalls(t, ctx, a, token, name)
	}
}

// spokeTree is the tree the spoke's application controller keeps in its redis.
func spokeTree(t *testing.T, ctx context.Context, redis, app string) apptree.Tree {
	c := argocdcache.New(argocdcache.Options{Address: redis})
	defer func() { _ = c.Close() }()
	var tree apptree.Tree
	require.Eventually(t, func() bool {
		raw, found, err := c.Get(ctx, argocdcache.TreeKey(app))
		return err == nil && found && argocdcache.Decode(raw, 64<<20, &tree) == nil
	}, 2*time.Minute, time.Second, "the spoke's Argo CD keeps %s's tree at %s", app, argocdcache.TreeKey(app))
	return tree
}

func nodeNames(nodes []apptree.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Kind+" "+n.Namespace+"/"+n.Name)
	}
	slices.Sort(out)
	return out
}

// logOtherCalls records what the Application page's other calls answer in the basic pull
// model: the live manifest, events and logs need the hub to reach the spoke, which it
// cannot (no credential on the hub can change a spoke, nor read it).
func logOtherCalls(t *testing.T, ctx context.Context, a *argoFleet, token, app string) {
	q := url.Values{"appNamespace": {contract.GitOpsNamespace}, "namespace": {"guestbook"}, "resourceName": {"guestbook-ui"},
		"version": {"v1"}, "kind": {"Service"}, "group": {""}}
	for _, call := range []string{"/resource", "/events", "/managed-resources"} {
		var out map[string]any
		err := a.server.Get(ctx, token, "/api/v1/applications/"+app+call, q, &out)
		t.Logf("basic pull model, GET /api/v1/applications/%s%s: error %v, %d top-level fields", app, call, err, len(out))
	}
}
