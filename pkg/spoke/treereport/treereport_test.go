package treereport

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

const pulledApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: openshift-gitops
  ownerReferences: [{apiVersion: work.open-cluster-management.io/v1, kind: AppliedManifestWork, name: abc-guestbook, uid: u1}]
spec: {project: default}
`

// cachedTree is the guestbook's tree as Argo CD's controller keeps it in redis, with the
// fields the agent drops (resourceVersion, hosts).
const cachedTree = `{"nodes":[
 {"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","uid":"d","resourceVersion":"41",
  "health":{"status":"Healthy"},"images":["quay.io/argoprojlabs/argocd-e2e-container:0.2"]},
 {"group":"apps","version":"v1","kind":"ReplicaSet","namespace":"guestbook","name":"guestbook-ui-5d8","uid":"r","resourceVersion":"42",
  "parentRefs":[{"group":"apps","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","uid":"d"}],"info":[{"name":"Revision","value":"Rev:1"}]},
 {"version":"v1","kind":"Pod","namespace":"guestbook","name":"guestbook-ui-5d8-x","uid":"p","resourceVersion":"43",
  "parentRefs":[{"group":"apps","kind":"ReplicaSet","namespace":"guestbook","name":"guestbook-ui-5d8","uid":"r"}],
  "health":{"status":"Progressing"},"createdAt":"2026-11-27T10:00:00Z"}],
 "hosts":[{"name":"node-1","resourcesInfo":[{"resourceName":"cpu","requestedByApp":10,"requestedByNeighbors":900}]}]}`

// fakeCache is Argo CD's redis as the controller reads it.
type fakeCache struct {
	values map[string][]byte
	err    error
}

func (f *fakeCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	v, ok := f.values[key]
	return v, ok, f.err
}

func (f *fakeCache) Announcements(context.Context, func(string), func()) error { return nil }

func withTree(t *testing.T, doc string) *fakeCache {
	var raw any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &raw))
	value, err := argocdcache.Encode(raw)
	require.NoError(t, err)
	return &fakeCache{values: map[string][]byte{argocdcache.TreeKey("guestbook"): value}}
}

func TestReconcileShipsTheTreeOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cache     *fakeCache
		edit      func(*unstructured.Unstructured)
		wantWrite bool
		wantErr   string
	}{
		{name: "a pulled Application gets the tree Argo CD keeps", cache: withTree(t, cachedTree), wantWrite: true},
		{name: "the cache holds the tree's digest (pulledapps.Slim): a current tree is not written again", cache: withTree(t, cachedTree),
			edit: func(u *unstructured.Unstructured) {
				tree, _, err := (&Reconciler{Cache: withTree(t, cachedTree)}).read(context.Background(), "guestbook")
				require.NoError(t, err)
				_, value, err := apptree.Bound(tree, nil)
				require.NoError(t, err)
				u.SetAnnotations(map[string]string{apptree.Annotation: pulledapps.Digest(value)})
			}},
		{name: "an Application nobody pulled is left alone", cache: withTree(t, cachedTree), edit: func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) }},
		{name: "no tree in Argo CD's cache yet: nothing written", cache: &fakeCache{}},
		{name: "redis unreachable: an error the agent reports", cache: &fakeCache{err: errors.New("dial tcp: connection refused")}, wantErr: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(pulledApp), &app.Object))
			if tc.edit != nil {
				tc.edit(app)
			}
			writes := 0
			c := fixtures.FakeSpoke(t, app).
				WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
					writes++
					return c.Patch(ctx, o, p, opts...)
				}}).Build()
			report := addonstatus.NewReport()
			r := &Reconciler{Apps: c, Client: c, Cache: tc.cache, Namespace: "openshift-gitops", Report: report}
			req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}}
			_, err := r.Reconcile(context.Background(), req)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				c, set := report.Condition(contract.ConditionApplicationTreeNotReported)
				require.True(t, set, "the failure reaches the agent's ManagedClusterAddOn")
				assert.Contains(t, c.Message, "without their resource tree")
				return
			}
			require.NoError(t, err)
			_, err = r.Reconcile(context.Background(), req)
			require.NoError(t, err)
			if !tc.wantWrite {
				assert.Zero(t, writes)
				return
			}
			assert.Equal(t, 1, writes, "written once; the second reconcile finds it current")
			stored := pulledapps.New()
			require.NoError(t, c.Get(context.Background(), req.NamespacedName, stored))
			shipped, err := apptree.Decode(stored.GetAnnotations()[apptree.Annotation])
			require.NoError(t, err)
			assert.Equal(t, 3, shipped.Total)
			require.Len(t, shipped.Tree.Nodes, 3)
			pod := shipped.Tree.Nodes[0] // Argo CD's order: group/kind/namespace/name
			assert.Equal(t, "Pod", pod.Kind, "children down to the Pods")
			assert.Equal(t, "ReplicaSet", pod.ParentRefs[0].Kind)
			spec, _, _ := unstructured.NestedMap(stored.Object, "spec")
			assert.Equal(t, map[string]any{"project": "default"}, spec, "nothing but the annotation changed")
		})
	}
}

// cachedDiff is the guestbook's managed resources as Argo CD's controller keeps them
// (app|managed-resources|...): each ResourceDiff, with the fields the agent drops (the live
// state, the deprecated diff, the resourceVersion).
const cachedDiff = `[{"group":"apps","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui",
  "targetState":"{\"spec\":{\"replicas\":2}}","liveState":"{\"spec\":{\"replicas\":1},\"status\":{}}","diff":"[]",
  "normalizedLiveState":"{\"spec\":{\"replicas\":1}}","predictedLiveState":"{\"spec\":{\"replicas\":2}}","resourceVersion":"41","modified":true}]`

// The diff Argo CD keeps beside the tree crosses with it, for the hub UI's diff and
// resource panel.
func TestTheDiffShipsWithTheTree(t *testing.T) {
	cache := withTree(t, cachedTree)
	var raw any
	require.NoError(t, yaml.Unmarshal([]byte(cachedDiff), &raw))
	value, err := argocdcache.Encode(raw)
	require.NoError(t, err)
	cache.values[argocdcache.ManagedResourcesKey("guestbook")] = value
	app := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(pulledApp), &app.Object))
	c := fixtures.FakeSpoke(t, app).Build()
	r := &Reconciler{Apps: c, Client: c, Cache: cache, Namespace: "openshift-gitops"}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}}
	_, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	stored := pulledapps.New()
	require.NoError(t, c.Get(context.Background(), req.NamespacedName, stored))
	shipped, err := apptree.Decode(stored.GetAnnotations()[apptree.Annotation])
	require.NoError(t, err)
	assert.Len(t, shipped.Tree.Nodes, 3)
	assert.Equal(t, []apptree.Diff{{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
		TargetState: `{"spec":{"replicas":2}}`, NormalizedLiveState: `{"spec":{"replicas":1}}`, PredictedLiveState: `{"spec":{"replicas":2}}`,
		Modified: true}}, shipped.Diff)
}

// A changed resourceVersion alone (every status update of every child) writes nothing.
func TestAResourceVersionAloneIsNoChange(t *testing.T) {
	first := withTree(t, cachedTree)
	second := withTree(t, `{"nodes":[{"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","uid":"d","resourceVersion":"99",
	 "health":{"status":"Healthy"},"images":["quay.io/argoprojlabs/argocd-e2e-container:0.2"]},
	 {"group":"apps","version":"v1","kind":"ReplicaSet","namespace":"guestbook","name":"guestbook-ui-5d8","uid":"r","resourceVersion":"100",
	  "parentRefs":[{"group":"apps","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","uid":"d"}],"info":[{"name":"Revision","value":"Rev:1"}]},
	 {"version":"v1","kind":"Pod","namespace":"guestbook","name":"guestbook-ui-5d8-x","uid":"p","resourceVersion":"101",
	  "parentRefs":[{"group":"apps","kind":"ReplicaSet","namespace":"guestbook","name":"guestbook-ui-5d8","uid":"r"}],
	  "health":{"status":"Progressing"},"createdAt":"2026-11-27T10:00:00Z"}]}`)
	r1 := &Reconciler{Cache: first, Namespace: "openshift-gitops"}
	r2 := &Reconciler{Cache: second, Namespace: "openshift-gitops"}
	t1, _, err := r1.read(context.Background(), "guestbook")
	require.NoError(t, err)
	t2, _, err := r2.read(context.Background(), "guestbook")
	require.NoError(t, err)
	_, v1, err := apptree.Bound(t1, nil)
	require.NoError(t, err)
	_, v2, err := apptree.Bound(t2, nil)
	require.NoError(t, err)
	assert.Equal(t, v1, v2)
}

// A tree Argo CD split into shards (ARGOCD_APPLICATION_TREE_SHARD_SIZE) is read whole.
func TestShardsAreMerged(t *testing.T) {
	c := withTree(t, `{"nodes":[{"kind":"Service","name":"a"}],"shardsCount":2}`)
	second, err := argocdcache.Encode(map[string]any{"nodes": []any{map[string]any{"kind": "Service", "name": "b"}}})
	require.NoError(t, err)
	c.values[argocdcache.ShardKey("guestbook", 1)] = second
	tree, found, err := (&Reconciler{Cache: c}).read(context.Background(), "guestbook")
	require.NoError(t, err)
	require.True(t, found)
	assert.Len(t, tree.Nodes, 2)
}

// The listener keeps trying while redis's password cannot be read yet (the operator has
// not made it): a spoke's agent starts before its Argo CD.
func TestAnnouncementsWaitForThePassword(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asked := 0
	c := &lazyCache{options: argocdcache.Options{Address: "127.0.0.1:1"}, password: func(context.Context) (string, error) {
		asked++
		if asked == 2 {
			cancel()
		}
		return "", errors.New(`secrets "openshift-gitops-redis-initial-password" not found`)
	}}
	require.NoError(t, c.Announcements(ctx, func(string) {}, func() {}))
	assert.Equal(t, 2, asked, "asked again after the first failure, not given up")
}
