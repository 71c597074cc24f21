package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

// resourceTreeScenario: for each spoke's guestbook, argocd-server on the hub answers the
// UI's resource-tree call with the tree the spoke's application controller keeps in the
// spoke's redis, node for node, through the pull model's feedback alone; the hub
// application controller never compares it. What the other calls of the Application page
// answer in the basic pull model is logged (the table in docs/guides/pull-model.md).
func resourceTreeScenario(t *testing.T, ctx context.Context, a *argoFleet) {
	token, err := a.server.Login(ctx)
	require.NoError(t, err)
	for _, cluster := range []string{vanilla, openshift} {
		name := "guestbook-" + cluster
		waitHubTree(t, ctx, a, cluster, func(spoke []string) bool { return slices.Contains(spoke, "Service guestbook/guestbook-ui") })
		hubApp := application(contract.GitOpsNamespace, name)
		require.NoError(t, a.f.Hub.Client.Get(ctx, client.ObjectKeyFromObject(hubApp), hubApp))
		assert.NotContains(t, fmt.Sprint(hubApp.Object["status"]), v1alpha1.ReasonResourceTreeBounded, "a small tree is shown whole")
		waitHubDiff(t, ctx, a, token, cluster)
		logOtherCalls(t, ctx, a, token, name)
	}
	assertHubHoldsNoSpokeWriter(t, ctx, a.f.Hub.Client, a.spokes)
}

// waitHubTree waits until the spoke's Argo CD keeps a tree of the cluster's guestbook that
// satisfies want (its node names), and argocd-server on the hub draws that same tree.
func waitHubTree(t *testing.T, ctx context.Context, a *argoFleet, cluster string, want func(spoke []string) bool) []apptree.Node {
	name := "guestbook-" + cluster
	token, err := a.server.Login(ctx)
	require.NoError(t, err)
	var spoke, hub apptree.Tree
	var last error
	ok := assert.Eventually(t, func() bool {
		spoke = spokeTree(t, ctx, a.argo.Spokes[cluster].RedisAddress, name)
		if !want(nodeNames(spoke.Nodes)) {
			return false
		}
		hub = apptree.Tree{}
		last = a.server.Get(ctx, token, "/api/v1/applications/"+name+"/resource-tree", url.Values{"appNamespace": {contract.GitOpsNamespace}}, &hub)
		return last == nil && slices.Equal(nodeNames(hub.Nodes), nodeNames(spoke.Nodes))
	}, 3*time.Minute, time.Second)
	require.True(t, ok, "argocd-server's tree of %s: %v (last error %v); the spoke's: %v", name, nodeNames(hub.Nodes), last, nodeNames(spoke.Nodes))
	t.Logf("%s: argocd-server on the hub draws the spoke's %d nodes: %v", name, len(hub.Nodes), nodeNames(hub.Nodes))
	return hub.Nodes
}

