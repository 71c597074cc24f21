package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/demo"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/realpods"
)

// nonRootUser is the user our image and the operator's run as (distroless's nonroot).
const nonRootUser = 65532

// TestRealPods runs gitops-addon as users run it, every part a pod on a node (containerd,
// kubelet) of its cluster (test/realpods): the manager from the image built from our
// Dockerfile and the chart installed with the real helm CLI; on two spokes (vanilla and
// OpenShift-like), the agent, the GitOps operator and the Argo CD it makes, exactly as the
// addon's ManifestWork delivers them, the chart told only which images to use. Each
// becomes Ready through its own probes, as the non-root user its manifest says, and the
// seed ApplicationSet reaches both spokes through the pull model.
func TestRealPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	f := startRealPodFleet(t)
	// The demo's own path and waits (`make demo REAL_PODS=1`): the ApplicationSet is
	// applied as soon as the stack has landed on the spokes, while their Argo CD starts.
	d, err := demo.SetUp(ctx, f, demo.Options{RealPods: true, Step: t.Logf})
	require.NoError(t, err)
	r := d.Pods
	hubNode := r.Nodes[f.Hub.Name]
	hub := f.Hub.Client

	t.Run("the seed ApplicationSet syncs to every spoke through the pull model, within the demo's stall window", func(t *testing.T) {
		require.NoError(t, d.WaitApplications(ctx))
		for _, s := range r.Spokes {
			t.Logf("guestbook-%s first Synced/Healthy on the hub %.1fs after the ApplicationSet was created", s.Name, d.FirstSynced[s.Name].Seconds())
			waitAppStatus(t, ctx, s.Cluster, "guestbook-"+s.Name, "Synced", "Healthy", time.Minute)
			assert.True(t, exists(ctx, s.Client, &corev1.ConfigMap{}, "guestbook/guestbook-ui"), "the application's ConfigMap on %s", s.Name)
		}
	})

	pods := map[string]string{} // the guestbook's Pod by spoke, as the hub's tree has it
	t.Run("the hub's argocd-server draws each guestbook's tree down to the Pod running on the spoke's node, as the spoke's Argo CD keeps it", func(t *testing.T) {
		token, err := d.Server.Login(ctx)
		require.NoError(t, err)
		for _, s := range r.Spokes {
			name := "guestbook-" + s.Name
			var tree apptree.Tree
			var last error
			started := time.Now()
			ok := assert.Eventually(t, func() bool {
				tree = apptree.Tree{}
				last = d.Server.Get(ctx, token, "/api/v1/applications/"+name+"/resource-tree", nil, &tree)
				for _, n := range tree.Nodes {
					if last == nil && n.Kind == "Pod" && strings.HasPrefix(n.Name, realpods.GuestbookDeploymentName+"-") && n.Health != nil && n.Health.Status == "Healthy" {
						pods[s.Name] = n.Name
						return true
					}
				}
				return false
			}, 3*time.Minute, time.Second)
			if !ok {
				t.Log(whyNoTree(ctx, hub, s, r.Nodes[s.Name], hubNode))
			}
			require.True(t, ok, "%s's tree on the hub, with its running Pod: %v (last error %v)", name, nodeNames(tree.Nodes), last)
			t.Logf("%s: the hub's argocd-server draws %d nodes (%v after asking): %v", name, len(tree.Nodes), time.Since(started).Round(100*time.Millisecond), nodeNames(tree.Nodes))
		}
	})
	t.Run("in a real browser ("+EnvArgoCDWithUI+"): each guestbook's tree with its running Pod", func(t *testing.T) {
		tab := logIntoHubUI(t, ctx, d.Server.URL)
		for _, s := range r.Spokes {
			require.NotEmpty(t, pods[s.Name], "the API-level subtest found %s's Pod first", s.Name)
			openTree(t, tab, d.Server.URL, contract.GitOpsNamespace, "guestbook-"+s.Name, "guestbook-ui", pods[s.Name])
		}
	})

	require.True(t, t.Run("the manager's pod from the chart becomes Ready", func(t *testing.T) {
		waitAvailable(t, ctx, hub, hubNode, install.Namespace, "gitops-addon-manager")
	}), "everything after needs it")
	t.Run("the manager runs as the non-root user its manifest says", func(t *testing.T) {
		assertNonRoot(t, ctx, hub, hubNode, install.Namespace, "gitops-addon-manager")
	})

	require.True(t, t.Run("each spoke's agent and operator pods become Ready", func(t *testing.T) {
		for _, s := range r.Spokes {
			waitAvailable(t, ctx, s.Client, r.Nodes[s.Name], harness.AddonNamespace, contract.AgentDeployment)
			waitAvailable(t, ctx, s.Client, r.Nodes[s.Name], contract.GitOpsNamespace, contract.OperatorDeployment)
		}
	}), "everything after needs it")
	t.Run("the agent and the operator run as the non-root users their manifests say", func(t *testing.T) {
		for _, s := range r.Spokes {
			assertNonRoot(t, ctx, s.Client, r.Nodes[s.Name], harness.AddonNamespace, contract.AgentDeployment)
			assertNonRoot(t, ctx, s.Client, r.Nodes[s.Name], contract.GitOpsNamespace, contract.OperatorDeployment)
		}
	})
	t.Run("the hub sees each agent's health", func(t *testing.T) {
		for _, s := range r.Spokes {
			require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, s.Name, 5*time.Minute))
		}
	})
	t.Run("the Routes guard: the agent pod installs the Routes CRD where no Route API is served, and not beside a native one", func(t *testing.T) {
		waitRouteAPI(t, ctx, f.Hub, vanilla, contract.RouteAPICRD)
		assert.True(t, exists(ctx, f.Spokes[vanilla].Client, &apiextensionsv1.CustomResourceDefinition{}, contract.RoutesCRDName), "the Routes CRD on %s", vanilla)
		waitRouteAPI(t, ctx, f.Hub, openshift, contract.RouteAPINative)
		assert.False(t, exists(ctx, f.Spokes[openshift].Client, &apiextensionsv1.CustomResourceDefinition{}, contract.RoutesCRDName), "no Routes CRD on %s", openshift)
	})
	t.Run("a deleted agent pod is recreated and its health is back on the hub", func(t *testing.T) {
		spoke := f.Spokes[vanilla]
		deleted := deploymentPod(t, ctx, spoke.Client, harness.AddonNamespace, contract.AgentDeployment)
		require.NoError(t, spoke.Client.Delete(ctx, &deleted))
		var replacement corev1.Pod
		require.Eventually(t, func() bool {
			replacement = deploymentPodOrEmpty(ctx, spoke.Client, harness.AddonNamespace, contract.AgentDeployment)
			return replacement.UID != "" && replacement.UID != deleted.UID && podReady(&replacement)
		}, 3*time.Minute, time.Second, "a new agent pod, Ready")
		// The hub's view of the agent's health is made from the Lease the agent renews on
		// its cluster: the new pod renews it.
		require.Eventually(t, func() bool {
			lease := &coordinationv1.Lease{}
			return spoke.Client.Get(ctx, client.ObjectKey{Namespace: harness.AddonNamespace, Name: contract.AddonName}, lease) == nil &&
				lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(replacement.CreationTimestamp.Time)
		}, 3*time.Minute, time.Second, "the health Lease renewed by the new pod")
		require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, spoke.Name, 5*time.Minute))
	})
	require.True(t, t.Run("the operator's Argo CD pods become Ready on each spoke", func(t *testing.T) {
		for _, s := range r.Spokes {
			for _, component := range []string{"redis", "repo-server", "server", "applicationset-controller"} {
				waitAvailable(t, ctx, s.Client, r.Nodes[s.Name], contract.GitOpsNamespace, contract.ArgoCDName+"-"+component)
			}
			waitStatefulSetReady(t, ctx, s.Client, r.Nodes[s.Name], contract.GitOpsNamespace, argocd.ControllerStatefulSet)
		}
	}), "everything after needs it")

	t.Run("no container was restarted: every liveness probe passes", func(t *testing.T) {
		namespaces := map[client.Client][]string{hub: {install.Namespace}}
		for _, s := range r.Spokes {
			namespaces[s.Client] = []string{harness.AddonNamespace, contract.GitOpsNamespace}
		}
		for c, names := range namespaces {
			for _, namespace := range names {
				list := &corev1.PodList{}
				require.NoError(t, c.List(ctx, list, client.InNamespace(namespace)))
				for _, pod := range list.Items {
					for _, s := range pod.Status.ContainerStatuses {
						assert.Zero(t, s.RestartCount, "restarts of %s/%s container %s", pod.Namespace, pod.Name, s.Name)
					}
				}
			}
		}
	})
}

