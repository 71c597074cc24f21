package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
)

// edge is a managed cluster without the gitops addon until the Argo CD Agent subtest
// puts it in autonomous mode by its label.
const edge = "edge"

// agentModeGitOpsCluster puts the clusters labelled argocd-agent=true (Placement
// "agents") in Argo CD Agent mode, managed unless a cluster's label says otherwise, with
// the principal at principal (host:port).
func agentModeGitOpsCluster(principal string) string {
	host, port, _ := net.SplitHostPort(principal)
	return fmt.Sprintf(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: agent-fleet, namespace: openshift-gitops}
spec:
  argoServer: {argoNamespace: openshift-gitops}
  placementRef: {kind: Placement, name: agents}
  gitopsAddon:
    enabled: true
    argoCDAgent: {enabled: true, mode: managed, serverAddress: %q, serverPort: %q}
`, host, port)
}

// agentSpoke is one agent-mode cluster of the subtest.
type agentSpoke struct {
	spoke *harness.Spoke
	mode  string
	// health is the loopback port of argocd-agent's health endpoint (its Service on a
	// real cluster), which gitops-addon's agent asks.
	health string
	// operator is the GitOps operator's process on the spoke.
	operator *harness.Process
}

// argoCDAgentMode: bare (managed, the GitOpsCluster's mode) and edge (autonomous, by its
// ManagedCluster label) get argocd-agent's client certificate from OCM's real
// registration flow (the klusterlet asks, the manager approves and signs with the hub's
// argocd-agent-ca), the real GitOps operator renders argocd-agent in each mode from the
// delivered ArgoCD CR with the Secrets gitops-addon provides, a renewal reaches it with no
// manual action, and the hub says the agents are not connected while no principal runs.
// With ARGOCD_AGENT_BIN, the real principal and agents then connect and carry
// Applications both ways. The clusters leave agent mode and the addon at the end.
func argoCDAgentMode(t *testing.T, ctx context.Context, a *argoFleet) {
	principal := harness.FreeAddress()
	spokes := []*agentSpoke{
		{spoke: a.spokes[bare], mode: appsv1beta1.ArgoCDAgentModeManaged},
		{spoke: a.spokes[edge], mode: appsv1beta1.ArgoCDAgentModeAutonomous},
	}
	require.NoError(t, install.ApplyYAML(ctx, a.f.Hub.Client, []byte(placementByLabel("agents", "argocd-agent"))))
	require.NoError(t, install.LabelCluster(ctx, a.f.Hub, edge, contract.ArgoCDAgentMode, appsv1beta1.ArgoCDAgentModeAutonomous))
	for _, s := range spokes {
		s.health = argocd.FreeAgentPort()
		a.p.SetAgentFlags(s.spoke.Name, map[string]string{
			"--argocd-agent-health-url":      "http://127.0.0.1:" + s.health + "/healthz",
			"--argocd-agent-health-interval": "2s",
		})
		require.NoError(t, install.LabelCluster(ctx, a.f.Hub, s.spoke.Name, "argocd-agent", "true"))
	}
	require.NoError(t, install.ApplyYAML(ctx, a.f.Hub.Client, []byte(agentModeGitOpsCluster(principal))))
	var stop []*harness.Process
	defer func() {
		// Out of agent mode and out of the addon; the operators run until the addon's
		// teardown hook has had them finalize the ArgoCD CR.
		gc := &appsv1beta1.GitOpsCluster{}
		gc.Namespace, gc.Name = contract.GitOpsNamespace, "agent-fleet"
		assert.NoError(t, client.IgnoreNotFound(a.f.Hub.Client.Delete(ctx, gc)))
		for _, s := range spokes {
			assert.Eventually(t, func() bool {
				return !exists(ctx, a.f.Hub.Client, &addonv1beta1.ManagedClusterAddOn{}, s.spoke.Name+"/"+contract.AddonName)
			}, 3*time.Minute, time.Second, "%s leaves the gitops addon again", s.spoke.Name)
			assert.False(t, exists(ctx, s.spoke.Client, &corev1.Secret{}, contract.GitOpsNamespace+"/"+argocdagent.ClientTLSSecret),
				"the teardown hook removed the argocd-agent-client-tls gitops-addon kept on %s", s.spoke.Name)
			stop = append(stop, a.p.Agent(s.spoke.Name))
		}
		for _, p := range stop {
			if p != nil {
				assert.NoError(t, p.Stop())
			}
		}
	}()
	start := time.Now()
	agents := map[string]*harness.Spoke{}
	for _, s := range spokes {
		agents[s.spoke.Name] = s.spoke
	}
	require.NoError(t, <-startAgentsWhenDelivered(ctx, a.p, agents))
	for _, s := range spokes {
		var err error
		s.operator, err = argocd.StartOperator(ctx, a.f, s.spoke, a.p.Binary)
		require.NoError(t, err)
		stop = append(stop, s.operator)
	}

	hubCA := &corev1.Secret{}
	for _, s := range spokes {
		issued := waitArgoCDAgentCertificate(t, ctx, s.spoke, nil)
		t.Logf("%s (%s): certificate issued, handed over and argocd-agent rendered %v after the GitOpsCluster was applied",
			s.spoke.Name, s.mode, time.Since(start).Round(time.Second))
		assert.Equal(t, s.spoke.Name, issued.Subject.CommonName, "the agent's name, as the principal's auth %s reads it", signer.PrincipalAuth)
		require.NoError(t, a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: pki.CASecret}, hubCA))
		roots := x509.NewCertPool()
		require.True(t, roots.AppendCertsFromPEM(hubCA.Data[corev1.TLSCertKey]))
		_, err := issued.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		require.NoError(t, err, "signed by the hub's argocd-agent-ca")
		spokeCA := &corev1.Secret{}
		require.NoError(t, s.spoke.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: pki.CASecret}, spokeCA))
		assert.Equal(t, map[string][]byte{"ca.crt": hubCA.Data[corev1.TLSCertKey]}, spokeCA.Data, "the CA's certificate, never its key")

		env := argoCDAgentEnv(t, ctx, s.spoke)
		host, port, _ := net.SplitHostPort(principal)
		assert.Equal(t, host, env["ARGOCD_AGENT_REMOTE_SERVER"])
		assert.Equal(t, port, env["ARGOCD_AGENT_REMOTE_PORT"])
		assert.Equal(t, s.mode, env["ARGOCD_AGENT_MODE"], "%s runs argocd-agent in its own mode", s.spoke.Name)
		assert.Equal(t, argocdagent.ClientTLSSecret, env["ARGOCD_AGENT_TLS_SECRET_NAME"])
		assert.Equal(t, pki.CASecret, env["ARGOCD_AGENT_TLS_ROOT_CA_SECRET_NAME"])
		assert.False(t, exists(ctx, s.spoke.Client, &appsv1.Deployment{}, contract.GitOpsNamespace+"/"+contract.ArgoCDName+"-server"),
			"%s runs no argocd-server: the hub's Argo CD is where its Applications are seen", s.spoke.Name)
	}

	// OCM renews the certificate (forced here, as the registration agent does near expiry).
	s := spokes[0].spoke
	issued := waitArgoCDAgentCertificate(t, ctx, s, nil)
	before := argoCDAgentStartedWith(ctx, s)
	renewedAt := time.Now()
	source := argocdagent.SourceSecretName(contract.AddonName, signer.SignerName)
	require.NoError(t, s.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: addon.DefaultInstallNamespace, Name: source}}))
	require.Eventually(t, func() bool {
		renewed := secretCertificate(ctx, s, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: argocdagent.ClientTLSSecret})
		return renewed != nil && renewed.SerialNumber.Cmp(issued.SerialNumber) != 0 && argoCDAgentStartedWith(ctx, s) != before
	}, 3*time.Minute, 500*time.Millisecond, "the renewed certificate reaches argocd-agent-client-tls and argocd-agent restarts onto it")
	t.Logf("renewal reached argocd-agent in %v", time.Since(renewedAt).Round(100*time.Millisecond))

	for _, s := range spokes {
		waitAddonCondition(t, ctx, a.f.Hub, s.spoke.Name, contract.ConditionArgoCDAgentCertificate, func(c metav1.Condition) bool {
			return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "runs with it")
		}, "the agent reports the certificate in place")
		waitAddonCondition(t, ctx, a.f.Hub, s.spoke.Name, contract.ConditionArgoCDAgentConnected, func(c metav1.Condition) bool {
			return c.Status == metav1.ConditionFalse && c.Reason == contract.ReasonHealthEndpointUnreachable
		}, "no argocd-agent answers yet: the agent says so")
	}
	waitAgentFleetSays(t, ctx, a, appsv1beta1.ReasonArgoCDAgentsNotConnected, "Argo CD Agent client certificate in place on 2 of 2",
		"argocd-agent connected to the principal on 0 of 2; not connected: bare, edge")

	t.Run("with the real argocd-agent ("+argocd.AgentBinaryEnv+"): agents connect; managed Applications run on the spoke, autonomous ones show on the hub", func(t *testing.T) {
		bin, err := argocd.AgentBinary()
		require.NoError(t, err)
		if bin == "" {
			t.Skipf("set %s to an argocd-agent binary (github.com/argoproj-labs/argocd-agent, built by you) to run the principal and agents against the fleet", argocd.AgentBinaryEnv)
		}
		stop = append(stop, argoCDAgentInterop(t, ctx, a, bin, principal, spokes)...)
	})
}

// argoCDAgentInterop runs the real principal on the hub and the operator-rendered
// argocd-agent with the spoke's Argo CD on each cluster, and returns their processes.
func argoCDAgentInterop(t *testing.T, ctx context.Context, a *argoFleet, bin, principal string, spokes []*agentSpoke) []*harness.Process {
	var started []*harness.Process
	p, err := argocd.StartPrincipal(ctx, a.f, argocd.PrincipalOptions{Binary: bin, Address: principal, Redis: a.argo.Hub.RedisAddress, Agents: []string{bare, edge}})
	require.NoError(t, err)
	started = append(started, p)
	connecting := time.Now()
	for _, s := range spokes {
		instance, err := argocd.StartSpoke(ctx, a.f, s.spoke)
		require.NoError(t, err)
		argocd.StopWithWorkloads(ctx, s.spoke, s.operator, instance)
		agent, err := argocd.StartArgoCDAgent(ctx, a.f, s.spoke, bin, instance.RedisAddress, s.health)
		require.NoError(t, err)
		argocd.StopWithWorkload(ctx, s.spoke.Cluster, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
			Namespace: contract.GitOpsNamespace, Name: argocdagent.Deployment(contract.ArgoCDName)}}, agent)
		started = append(started, agent)
	}
	for _, s := range spokes {
		waitAddonCondition(t, ctx, a.f.Hub, s.spoke.Name, contract.ConditionArgoCDAgentConnected, func(c metav1.Condition) bool {
			return c.Status == metav1.ConditionTrue
		}, "argocd-agent connects to the principal with the certificate OCM issued")
	}
	t.Logf("both agents reported connected %v after they started", time.Since(connecting).Round(100*time.Millisecond))
	waitAgentFleetSays(t, ctx, a, appsv1beta1.ReasonAddOnsAvailable, "argocd-agent connected to the principal on 2 of 2.")

	startAgentModeNodes(t, ctx, a, spokes)
	_, err = a.argo.Repo.Commit("the guestbook of the Argo CD Agent mode test", agentGuestbook())
	require.NoError(t, err)
	t.Run("managed: an Application created on the hub in the cluster's namespace runs on the spoke, its status comes back", func(t *testing.T) {
		app := agentApplication(bare, "agent-managed", a.argo.Repo.URL(), "managed-guestbook")
		// The hub's argocd-server reaches the cluster by its cluster Secret (the principal's
		// resource proxy); argocd-agent makes it the spoke's in-cluster.
		require.NoError(t, unstructured.SetNestedMap(app.Object, map[string]any{"name": bare, "namespace": "managed-guestbook"}, "spec", "destination"))
		require.NoError(t, a.f.Hub.Client.Create(ctx, app))
		created := time.Now()
		waitAgentAppSynced(t, ctx, a.f.Hub, bare, "agent-managed")
		t.Logf("hub Application %s/agent-managed Synced %v after it was created", bare, time.Since(created).Round(100*time.Millisecond))
		assert.True(t, exists(ctx, a.spokes[bare].Client, &corev1.ConfigMap{}, "managed-guestbook/guestbook-ui"), "deployed on the spoke")
	})
	t.Run("autonomous: an Application created on the spoke appears on the hub in the cluster's namespace with its status", func(t *testing.T) {
		app := agentApplication(contract.GitOpsNamespace, "agent-autonomous", a.argo.Repo.URL(), "autonomous-guestbook")
		require.NoError(t, a.spokes[edge].Client.Create(ctx, app))
		created := time.Now()
		waitAgentAppSynced(t, ctx, a.f.Hub, edge, "agent-autonomous")
		t.Logf("Application agent-autonomous shown on the hub as %s/agent-autonomous, Synced, %v after it was created on the spoke",
			edge, time.Since(created).Round(100*time.Millisecond))
		assert.True(t, exists(ctx, a.spokes[edge].Client, &corev1.ConfigMap{}, "autonomous-guestbook/guestbook-ui"), "deployed on the spoke")
	})
	server, proxy := startAgentModeServer(t, ctx, a)
	defer func() { assert.NoError(t, proxy.Close()) }()
	started = append(started, server.Process)
	var managedPod, autonomousPod apptree.Node
	t.Run("the hub's Argo CD UI: the tree, live manifests (a custom resource's too), events and logs of a managed Application", func(t *testing.T) {
		managedPod = agentModeUICalls(t, ctx, a, server, bare, "agent-managed", "managed-guestbook")
	})
	t.Run("the hub's Argo CD UI: the same of an autonomous Application", func(t *testing.T) {
		autonomousPod = agentModeUICalls(t, ctx, a, server, edge, "agent-autonomous", "autonomous-guestbook")
	})
	t.Run("in a real browser ("+EnvArgoCDWithUI+"): the tree, the Pod's live manifest and its logs of each", func(t *testing.T) {
		podPagesInBrowser(t, ctx, server.URL, bare, "agent-managed", managedPod, "guestbook-ui", "guestbook-team")
		podPagesInBrowser(t, ctx, server.URL, edge, "agent-autonomous", autonomousPod, "guestbook-ui", "guestbook-team")
	})
	return started
}

// agentGuestbookPath is the Argo CD Agent mode test's application in the repository: the
// guestbook, a Deployment whose Pod runs on the spoke's node (the tree's children, its
// events, its logs), and a custom resource (an AppProject outside Argo CD's namespace:
// Argo CD ignores it there).
const agentGuestbookPath = "agent-guestbook"

// agentPodsTaint keeps every pod but the agent-mode test's own off the spokes' nodes: the
// spokes' other workloads (Argo CD, the operator, the agents) run as processes here.
var agentPodsTaint = corev1.Taint{Key: agentPodsTaintKey, Effect: corev1.TaintEffectNoSchedule}

const agentPodsTaintKey = "e2e.gitops-addon.io/agent-mode-pods"

// startAgentModeNodes gives each agent-mode spoke a node (kubelet, containerd) tainted
// with agentPodsTaint, with the podcheck image: the guestbook's web Pod runs there, so
// its log lines are a kubelet's, read through the spoke's kube-apiserver by argocd-agent.
func startAgentModeNodes(t *testing.T, ctx context.Context, a *argoFleet, spokes []*agentSpoke) {
	image, err := harness.BuildPodcheckImage(ctx, t.TempDir())
	require.NoError(t, err)
	for _, s := range spokes {
		node, err := a.f.AddNode(ctx, s.spoke.Cluster, agentPodsTaint)
		require.NoError(t, err)
		require.NoError(t, node.ImportImage(ctx, image))
	}
}

// agentWebDeployment is the guestbook's Deployment that runs: podcheck, tolerating
// agentPodsTaint, as the non-root user of its image.
var agentWebDeployment = harness.PodcheckDeployment("web", agentPodsTaintKey)

func agentGuestbook() map[string]string {
	files := map[string]string{
		agentGuestbookPath + "/deployment.yaml": agentWebDeployment,
		agentGuestbookPath + "/project.yaml": `apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: guestbook-team}
