package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/demo"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/realpods"
)

// EnvLiveResources runs TestLiveResourcesOnRealPods: `make test-live-resources` sets it,
// once it has built OCM's cluster-proxy and managed-serviceaccount from source into ./bin
// (make ocm-addons-env), with their versions in CLUSTER_PROXY_VERSION and
// MANAGED_SERVICEACCOUNT_VERSION.
const EnvLiveResources = "GITOPS_ADDON_LIVE_RESOURCES"

// ocmAddonsNamespace is where both addons are installed on the hub, as their READMEs do.
const ocmAddonsNamespace = "open-cluster-management-addon"

// The addons' images under the names their charts use by default (cluster-proxy's agent
// image must have a registry part), built from ./bin's binaries at the paths of their
// Dockerfiles.
const (
	clusterProxyImage          = "quay.io/open-cluster-management/cluster-proxy"
	managedServiceAccountImage = "quay.io/open-cluster-management/managed-serviceaccount"
)

// userServerNodePort exposes cluster-proxy's user server on the hub's node, where the hub's
// argocd-server (a process of this machine) reaches it as a user's Argo CD outside the
// cluster would through a load balancer; the name in its cluster Secrets stays the
// Service's (harness.ServiceProxy), so its certificate is checked as in the cluster.
const userServerNodePort = "cluster-proxy-addon-user-nodeport"

// TestLiveResourcesOnRealPods proves live resources in the basic pull model with OCM's own
// addons, as users run them: cluster-proxy and managed-serviceaccount built from source,
// installed on the hub with their own charts, their agents pods on each spoke's node from
// their own ManifestWorks. The seed GitOpsCluster turned to
// spec.gitopsAddon.liveResources.enabled, the hub's argocd-server serves each pulled
// guestbook's live manifests, events and Pod log from the spoke through cluster-proxy, as
// the spoke's ServiceAccount bound to the read-only gitops-addon:live-resources, and the
// spoke refuses a delete and a Secret.
func TestLiveResourcesOnRealPods(t *testing.T) {
	if os.Getenv(EnvLiveResources) == "" {
		t.Skip("opt-in: make test-live-resources (builds OCM's cluster-proxy and managed-serviceaccount from source first)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	f := startRealPodFleet(t)
	d, err := demo.SetUp(ctx, f, demo.Options{RealPods: true, Step: t.Logf})
	require.NoError(t, err)
	r := d.Pods
	require.True(t, t.Run("the seed ApplicationSet syncs to every spoke", func(t *testing.T) {
		require.NoError(t, d.WaitApplications(ctx))
	}), "everything after needs it")

	require.True(t, t.Run("cluster-proxy and managed-serviceaccount, built from source, installed with their charts; their agents Available on every spoke",
		func(t *testing.T) { installOCMAddons(t, ctx, r) }), "everything after needs them")

	gc := &appsv1beta1.GitOpsCluster{}
	require.True(t, t.Run("the seed GitOpsCluster asks for live resources: Readable, each cluster Secret through cluster-proxy", func(t *testing.T) {
		key := client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "gitops-managed"}
		require.NoError(t, f.Hub.Client.Get(ctx, key, gc))
		patch := client.MergeFrom(gc.DeepCopy())
		gc.Spec.GitOpsAddon.LiveResources = &appsv1beta1.LiveResourcesSpec{Enabled: ptr.To(true)}
		require.NoError(t, f.Hub.Client.Patch(ctx, gc, patch))
		var cond *metav1.Condition
		started := time.Now()
		ok := assert.Eventually(t, func() bool {
			if f.Hub.Client.Get(ctx, key, gc) != nil {
				return false
			}
			cond = meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionLiveResources)
			return cond != nil && cond.Status == metav1.ConditionTrue
		}, 5*time.Minute, time.Second)
		require.True(t, ok, "LiveResources: %+v", cond)
		t.Logf("LiveResources %s %.1fs after the GitOpsCluster asked: %s", cond.Reason, time.Since(started).Seconds(), cond.Message)
		for _, s := range r.Spokes {
			secret := &corev1.Secret{}
			require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: gitopscluster.ClusterSecretName(s.Name)}, secret))
			assert.Equal(t, "https://cluster-proxy-addon-user."+ocmAddonsNamespace+".svc:9092/"+s.Name, string(secret.Data["server"]))
			assert.Contains(t, string(secret.Data["config"]), "bearerToken", "%s's token", s.Name)
		}
	}), "everything after needs it")

	spokes := map[string]*harness.Spoke{}
	for _, s := range r.Spokes {
		spokes[s.Name] = s
	}
	t.Run("no identity the hub holds may write to a spoke (each spoke's SubjectAccessReview of its token's user)", func(t *testing.T) {
		assertHubHoldsNoSpokeWriter(t, ctx, r.Hub.Client, spokes)
	})

	server := startLiveResourcesServer(t, ctx, r)
	pods := map[string]apptree.Node{}
	for _, s := range r.Spokes {
		t.Run("the hub's argocd-server reads "+s.Name+"'s live resources through cluster-proxy, and cannot write", func(t *testing.T) {
			pods[s.Name] = liveResourcesCalls(t, ctx, server, s, "guestbook-"+s.Name, "guestbook")
		})
	}
	t.Run("in a real browser ("+EnvArgoCDWithUI+"): each guestbook's tree, its Pod's live manifest and logs", func(t *testing.T) {
		for _, s := range r.Spokes {
			podPagesInBrowser(t, ctx, server.URL, contract.GitOpsNamespace, "guestbook-"+s.Name, pods[s.Name], "guestbook-ui", realpods.GuestbookDeploymentName)
		}
	})
}

