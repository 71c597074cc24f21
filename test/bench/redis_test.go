package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// benchRedis is a redis-server on loopback standing for the hub Argo CD's, where the
// manager writes the resource trees.
type benchRedis struct {
	address string
	client  *goredis.Client
}

// startRedis runs redis-server (`make bench-pull` installs it) without persistence.
func startRedis(b *testing.B, ctx context.Context) *benchRedis {
	server, err := exec.LookPath("redis-server")
	require.NoError(b, err, "redis-server is not installed: `make bench-pull` installs it")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(b, l.Close())
	cmd := exec.CommandContext(ctx, server, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := &benchRedis{address: "127.0.0.1:" + port, client: goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + port})}
	require.Eventually(b, func() bool { return r.client.Ping(ctx).Err() == nil }, 10*time.Second, 50*time.Millisecond, "redis-server answers")
	return r
}

// writes is how many SET, DEL and PUBLISH commands redis has served.
func (r *benchRedis) writes(b *testing.B) int64 {
	info, err := r.client.Info(context.Background(), "commandstats").Result()
	require.NoError(b, err)
	var n int64
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_set:", "cmdstat_del:", "cmdstat_publish:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
				v, err := strconv.ParseInt(calls, 10, 64)
				require.NoError(b, err)
				n += v
			}
		}
	}
	return n
}