// whyNoTree says what carries a spoke's trees to the hub, for a test that found none: the
// addon's conditions, and the agent's and the manager's arguments and the end of their
// logs.
func whyNoTree(ctx context.Context, hub client.Client, s *harness.Spoke, spokeNode, hubNode *harness.Node) string {
	addon := &addonv1beta1.ManagedClusterAddOn{}
	_ = hub.Get(ctx, client.ObjectKey{Namespace: s.Name, Name: contract.AddonName}, addon)
	agent := deploymentPodOrEmpty(ctx, s.Client, harness.AddonNamespace, contract.AgentDeployment)
	manager := deploymentPodOrEmpty(ctx, hub, install.Namespace, "gitops-addon-manager")
	args := func(p corev1.Pod) []string {
		if len(p.Spec.Containers) == 0 {
			return nil
		}
		return p.Spec.Containers[0].Args
	}
	return fmt.Sprintf("%s's addon conditions: %+v\nthe agent %v:\n%s\nthe manager %v:\n%s", s.Name, addon.Status.Conditions,
		args(agent), spokeNode.PodLogs(harness.AddonNamespace, agent.Name, 40), args(manager), hubNode.PodLogs(install.Namespace, manager.Name, 40))
}

// startRealPodFleet starts a real-pod fleet for the test and, once it has stopped, checks
// that its nodes left nothing on the machine.
func startRealPodFleet(t *testing.T) *harness.Fleet {
	t.Helper()
	var f *harness.Fleet
	// Registered first, so it runs last: after the fleet's Stop.
	t.Cleanup(func() {
		if f != nil {
			assert.Empty(t, f.Leftovers(), "what the fleet's nodes left on the machine after Stop")
		}
	})
	f = harness.StartForTest(t, harness.Options{RealPods: true})
	return f
}