// installOCMAddons builds both addons' images from ./bin, imports them into every node,
// installs both charts on the hub (cluster-proxy with its user server, which the hub's
// Argo CD reads through) and waits for each spoke's two addons to be Available.
func installOCMAddons(t *testing.T, ctx context.Context, r *realpods.Fleet) {
	cpVersion, msaVersion := os.Getenv("CLUSTER_PROXY_VERSION"), os.Getenv("MANAGED_SERVICEACCOUNT_VERSION")
	require.NotEmpty(t, cpVersion, "CLUSTER_PROXY_VERSION (make test-live-resources sets it)")
	require.NotEmpty(t, msaVersion, "MANAGED_SERVICEACCOUNT_VERSION (make test-live-resources sets it)")
	bin := r.BinDir()
	images := []harness.ImageSpec{
		harness.StaticBinariesImage(clusterProxyImage+":"+cpVersion, "65532:65532", map[string]string{
			"/proxy-server": filepath.Join(bin, "anp-proxy-server"), "/proxy-agent": filepath.Join(bin, "anp-proxy-agent"),
			"/agent": filepath.Join(bin, "cluster-proxy-addon-agent"), "/manager": filepath.Join(bin, "cluster-proxy-addon-manager"),
			"/cluster-proxy": filepath.Join(bin, "cluster-proxy"),
		}),
		harness.StaticBinariesImage(managedServiceAccountImage+":"+msaVersion, "65532:65532", map[string]string{"/msa": filepath.Join(bin, "managed-serviceaccount")}),
	}
	for _, image := range images {
		archive, err := image.WriteDockerArchiveIn(filepath.Join(r.WorkDir, "image", "ocm-addons"))
		require.NoError(t, err)
		for _, node := range r.Nodes {
			require.NoError(t, node.Import(ctx, archive), "importing %s", image.Ref)
		}
	}
	helm := func(args ...string) {
		args = append(args, "--kubeconfig", r.Hub.Kubeconfig, "--namespace", ocmAddonsNamespace, "--create-namespace", "--wait=false")
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "helm"), args...).CombinedOutput()
		require.NoError(t, err, "helm %s: %s", strings.Join(args, " "), out)
	}
	helm("install", "managed-serviceaccount", filepath.Join(moduleDir(t, "open-cluster-management.io/managed-serviceaccount", msaVersion), "charts", "managed-serviceaccount"),
		"--set", "image="+managedServiceAccountImage, "--set", "tag="+msaVersion)
	// The two charts both bind the ManagedClusterSet global; cluster-proxy then takes
	// managed-serviceaccount's Placement of it, as its README says for that case.
	helm("install", "cluster-proxy", filepath.Join(moduleDir(t, "open-cluster-management.io/cluster-proxy", cpVersion), "charts", "cluster-proxy"),
		"--set", "tag="+cpVersion, "--set", "enableServiceProxy=true", "--set", "userServer.enabled=true",
		"--set", "installByPlacement.placementName=global", "--set", "installByPlacement.placementNamespace="+ocmAddonsNamespace)

	for _, s := range r.Spokes {
		for _, addon := range []string{"managed-serviceaccount", "cluster-proxy"} {
			waitOCMAddonAvailable(t, ctx, r, s.Name, addon)
		}
	}
	waitAvailable(t, ctx, r.Hub.Client, r.Nodes[r.Hub.Name], ocmAddonsNamespace, "cluster-proxy-addon-user")
}