spec: {description: a custom resource the hub's UI shows live}
`,
	}
	for name, content := range argocd.Apps {
		if dir, file, _ := strings.Cut(name, "/"); dir == "guestbook" {
			files[agentGuestbookPath+"/"+file] = content
		}
	}
	return files
}

// waitAgentAppSynced waits until an Application of the agent-mode test is Synced on the
// hub with a health (its Deployment's Pod never runs: Progressing, then Degraded).
func waitAgentAppSynced(t *testing.T, ctx context.Context, hub *harness.Cluster, namespace, name string) {
	t.Helper()
	waitApp(t, ctx, hub, namespace, name, 3*time.Minute, func(app *unstructured.Unstructured) bool {
		s, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		return s == "Synced" && h != ""
	}, "want Synced")
}

// startAgentModeServer runs the hub's argocd-server as users run it with argocd-agent:
// its redis is the principal's redis proxy (the agents' trees come through it), it serves
// the agents' namespaces, and it reaches each cluster by the cluster Secret gitops-addon
// wrote: the principal's resource proxy by its Service's name (a harness.ServiceProxy
// stands in for cluster DNS) with the client certificate gitops-addon issued.
func startAgentModeServer(t *testing.T, ctx context.Context, a *argoFleet) (*argocd.Server, *harness.ServiceProxy) {
	secrets := &corev1.SecretList{}
	require.NoError(t, a.f.Hub.Client.List(ctx, secrets, client.InNamespace(contract.GitOpsNamespace), client.HasLabels{"argocd-agent.argoproj-labs.io/agent-name"}))
	routes := map[string]string{}
	for _, s := range secrets.Items {
		server, err := url.Parse(string(s.Data["server"]))
		require.NoError(t, err)
		routes[server.Host] = net.JoinHostPort("127.0.0.1", argocd.PrincipalResourceProxyPort)
	}
	require.Len(t, routes, 1, "one resource proxy for both clusters' Secrets: %v", routes)
	proxy, err := harness.StartServiceProxy(routes)
	require.NoError(t, err)
	// The hub's project admits the agents' namespaces, as argocd-agent's guide has it.
	project := &unstructured.Unstructured{}
	project.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AppProject"})
	project.SetNamespace(contract.GitOpsNamespace)
	project.SetName("default")
	require.NoError(t, a.f.Hub.Client.Patch(ctx, project, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"sourceNamespaces":["`+bare+`","`+edge+`"]}}`))))
	server, err := argocd.StartServer(ctx, a.f, a.argo.Hub, argocd.ServerOptions{
		Name: "argocd-server-agent-mode", Redis: net.JoinHostPort("127.0.0.1", argocd.PrincipalRedisProxyPort),
		ApplicationNamespaces: []string{bare, edge}, HTTPSProxy: proxy.URL, UI: os.Getenv(EnvArgoCDWithUI),
	})
	require.NoError(t, err)
	t.Logf("the hub's argocd-server in Argo CD Agent mode: %s (admin / %s)", server.URL, argocd.AdminPassword)
	return server, proxy
}

