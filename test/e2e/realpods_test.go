package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/imagebuild"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// productImage is the image built from our Dockerfile, as the nodes know it: no registry,
// so the chart is installed with pullPolicy Never, as a user with a mirror would set it.
const productImage = "local.gitops-addon/gitops-addon:e2e"

// TestRealPods runs the manager as users run it: the image built from our Dockerfile, the
// chart installed with the real helm CLI, the manager a pod on the hub's node (containerd,
// kubelet) that becomes Ready through its own probes, as the non-root user its manifest
// says.
func TestRealPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var f *harness.Fleet
	// Registered first, so it runs last: after the fleet's Stop.
	t.Cleanup(func() {
		if f != nil {
			assert.Empty(t, f.Leftovers(), "what the fleet's nodes left on the machine after Stop")
		}
	})
	f = harness.StartForTest(t, harness.Options{RealPods: true})
	node, err := f.AddNode(ctx, f.Hub)
	require.NoError(t, err)
	importProductImage(t, node)
	helm := filepath.Join(testenv.BinDir(), "helm")
	out, err := exec.CommandContext(ctx, helm, "install", install.ReleaseName, filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"),
		"--kubeconfig", f.Hub.Kubeconfig, "--namespace", install.Namespace, "--create-namespace",
		"--set", "image.repository=local.gitops-addon/gitops-addon", "--set", "image.tag=e2e", "--set", "image.pullPolicy=Never").CombinedOutput()
	require.NoError(t, err, "helm install: %s", out)
	hub := f.Hub.Client

	t.Run("the manager's pod from the chart becomes Ready", func(t *testing.T) {
		require.Eventually(t, func() bool {
			d := &appsv1.Deployment{}
			return hub.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: "gitops-addon-manager"}, d) == nil && d.Status.AvailableReplicas == 1
		}, 3*time.Minute, time.Second, "the manager Deployment available (its readiness probe passes)")
	})

	t.Run("it runs as the non-root user its manifest says", func(t *testing.T) {
		pods := &corev1.PodList{}
		require.NoError(t, hub.List(ctx, pods, client.InNamespace(install.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "gitops-addon-manager"}))
		require.Len(t, pods.Items, 1)
		pod := pods.Items[0]
		require.Len(t, pod.Spec.Containers, 1)
		nonRoot := pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsNonRoot != nil && *pod.Spec.SecurityContext.RunAsNonRoot
		if c := pod.Spec.Containers[0].SecurityContext; c != nil && c.RunAsNonRoot != nil {
			nonRoot = *c.RunAsNonRoot
		}
		assert.True(t, nonRoot, "runAsNonRoot, as rendered")
		users, err := node.PodProcessUsers(string(pod.UID))
		require.NoError(t, err)
		var seen []int
		for _, uid := range users {
			assert.NotZero(t, uid, "no process of the manager's pod runs as root: %v", users)
			seen = append(seen, uid)
		}
		assert.True(t, slices.Contains(seen, 65532), "the manager runs as the image's nonroot user 65532: %v", users)
	})
}

// importProductImage builds our Dockerfile as it is (imagebuild) and imports the image
// into the node's containerd.
func importProductImage(t *testing.T, node *harness.Node) {
	t.Helper()
	dir := t.TempDir()
	b, err := imagebuild.New(dir)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Teardown()) })
	require.NoError(t, b.StandIns(t.TempDir()))
	require.NoError(t, b.BuildDockerfile(testenv.RepoRoot(), "localhost/gitops-addon:e2e", "v0.0.0-e2e", "e2e"))
	archive := filepath.Join(dir, "gitops-addon.tar")
	require.NoError(t, b.Export("localhost/gitops-addon:e2e", productImage, archive))
	require.NoError(t, node.Import(context.Background(), archive))
}