// moduleDir is where the Go module cache holds module@version (make ocm-addons-env
// downloaded it): the charts are in the module.
func moduleDir(t *testing.T, module, version string) string {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	require.NoError(t, err, "go mod download %s@%s", module, version)
	var m struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &m))
	require.NotEmpty(t, m.Dir, "%s@%s's directory", module, version)
	return m.Dir
}

// waitOCMAddonAvailable waits for one of OCM's addons to be Available on a spoke, naming
// its conditions and its agent pods' logs when it is not.
func waitOCMAddonAvailable(t *testing.T, ctx context.Context, r *realpods.Fleet, cluster, name string) {
	t.Helper()
	addon := &addonv1beta1.ManagedClusterAddOn{}
	started := time.Now()
	ok := assert.Eventually(t, func() bool {
		return r.Hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, addon) == nil &&
			meta.IsStatusConditionTrue(addon.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)
	}, 6*time.Minute, 2*time.Second)
	if !ok {
		t.Logf("%s on %s: %+v\n%s", name, cluster, addon.Status.Conditions, podsOf(ctx, r, cluster))
		t.Logf("the hub's %s:\n%s", ocmAddonsNamespace, podsOf(ctx, r, r.Hub.Name))
	}
	require.True(t, ok, "%s Available on %s", name, cluster)
	t.Logf("%s Available on %s %.1fs after it was installed", name, cluster, time.Since(started).Seconds())
}

// podsOf lists the pods of a cluster's OCM addon namespaces with the end of their logs.
func podsOf(ctx context.Context, r *realpods.Fleet, cluster string) string {
	c := r.Hub.Client
	for _, s := range r.Spokes {
		if s.Name == cluster {
			c = s.Client
		}
	}
	var b strings.Builder
	for _, namespace := range []string{ocmAddonsNamespace, "open-cluster-management-cluster-proxy", harness.AddonNamespace} {
		list := &corev1.PodList{}
		_ = c.List(ctx, list, client.InNamespace(namespace))
		for _, p := range list.Items {
			fmt.Fprintf(&b, "pod %s/%s %s %+v\n%s\n", p.Namespace, p.Name, p.Status.Phase, p.Status.ContainerStatuses, r.Nodes[cluster].PodLogs(p.Namespace, p.Name, 20))
		}
	}
	return b.String()
}

// startLiveResourcesServer exposes the user server on the hub's node and starts a hub
// argocd-server that reaches it under the Service's name.
func startLiveResourcesServer(t *testing.T, ctx context.Context, r *realpods.Fleet) *argocd.Server {
	user := &corev1.Service{}
	require.NoError(t, r.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ocmAddonsNamespace, Name: "cluster-proxy-addon-user"}, user))
	nodePort := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocmAddonsNamespace, Name: userServerNodePort},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: user.Spec.Selector,
			Ports: []corev1.ServicePort{{Name: "https", Port: 9092, TargetPort: intstr.FromInt32(9092)}}},
	}
	require.NoError(t, r.Hub.Client.Create(ctx, nodePort))
	require.NotZero(t, nodePort.Spec.Ports[0].NodePort)
	address := net.JoinHostPort(r.Nodes[r.Hub.Name].IP, strconv.Itoa(int(nodePort.Spec.Ports[0].NodePort)))
	proxy, err := harness.StartServiceProxy(map[string]string{"cluster-proxy-addon-user." + ocmAddonsNamespace + ".svc:9092": address})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	server, err := argocd.StartServer(ctx, r.Fleet, r.HubArgoCD, argocd.ServerOptions{HTTPSProxy: proxy.URL, Name: "argocd-server-live", UI: os.Getenv(EnvArgoCDWithUI)})
	require.NoError(t, err)
	return server
}