// agentModeUICalls makes the calls of the hub's Argo CD UI for the Application app of
// cluster (in the hub namespace of that name), deployed to destination on the spoke: the
// resource tree down to the Pod, the live manifest of a ConfigMap, of a Pod and of a
// custom resource, a Deployment's events, the diff of the managed resources, the Pod's
// log line; and a delete through the same path, which the spoke refuses to argocd-agent.
// It returns the Pod.
func agentModeUICalls(t *testing.T, ctx context.Context, a *argoFleet, server *argocd.Server, cluster, app, destination string) apptree.Node {
	token, err := server.Login(ctx)
	require.NoError(t, err)
	path := "/api/v1/applications/" + app
	var tree apptree.Tree
	var last error
	started := time.Now()
	ok := assert.Eventually(t, func() bool {
		tree = apptree.Tree{}
		last = server.Get(ctx, token, path+"/resource-tree", url.Values{"appNamespace": {cluster}}, &tree)
		names := strings.Join(nodeNames(tree.Nodes), ",")
		return last == nil && strings.Contains(names, "Pod "+destination+"/web-")
	}, 3*time.Minute, time.Second)
	require.True(t, ok, "argocd-server's tree of %s/%s through the principal's redis proxy: %v (last error %v)", cluster, app, nodeNames(tree.Nodes), last)
	t.Logf("%s/%s: argocd-server draws %d nodes from the spoke's Argo CD (%v after asking): %v", cluster, app, len(tree.Nodes),
		time.Since(started).Round(100*time.Millisecond), nodeNames(tree.Nodes))

	pod := nodeOf(t, tree, "Pod", "web-")
	deployment := nodeOf(t, tree, "Deployment", "web")
	for _, n := range []apptree.Node{nodeOf(t, tree, "ConfigMap", "guestbook-ui"), pod, nodeOf(t, tree, "AppProject", "guestbook-team")} {
		var live struct{ Manifest string }
		require.NoError(t, server.Get(ctx, token, path+"/resource", resourceQuery(cluster, n), &live), "the live manifest of %s %s", n.Kind, n.Name)
		assert.Contains(t, live.Manifest, `"uid":"`+n.UID+`"`, "the live %s %s, from the spoke", n.Kind, n.Name)
		t.Logf("%s/%s: live manifest of %s %s/%s: %d bytes", cluster, app, n.Kind, n.Namespace, n.Name, len(live.Manifest))
	}
	var denied struct{ Manifest string }
	err = server.Get(ctx, token, path+"/resource", resourceQuery(cluster, nodeOf(t, tree, "Secret", "guestbook-db")), &denied)
	assert.Error(t, err, "argocd-agent reads no Secret")
	t.Logf("%s/%s: live manifest of the Secret: %v", cluster, app, err)

	var events struct{ Items []corev1.Event }
	assert.Eventually(t, func() bool {
		q := url.Values{"appNamespace": {cluster}, "resourceNamespace": {destination}, "resourceName": {deployment.Name}, "resourceUID": {deployment.UID}}
		return server.Get(ctx, token, path+"/events", q, &events) == nil && len(events.Items) > 0
	}, time.Minute, time.Second, "the Deployment's events, from the spoke")
	for _, e := range events.Items {
		t.Logf("%s/%s: event of Deployment %s: %s %s", cluster, app, deployment.Name, e.Reason, e.Message)
	}

	var diff struct {
		Items []struct{ Kind, Name, LiveState, TargetState string }
	}
	configMap := nodeOf(t, tree, "ConfigMap", "guestbook-ui")
	assert.Eventually(t, func() bool {
		diff.Items = nil
		if server.Get(ctx, token, path+"/managed-resources", url.Values{"appNamespace": {cluster}}, &diff) != nil {
			return false
		}
		for _, r := range diff.Items {
			if r.Kind == "ConfigMap" && r.Name == configMap.Name {
				return strings.Contains(r.LiveState, configMap.UID) && r.TargetState != ""
			}
		}
		return false
	}, time.Minute, time.Second, "the diff (managed resources, live and desired) of the ConfigMap, from the spoke")
	t.Logf("%s/%s: managed-resources (the UI's diff): %d resources", cluster, app, len(diff.Items))

	var logs []byte
	assert.Eventually(t, func() bool {
		logs, err = server.GetRaw(ctx, token, path+"/logs", url.Values{"appNamespace": {cluster}, "namespace": {destination}, "podName": {pod.Name},
			"container": {"web"}, "tailLines": {"10"}, "follow": {"false"}})
		return err == nil && strings.Contains(string(logs), "podcheck: pod "+pod.Name+" serving on")
	}, 2*time.Minute, time.Second, "the Pod's log line, from the spoke's kubelet through argocd-agent")
	t.Logf("%s/%s: logs of Pod %s: %q (error %v)", cluster, app, pod.Name, logs, err)

	q := resourceQuery(cluster, nodeOf(t, tree, "ConfigMap", "guestbook-ui"))
	q.Set("force", "false")
	q.Set("orphan", "false")
	err = server.Delete(ctx, token, path+"/resource", q)
	assert.Error(t, err, "the hub cannot delete on the spoke through the resource proxy: argocd-agent only reads")
	t.Logf("%s/%s: deleting the ConfigMap from the hub's UI: %v", cluster, app, err)
	assert.True(t, exists(ctx, a.spokes[cluster].Client, &corev1.ConfigMap{}, destination+"/guestbook-ui"), "the ConfigMap is still on the spoke")
	return pod
}

