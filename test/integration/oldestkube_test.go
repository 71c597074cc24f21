package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/agent"
	"github.com/gitops-addon/gitops-addon/test/agentchart"
	"github.com/gitops-addon/gitops-addon/test/fakeroute"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestOnTheOldestSupportedKubernetes runs the hub and the spoke of a self-managed hub on
// the oldest kube-apiserver gitops-addon supports
// (OLDEST_KUBE_VERSION, built from source by make test-env): the manager chart and its
// CRDs install with Helm, every GitOpsCluster ACM writes is accepted, the manager ships
// the spoke stack, the agent installs the Argo CD CRDs, and every object of the
// ManifestWork is accepted as rendered. What that release does not serve (CEL's isIP(),
// ValidatingAdmissionPolicy v1) is left out and said on a condition, not a failed install.
func TestOnTheOldestSupportedKubernetes(t *testing.T) {
	oldest := testenv.OldestKubeVersion()
	// An OpenShift-like cluster (OpenShift 4.16 runs Kubernetes 1.29): the Route API is
	// served by an aggregated server, which the Route guard protects with an admission policy.
	opts := append(frontProxyArgs(t), testenv.WithKubeAPIServerVersion(oldest),
		testenv.WithCRDPaths(testenv.OCMCRDPaths()...), testenv.WithSchemeAdder(apiregistrationv1.AddToScheme))
	env := testenv.Start(t, opts...)
	routeServer, err := fakeroute.Start()
	require.NoError(t, err)
	t.Cleanup(routeServer.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	served, err := discovery.NewDiscoveryClientForConfigOrDie(env.Config).ServerVersion()
	require.NoError(t, err)
	require.Equal(t, oldest, served.GitVersion, "the kube-apiserver under test")

	// Each step needs the one before: the first that fails ends the test.
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("the manager chart installs with its CRDs", func(t *testing.T) {
		rel, err := installChart(ctx, helmConfig(t, env.KubeconfigFile(t), chartNamespace), managerChart(t), map[string]any{})
		require.NoError(t, err, "helm install on Kubernetes %s", oldest)
		assert.Equal(t, "deployed", rel.Info.Status.String())
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		require.NoError(t, env.Client.List(ctx, crds))
		for _, crd := range crds.Items {
			if crd.Spec.Group == appsv1beta1.GroupVersion.Group {
				assert.True(t, apihelpers.IsCRDConditionTrue(&crd, apiextensionsv1.Established), "CRD %s established", crd.Name)
			}
		}
	})

	step("every GitOpsCluster ACM writes is accepted", func(t *testing.T) {
		checkACMGitOpsClusterYAML(t, env)
	})

	h := &hub{t: t, ctx: ctx, c: env.Client, env: env}
	// Not local-cluster, nor labelled local-cluster=true, nor claiming this apiserver's
	// cluster ID: the hub itself gets nothing shipped (TestHubItselfIsNeverATarget), and
	// this test needs a spoke that gets the whole stack.
	const cluster = "self-managed"
	step("the manager ships the spoke stack without the admission policy the spoke cannot serve", func(t *testing.T) {
		runManager(t, ctx, env.Config, manager.Options{
			MetricsBindAddress: "0", HealthProbeBindAddress: "0", AgentImage: "quay.io/gitops-addon/gitops-addon:test",
			ArgoNamespaces: []string{argoNS},
			// Other tests of this package run managers in the same process.
			SkipControllerNameValidation: true,
		})
		h.t = t
		h.managedCluster(cluster, map[string]string{"product.open-cluster-management.io": "OpenShift"})
		setKubeVersion(t, h, cluster, oldest)
		h.placement(argoNS, "gitops-managed", cluster)
		h.applyYAML(seedGitOpsCluster)
		h.waitCondition(argoNS, "gitops-managed", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		assert.Equal(t, []string{cluster + "-cluster-secret"}, secretNames(t, h, argoNS))
		h.ownAddOnsByCMA(cluster)
		h.reportNoExistingArgoCD(cluster)
		objects := h.stackShipped(cluster)
		assert.False(t, objects["ValidatingAdmissionPolicy/gitops-addon-agent-crds"], "a v1 ValidatingAdmissionPolicy would fail the ManifestWork on %s", oldest)
		assert.False(t, objects["ValidatingAdmissionPolicyBinding/gitops-addon-agent-crds"])
		assert.False(t, objects["Role/gitops-addon:agent:resource-summary"], "no patch on Applications without the policy that narrows it")
	})

	step("the agent installs the Argo CD CRDs and says what it could not guard", func(t *testing.T) {
		h.t = t
		h.namespace(agentchart.InstallNamespace)
		require.NoError(t, routeServer.Register(ctx, env.Client))
		require.NoError(t, fakeroute.WaitAvailable(ctx, env.Client, true, time.Minute))
		runAgent(t, ctx, env, cluster)
		crds := h.waitAgentCondition(cluster, contract.ConditionArgoCDCRDsInstalled, metav1.ConditionTrue)
		assert.Contains(t, crds.Message, "serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy", "the missing CRD policy is said")
		guard := h.waitAgentCondition(cluster, contract.ConditionRoutesCRDGuard, metav1.ConditionFalse)
		assert.Equal(t, contract.ReasonGuardUnavailable, guard.Reason, guard.Message)
	})

	step("every object of the ManifestWork is accepted as rendered", func(t *testing.T) {
		h.t = t
		var objects []*unstructured.Unstructured
		for _, work := range h.manifestWorks(cluster) {
			for _, m := range work.Spec.Workload.Manifests {
				u := &unstructured.Unstructured{}
				require.NoError(t, json.Unmarshal(m.Raw, &u.Object))
				if u.GetKind() == "Namespace" && u.GetName() == agentchart.InstallNamespace {
					continue // the klusterlet's, created above
				}
				objects = append(objects, u)
			}
		}
		// As the work agent does: the GitOps namespace exists already on a self-managed hub.
		for _, object := range inInstallOrder(objects) {
			object.SetManagedFields(nil)
			err := env.Client.Patch(ctx, object, client.Apply, client.FieldOwner("work-agent"), client.ForceOwnership, //nolint:staticcheck // SA1019: unstructured objects
				client.FieldValidation("Strict"))
			assert.NoError(t, err, "applying %s %s/%s", object.GetKind(), object.GetNamespace(), object.GetName())
		}
	})
}

// setKubeVersion reports a Kubernetes version in the ManagedCluster's status, as the
// klusterlet does; the addon framework renders the chart for it.
func setKubeVersion(t *testing.T, h *hub, cluster, version string) {
	t.Helper()
	mc := &clusterv1.ManagedCluster{}
	require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Name: cluster}, mc))
	mc.Status.Version.Kubernetes = version
	require.NoError(t, h.c.Status().Update(h.ctx, mc))
}