// liveResourcesCalls makes the calls of the hub's Argo CD UI for a pulled Application: the
// live manifests of its ConfigMap and of its running Pod (their uids the spoke's), the
// Deployment's events, the Pod's log line; a Secret and a delete, which the spoke refuses.
// It returns the Pod's node, which the browser subtest opens.
func liveResourcesCalls(t *testing.T, ctx context.Context, server *argocd.Server, s *harness.Spoke, app, destination string) apptree.Node {
	token, err := server.Login(ctx)
	require.NoError(t, err)
	path := "/api/v1/applications/" + app
	var tree apptree.Tree
	require.Eventually(t, func() bool {
		tree = apptree.Tree{}
		return server.Get(ctx, token, path+"/resource-tree", nil, &tree) == nil &&
			strings.Contains(strings.Join(nodeNames(tree.Nodes), ","), "Pod "+destination+"/"+realpods.GuestbookDeploymentName+"-")
	}, 3*time.Minute, time.Second, "the tree of %s down to its Pod", app)
	pod := nodeOf(t, tree, "Pod", realpods.GuestbookDeploymentName+"-")
	deployment := nodeOf(t, tree, "Deployment", realpods.GuestbookDeploymentName)

	for _, n := range []apptree.Node{nodeOf(t, tree, "ConfigMap", "guestbook-ui"), pod} {
		var live struct{ Manifest string }
		started := time.Now()
		var last error
		ok := assert.Eventually(t, func() bool {
			last = server.Get(ctx, token, path+"/resource", resourceQuery("", n), &live)
			return last == nil
		}, 2*time.Minute, time.Second)
		require.True(t, ok, "the live manifest of %s %s: %v", n.Kind, n.Name, last)
		assert.Contains(t, live.Manifest, `"uid":"`+n.UID+`"`, "the live %s %s, from the spoke", n.Kind, n.Name)
		t.Logf("%s: live manifest of %s %s/%s through cluster-proxy: %d bytes (%v)", app, n.Kind, n.Namespace, n.Name, len(live.Manifest),
			time.Since(started).Round(100*time.Millisecond))
	}
	var denied struct{ Manifest string }
	err = server.Get(ctx, token, path+"/resource", resourceQuery("", nodeOf(t, tree, "Secret", "guestbook-db")), &denied)
	assert.Error(t, err, "the reader reads no Secret")
	t.Logf("%s: live manifest of the Secret: %v", app, err)

	var events struct{ Items []corev1.Event }
	assert.Eventually(t, func() bool {
		q := url.Values{"resourceNamespace": {destination}, "resourceName": {deployment.Name}, "resourceUID": {deployment.UID}}
		return server.Get(ctx, token, path+"/events", q, &events) == nil && len(events.Items) > 0
	}, time.Minute, time.Second, "the Deployment's events, from the spoke")
	for _, e := range events.Items {
		t.Logf("%s: event of Deployment %s: %s %s", app, deployment.Name, e.Reason, e.Message)
	}

	var logs []byte
	assert.Eventually(t, func() bool {
		logs, err = server.GetRaw(ctx, token, path+"/logs", url.Values{"namespace": {destination}, "podName": {pod.Name},
			"container": {"web"}, "tailLines": {"10"}, "follow": {"false"}})
		return err == nil && strings.Contains(string(logs), "podcheck: pod "+pod.Name+" serving on")
	}, 2*time.Minute, time.Second, "the Pod's log line, from the spoke's kubelet through cluster-proxy")
	t.Logf("%s: logs of Pod %s: %q (error %v)", app, pod.Name, logs, err)

	q := resourceQuery("", nodeOf(t, tree, "ConfigMap", "guestbook-ui"))
	q.Set("force", "false")
	q.Set("orphan", "false")
	err = server.Delete(ctx, token, path+"/resource", q)
	assert.Error(t, err, "the hub cannot delete on the spoke: the reader only reads")
	t.Logf("%s: deleting the ConfigMap from the hub's UI: %v", app, err)
	assert.True(t, exists(ctx, s.Client, &corev1.ConfigMap{}, destination+"/guestbook-ui"), "the ConfigMap is still on the spoke")
	return pod
}
