package bench

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
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

// guestbookTree is the resource tree the agent ships for the guestbook: a Deployment, its
// ReplicaSet and Pod, a Service and its EndpointSlice, a ConfigMap and a Secret.
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
	}})
	require.NoError(b, err)
	return value
}