// nodeOf is the tree's node of kind whose name starts with name.
func nodeOf(t *testing.T, tree apptree.Tree, kind, name string) apptree.Node {
	t.Helper()
	for _, n := range tree.Nodes {
		if n.Kind == kind && strings.HasPrefix(n.Name, name) {
			return n
		}
	}
	require.Failf(t, "no node", "%s %s* in the tree: %v", kind, name, nodeNames(tree.Nodes))
	return apptree.Node{}
}

// resourceQuery is how the UI names one resource of an Application.
func resourceQuery(appNamespace string, n apptree.Node) url.Values {
	return url.Values{"appNamespace": {appNamespace}, "namespace": {n.Namespace}, "resourceName": {n.Name},
		"version": {n.Version}, "kind": {n.Kind}, "group": {n.Group}}
}

// agentApplication syncs the repository's guestbook into namespace destination of the
// cluster it runs on.
func agentApplication(namespace, name, repo, destination string) *unstructured.Unstructured {
	app := application(namespace, name)
	_ = unstructured.SetNestedMap(app.Object, map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": repo, "path": agentGuestbookPath, "targetRevision": "HEAD"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": destination},
		"syncPolicy": map[string]any{
			"automated":   map[string]any{"prune": true, "selfHeal": true},
			"syncOptions": []any{"CreateNamespace=true"},
		},
	}, "spec")
	return app
}