// runAgent runs the spoke agent's CRD installer and Route guard against env as both the
// spoke and the hub (a self-managed hub), until the test ends.
func runAgent(t *testing.T, ctx context.Context, env *testenv.Env, cluster string) {
	t.Helper()
	// The agent's liveness check hashes the hub credential's files beside the kubeconfig.
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	data, err := os.ReadFile(env.KubeconfigFile(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kubeconfig, data, 0o600))
	for _, name := range []string{"tls.crt", "tls.key"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("embedded in the kubeconfig"), 0o600))
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.Options{
			HubKubeconfig: kubeconfig, SpokeKubeconfig: kubeconfig, ClusterName: cluster, AddonNamespace: agentchart.InstallNamespace, OpenShift: true,
			MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		}, agent.CRDInstaller, agent.RouteGuard)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "the agent stopped with an error")
		case <-time.After(30 * time.Second):
			t.Error("the agent did not stop within 30s")
		}
	})
}

// waitAgentCondition waits until the agent reports a condition with status on the
// cluster's ManagedClusterAddOn.
func (h *hub) waitAgentCondition(cluster, condType string, status metav1.ConditionStatus) metav1.Condition {
	h.t.Helper()
	var last *metav1.Condition
	require.Eventually(h.t, func() bool {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if h.c.Get(h.ctx, types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca) != nil {
			return false
		}
		last = meta.FindStatusCondition(mca.Status.Conditions, condType)
		return last != nil && last.Status == status
	}, 2*timeout, poll, "agent condition %s of %s to become %s; last: %+v", condType, cluster, status, last)
	return *last
}