// guestbookTree is the resource tree the agent ships for the guestbook, with its diff: a
// Deployment, its ReplicaSet and Pod, a Service and its EndpointSlice, a ConfigMap and a
// Secret; the diff of the four managed ones (guestbookDiff).
func guestbookTree(b *testing.B) string {
	dep := apptree.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", UID: "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e01"}
	rs := apptree.Ref{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "guestbook", Name: "guestbook-ui-5d8f6c7b9", UID: "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e02"}
	svc := apptree.Ref{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", UID: "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e03"}
	healthy := &apptree.Health{Status: "Healthy"}
	_, value, err := apptree.Bound(apptree.Tree{Nodes: []apptree.Node{
		{Ref: dep, Health: healthy, Images: []string{"quay.io/argoprojlabs/argocd-e2e-container:0.2"}, CreatedAt: "2026-11-27T10:00:00Z",
			Info: []apptree.Info{{Name: "Revision", Value: "Rev:1"}}},
		{Ref: rs, ParentRefs: []apptree.Ref{dep}, Health: healthy, CreatedAt: "2026-11-27T10:00:00Z", Info: []apptree.Info{{Name: "Revision", Value: "Rev:1"}}},
		{Ref: apptree.Ref{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: "guestbook-ui-5d8f6c7b9-x2x7q", UID: "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e04"},
			ParentRefs: []apptree.Ref{rs}, Health: healthy, Images: []string{"quay.io/argoprojlabs/argocd-e2e-container:0.2"}, CreatedAt: "2026-11-27T10:00:01Z",
			Info: []apptree.Info{{Name: "Status Reason", Value: "Running"}, {Name: "Node", Value: "node-1"}, {Name: "Containers", Value: "1/1"}}},
		{Ref: svc, Health: healthy, CreatedAt: "2026-11-27T10:00:00Z"},
		{Ref: apptree.Ref{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice", Namespace: "guestbook", Name: "guestbook-ui-abcde",
			UID: "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e05"}, ParentRefs: []apptree.Ref{svc}, CreatedAt: "2026-11-27T10:00:00Z"},
		{Ref: apptree.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui", UID: "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e06"}, CreatedAt: "2026-11-27T10:00:00Z"},
		{Ref: apptree.Ref{Version: "v1", Kind: "Secret", Namespace: "guestbook", Name: "guestbook-db", UID: "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e07"}, CreatedAt: "2026-11-27T10:00:00Z"},
	}}, guestbookDiff(b))
	require.NoError(b, err)
	return value
}

// guestbookDiff is Argo CD's diff of the guestbook's managed resources as the agent ships
// it: each one's desired state (with Argo CD's tracking annotation), its normalized live
// state (metadata, spec and status as the cluster keeps them) and the predicted one, a
// Secret's values masked as Argo CD masks them.
func guestbookDiff(b *testing.B) []apptree.Diff {
	meta := func(group, kind, name string) map[string]any {
		return map[string]any{"name": name, "namespace": "guestbook", "annotations": map[string]any{
			"argocd.argoproj.io/tracking-id": "guestbook-vanilla:" + group + "/" + kind + ":guestbook/" + name}}
	}
	live := func(group, kind, name string, extra map[string]any) map[string]any {
		m := meta(group, kind, name)
		m["uid"], m["resourceVersion"], m["generation"] = "3f1c6c1e-8d1f-4b5e-9a7e-0c2b8a5d1e01", "41725", 1
		m["creationTimestamp"], m["labels"] = "2026-11-27T10:00:00Z", map[string]any{"app": "guestbook-ui"}
		out := map[string]any{"metadata": m}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	container := map[string]any{"name": "guestbook-ui", "image": "quay.io/argoprojlabs/argocd-e2e-container:0.2",
		"ports": []any{map[string]any{"containerPort": 80, "protocol": "TCP"}}, "resources": map[string]any{},
		"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
	deploymentSpec := map[string]any{"replicas": 1, "revisionHistoryLimit": 3, "selector": map[string]any{"matchLabels": map[string]any{"app": "guestbook-ui"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "guestbook-ui"}},
			"spec": map[string]any{"containers": []any{container}, "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}}}
	deploymentStatus := map[string]any{"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": `ReplicaSet "guestbook-ui-5d8f6c7b9" has successfully progressed.`}}}
	service := map[string]any{"ports": []any{map[string]any{"port": 80, "targetPort": 80, "protocol": "TCP"}}, "selector": map[string]any{"app": "guestbook-ui"}}
	resources := []struct {
		group, kind, name string
		desired, actual   map[string]any
	}{
		{"apps", "Deployment", "guestbook-ui", map[string]any{"spec": deploymentSpec}, map[string]any{"spec": deploymentSpec, "status": deploymentStatus}},
		{"", "Service", "guestbook-ui", map[string]any{"spec": service}, map[string]any{"spec": service, "status": map[string]any{"loadBalancer": map[string]any{}}}},
		{"", "ConfigMap", "guestbook-ui", map[string]any{"data": map[string]any{"title": "Guestbook", "color": "blue"}},
			map[string]any{"data": map[string]any{"title": "Guestbook", "color": "blue"}}},
		{"", "Secret", "guestbook-db", map[string]any{"data": map[string]any{"password": "++++++++"}, "type": "Opaque"},
			map[string]any{"data": map[string]any{"password": "++++++++"}, "type": "Opaque"}},
	}
	var diff []apptree.Diff
	for _, r := range resources {
		apiVersion := "v1"
		if r.group != "" {
			apiVersion = r.group + "/v1"
		}
		desired := map[string]any{"apiVersion": apiVersion, "kind": r.kind, "metadata": meta(r.group, r.kind, r.name)}
		for k, v := range r.desired {
			desired[k] = v
		}
		actual := live(r.group, r.kind, r.name, r.actual)
		actual["apiVersion"], actual["kind"] = apiVersion, r.kind
		diff = append(diff, apptree.Diff{Group: r.group, Kind: r.kind, Namespace: "guestbook", Name: r.name,
			TargetState: mustJSON(b, desired), NormalizedLiveState: mustJSON(b, actual), PredictedLiveState: mustJSON(b, actual)})
	}
	return diff
}

func mustJSON(b *testing.B, v any) string {
	raw, err := json.Marshal(v)
	require.NoError(b, err)
	return string(raw)
}

// largeTree is the tree of an Application over the bound: 1,500 Deployments with a Pod
// each, as the agent ships it (its 1,000 first managed resources).
func largeTree(b *testing.B) (apptree.Shipped, string) {
	var t apptree.Tree
	for i := range 1500 {
		d := apptree.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "big", Name: fmt.Sprintf("app-%04d", i), UID: fmt.Sprintf("d-%04d", i)}
		t.Nodes = append(t.Nodes, apptree.Node{Ref: d, Health: &apptree.Health{Status: "Healthy"}, Images: []string{"registry.example/app:1.0"}},
			apptree.Node{Ref: apptree.Ref{Version: "v1", Kind: "Pod", Namespace: "big", Name: fmt.Sprintf("app-%04d-pod", i)}, ParentRefs: []apptree.Ref{d}})
	}
	s, value, err := apptree.Bound(t, nil)
	require.NoError(b, err)
	return s, value
}

// boundedTreeOnTheHub reports a tree over the bound for Application 0 and waits until the
// hub Application warns of it (ResourceTreeBounded) and the hub's redis holds the managed
// resources only; it returns the feedback value's size and the cached tree's.
func boundedTreeOnTheHub(b *testing.B, ctx context.Context, c client.Client, r *benchRedis, clusters []string) (reported, cached int) {
	shipped, value := largeTree(b)
	require.True(b, shipped.ManagedOnly)
	a := benchApp(0, clusters)
	w := &workv1.ManifestWork{}
	require.NoError(b, c.Get(ctx, types.NamespacedName{Namespace: clusters[0], Name: pullnames.WorkName(argoNS, a.GetName())}, w))
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications", Namespace: argoNS, Name: a.GetName()},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: feedbackValues("large", stringFeedback(feedback.KeyTree, value))},
		Conditions:      []metav1.Condition{},
	}}
	require.NoError(b, c.Status().Update(ctx, w))
	require.Eventually(b, func() bool {
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(pullnames.ApplicationGVK)
		if c.Get(ctx, types.NamespacedName{Namespace: argoNS, Name: a.GetName()}, app) != nil {
			return false
		}
		return strings.Contains(fmt.Sprint(app.Object["status"]), v1alpha1.ReasonResourceTreeBounded)
	}, time.Minute, 100*time.Millisecond, "the hub Application warns that its tree is bounded")
	var raw []byte
	require.Eventually(b, func() bool {
		var err error
		raw, err = r.client.Get(ctx, argocdcache.TreeKey(a.GetName())).Bytes()
		var tree apptree.Tree
		return err == nil && argocdcache.Decode(raw, 1<<24, &tree) == nil && len(tree.Nodes) == 1000 && allManaged(tree)
	}, time.Minute, 100*time.Millisecond, "the hub's redis holds the 1,000 managed resources, no child")
	return len(value), len(raw)
}

func allManaged(t apptree.Tree) bool {
	for _, n := range t.Nodes {
		if !n.Managed() {
			return false
		}
	}
	return true
}