// waitArgoCDAgentCertificate waits until argocd-agent-client-tls holds OCM's certificate
// (other than not, when given) and argocd-agent's Deployment records it, and returns it.
func waitArgoCDAgentCertificate(t *testing.T, ctx context.Context, s *harness.Spoke, not *x509.Certificate) *x509.Certificate {
	t.Helper()
	source := client.ObjectKey{Namespace: addon.DefaultInstallNamespace, Name: argocdagent.SourceSecretName(contract.AddonName, signer.SignerName)}
	clientTLS := client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: argocdagent.ClientTLSSecret}
	var issued *x509.Certificate
	require.Eventually(t, func() bool {
		issued = secretCertificate(ctx, s, clientTLS)
		return issued != nil && secretCertificate(ctx, s, source) != nil && argoCDAgentStartedWith(ctx, s) != ""
	}, 5*time.Minute, time.Second, "%s: argocd-agent-client-tls holds OCM's certificate and argocd-agent's Deployment records it", s.Name)
	return issued
}

// secretCertificate is the certificate in a Secret's tls.crt, or nil.
func secretCertificate(ctx context.Context, s *harness.Spoke, key client.ObjectKey) *x509.Certificate {
	secret := &corev1.Secret{}
	if s.Client.Get(ctx, key, secret) != nil {
		return nil
	}
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	if block == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	return cert
}