// waitHubDiff waits until argocd-server on the hub answers the UI's managed-resources call
// (its diff, and what its resource panel loads first) for the cluster's guestbook with the
// managed resources the spoke's application controller keeps, each with its desired state.
func waitHubDiff(t *testing.T, ctx context.Context, a *argoFleet, token, cluster string) {
	name := "guestbook-" + cluster
	c := argocdcache.New(argocdcache.Options{Address: a.argo.Spokes[cluster].RedisAddress})
	defer func() { _ = c.Close() }()
	type diff struct{ Group, Kind, Namespace, Name, TargetState string }
	names := func(items []diff) []string {
		out := []string{}
		for _, d := range items {
			if d.TargetState != "" {
				out = append(out, d.Kind+" "+d.Namespace+"/"+d.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	var spoke []diff
	var hub struct{ Items []diff }
	var last error
	ok := assert.Eventually(t, func() bool {
		raw, found, err := c.Get(ctx, argocdcache.ManagedResourcesKey(name))
		spoke = nil
		if err != nil || !found || argocdcache.Decode(raw, 64<<20, &spoke) != nil || len(spoke) == 0 {
			return false
		}
		hub.Items = nil
		last = a.server.Get(ctx, token, "/api/v1/applications/"+name+"/managed-resources", url.Values{"appNamespace": {contract.GitOpsNamespace}}, &hub)
		return last == nil && slices.Equal(names(hub.Items), names(spoke))
	}, 3*time.Minute, time.Second)
	require.True(t, ok, "argocd-server's diff of %s: %v (last error %v); the spoke's: %v", name, names(hub.Items), last, names(spoke))
	t.Logf("%s: argocd-server on the hub answers managed-resources with the spoke's diff of %v", name, names(hub.Items))
	spokeApp := application(contract.GitOpsNamespace, name)
	err := a.spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp)
	t.Logf("%s: the tree and diff the spoke ships: %d bytes of feedback (%v)", name, len(spokeApp.GetAnnotations()[apptree.Annotation]), err)
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
// model: the live manifest and events need the hub to reach the spoke, which it cannot
// (no credential on the hub can change a spoke, nor read it).
func logOtherCalls(t *testing.T, ctx context.Context, a *argoFleet, token, app string) {
	q := url.Values{"appNamespace": {contract.GitOpsNamespace}, "namespace": {"guestbook"}, "resourceName": {"guestbook-ui"},
		"version": {"v1"}, "kind": {"Service"}, "group": {""}}
	for _, call := range []string{"/resource", "/events"} {
		var out map[string]any
		err := a.server.Get(ctx, token, "/api/v1/applications/"+app+call, q, &out)
		t.Logf("basic pull model, GET /api/v1/applications/%s%s: error %v, %d top-level fields", app, call, err, len(out))
	}
}

// assertHubHoldsNoSpokeWriter: every Argo CD cluster Secret on the hub is an identity the
// hub holds towards a spoke. Each spoke's own authorizer (SubjectAccessReview on its
// apiserver) is asked whether that identity may write there: it may not. The Secrets hold
// no credential in the basic pull model, so the identity is the anonymous user; with live
// resources a Secret holds a token, looked up as the user it is (TokenReview), as a client
// certificate would be (its subject).
func assertHubHoldsNoSpokeWriter(t *testing.T, ctx context.Context, hub client.Client, spokes map[string]*harness.Spoke) {
	secrets := &corev1.SecretList{}
	require.NoError(t, hub.List(ctx, secrets, client.MatchingLabels{"argocd.argoproj.io/secret-type": "cluster"}))
	require.NotEmpty(t, secrets.Items)
	for _, s := range secrets.Items {
		spoke, ok := spokes[string(s.Data["name"])]
		if !ok {
			continue
		}
		user := clusterSecretUser(t, ctx, spoke, s)
		allowed := 0
		for _, write := range []authorizationv1.ResourceAttributes{
			{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "guestbook"},
			{Verb: "patch", Group: "argoproj.io", Resource: "applications", Namespace: contract.GitOpsNamespace},
			{Verb: "delete", Resource: "secrets", Namespace: contract.GitOpsNamespace},
			{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "guestbook"},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user.Username, Groups: user.Groups, ResourceAttributes: &write}}
			require.NoError(t, spoke.Client.Create(ctx, sar))
			if sar.Status.Allowed {
				allowed++
				t.Errorf("cluster Secret %s/%s on the hub is %s on %s, who may %s %s/%s %s in %s", s.Namespace, s.Name, user.Username,
					spoke.Name, write.Verb, write.Group, write.Resource, write.Subresource, write.Namespace)
			}
		}
		if allowed == 0 {
			t.Logf("cluster Secret %s/%s: %s (%v) on %s, denied every write", s.Namespace, s.Name, user.Username, user.Groups, spoke.Name)
		}
	}
}

// clusterSecretUser is who a cluster Secret's credential is on its spoke.
func clusterSecretUser(t *testing.T, ctx context.Context, spoke *harness.Spoke, s corev1.Secret) authenticationv1.UserInfo {
	var config struct {
		BearerToken     string `json:"bearerToken"`
		TLSClientConfig struct {
			CertData []byte `json:"certData"`
		} `json:"tlsClientConfig"`
	}
	require.NoError(t, json.Unmarshal(s.Data["config"], &config))
	switch {
	case config.BearerToken != "":
		review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: config.BearerToken}}
		require.NoError(t, spoke.Client.Create(ctx, review))
		// A token the spoke does not know would be asked about as no one, and denied
		// everything: the check would prove nothing.
		require.True(t, review.Status.Authenticated, "the token in cluster Secret %s/%s on %s: %s", s.Namespace, s.Name, spoke.Name, review.Status.Error)
		return review.Status.User
	case len(config.TLSClientConfig.CertData) > 0:
		block, _ := pem.Decode(config.TLSClientConfig.CertData)
		require.NotNil(t, block)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		return authenticationv1.UserInfo{Username: cert.Subject.CommonName, Groups: append(cert.Subject.Organization, "system:authenticated")}
	}
	return authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}
}