// waitAvailable waits until a Deployment has its one replica available: its pod runs and
// its readiness probe passes.
func waitAvailable(t *testing.T, ctx context.Context, c client.Client, node *harness.Node, namespace, name string) {
	t.Helper()
	d := &appsv1.Deployment{}
	waitOneReady(t, ctx, c, node, d, client.ObjectKey{Namespace: namespace, Name: name}, func() bool { return d.Status.AvailableReplicas == 1 })
}

// waitStatefulSetReady waits until a StatefulSet has its one replica Ready.
func waitStatefulSetReady(t *testing.T, ctx context.Context, c client.Client, node *harness.Node, namespace, name string) {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	waitOneReady(t, ctx, c, node, sts, client.ObjectKey{Namespace: namespace, Name: name}, func() bool { return sts.Status.ReadyReplicas == 1 })
}

// waitOneReady reads a workload into obj until ready says its pod is Ready; if it never
// is, the test fails with what the kubelet says of the namespace's pods.
func waitOneReady(t *testing.T, ctx context.Context, c client.Client, node *harness.Node, obj client.Object, key client.ObjectKey, ready func() bool) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return c.Get(ctx, key, obj) == nil && ready() }, 5*time.Minute, time.Second) {
		t.Fatalf("%T %s has no Ready pod:\n%s", obj, key, describePods(ctx, c, node, key.Namespace))
	}
}

// describePods says what the kubelet reports of a namespace's pods, the end of the logs
// of those not Ready, and the namespace's Events: why a container waits or ended.
func describePods(ctx context.Context, c client.Client, node *harness.Node, namespace string) string {
	var b strings.Builder
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return err.Error()
	}
	for _, pod := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s\n", pod.Name, pod.Status.Phase)
		for _, s := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
			fmt.Fprintf(&b, "  %s ready=%t restarts=%d", s.Name, s.Ready, s.RestartCount)
			if w := s.State.Waiting; w != nil {
				fmt.Fprintf(&b, " waiting %s: %s", w.Reason, w.Message)
			}
			if term := s.LastTerminationState.Terminated; term != nil {
				fmt.Fprintf(&b, " last ended %s (exit %d): %s", term.Reason, term.ExitCode, term.Message)
			}
			b.WriteString("\n")
		}
		if !podReady(&pod) {
			b.WriteString(node.PodLogs(pod.Namespace, pod.Name, 15))
		}
	}
	events := &corev1.EventList{}
	if c.List(ctx, events, client.InNamespace(namespace)) == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s/%s: %s %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// deploymentPod is the one pod of a Deployment.
func deploymentPod(t *testing.T, ctx context.Context, c client.Client, namespace, name string) corev1.Pod {
	t.Helper()
	pod := deploymentPodOrEmpty(ctx, c, namespace, name)
	require.NotEmpty(t, pod.UID, "a pod of Deployment %s/%s", namespace, name)
	return pod
}

// deploymentPodOrEmpty is the running (not terminating) pod of a Deployment, or an empty
// pod.
func deploymentPodOrEmpty(ctx context.Context, c client.Client, namespace, name string) corev1.Pod {
	d := &appsv1.Deployment{}
	if c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d) != nil {
		return corev1.Pod{}
	}
	list := &corev1.PodList{}
	if c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)) != nil {
		return corev1.Pod{}
	}
	for _, pod := range list.Items {
		if pod.DeletionTimestamp.IsZero() {
			return pod
		}
	}
	return corev1.Pod{}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// assertNonRoot checks that a Deployment's pod asks for a non-root user (runAsNonRoot on
// the pod or every container, as rendered) and that no process of it on the node runs as
// root, its containers' as nonRootUser.
func assertNonRoot(t *testing.T, ctx context.Context, c client.Client, node *harness.Node, namespace, name string) {
	t.Helper()
	pod := deploymentPod(t, ctx, c, namespace, name)
	podNonRoot := pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsNonRoot != nil && *pod.Spec.SecurityContext.RunAsNonRoot
	for _, container := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		nonRoot := podNonRoot
		if s := container.SecurityContext; s != nil && s.RunAsNonRoot != nil {
			nonRoot = *s.RunAsNonRoot
		}
		assert.True(t, nonRoot, "%s container %s: runAsNonRoot, as rendered", name, container.Name)
	}
	users, err := node.PodProcessUsers(string(pod.UID))
	require.NoError(t, err)
	require.NotEmpty(t, users, "processes of %s's pod", name)
	// The pod's processes are its containers' and its sandbox's (the pause image's 65535).
	var uids []int
	for pid, uid := range users {
		assert.NotZero(t, uid, "%s: process %d runs as root", name, pid)
		uids = append(uids, uid)
	}
	assert.Contains(t, uids, nonRootUser, "%s runs as its image's non-root user", name)
}