// argoCDAgentStartedWith is the certificate fingerprint on argocd-agent's pod template.
func argoCDAgentStartedWith(ctx context.Context, s *harness.Spoke) string {
	d := &appsv1.Deployment{}
	if s.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: argocdagent.Deployment(contract.ArgoCDName)}, d) != nil {
		return ""
	}
	return d.Spec.Template.Annotations[argocdagent.AnnotationCertificate]
}

// argoCDAgentEnv is the environment the operator rendered for argocd-agent.
func argoCDAgentEnv(t *testing.T, ctx context.Context, s *harness.Spoke) map[string]string {
	d := &appsv1.Deployment{}
	require.NoError(t, s.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: argocdagent.Deployment(contract.ArgoCDName)}, d))
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

// waitAddonCondition waits until a cluster's ManagedClusterAddOn has a condition that ok accepts.
func waitAddonCondition(t *testing.T, ctx context.Context, hub *harness.Cluster, cluster, conditionType string, ok func(metav1.Condition) bool, what string) {
	t.Helper()
	var last *metav1.Condition
	require.Eventually(t, func() bool {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, mca) != nil {
			return false
		}
		last = meta.FindStatusCondition(mca.Status.Conditions, conditionType)
		return last != nil && ok(*last)
	}, 3*time.Minute, time.Second, "%s: %s (%s, last: %+v)", cluster, what, conditionType, last)
}

// waitAgentFleetSays waits until the agent-mode GitOpsCluster's AddOnsReady has reason
// and says each of texts.
func waitAgentFleetSays(t *testing.T, ctx context.Context, a *argoFleet, reason string, texts ...string) {
	t.Helper()
	var last *metav1.Condition
	require.Eventually(t, func() bool {
		gc := &appsv1beta1.GitOpsCluster{}
		if a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "agent-fleet"}, gc) != nil {
			return false
		}
		last = meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
		if last == nil || last.Reason != reason {
			return false
		}
		for _, text := range texts {
			if !strings.Contains(last.Message, text) {
				return false
			}
		}
		return true
	}, 2*time.Minute, time.Second, "the GitOpsCluster's AddOnsReady: %s, saying %q (last: %+v)", reason, texts, last)
}
