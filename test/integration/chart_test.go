package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const gitOpsClusterCRD = "gitopsclusters.apps.open-cluster-management.io"

// helmConfig is a Helm action configuration for a kubeconfig and namespace.
func helmConfig(t *testing.T, kubeconfig, namespace string) *action.Configuration {
	cfg, err := install.HelmConfig(kubeconfig, namespace, t.Logf)
	require.NoError(t, err)
	return cfg
}

// managerChart loads the manager chart of this checkout.
func managerChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"))
	require.NoError(t, err)
	return c
}

// installChart runs `helm install gitops-addon` of c into chartNamespace with values,
// through the Helm SDK, as a user would with the CLI.
func installChart(ctx context.Context, cfg *action.Configuration, c *chart.Chart, values map[string]any) (*release.Release, error) {
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "gitops-addon", chartNamespace, true
	install.Timeout = 2 * time.Minute
	return install.RunWithContext(ctx, c, values)
}

// TestChartInstallsAndUninstallsOnARealAPIServer installs the manager chart with the Helm
// SDK, checks what landed, uninstalls it and checks that the CRD stays.
func TestChartInstallsAndUninstallsOnARealAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(testenv.OCMCRDPaths()...))
	ctx := context.Background()
	const namespace = chartNamespace
	cfg := helmConfig(t, env.KubeconfigFile(t), namespace)
	rel, err := installChart(ctx, cfg, managerChart(t), map[string]any{"replicas": 2})
	require.NoError(t, err, "helm install")
	assert.Equal(t, "deployed", rel.Info.Status.String())

	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Name: gitOpsClusterCRD}, crd))
	assert.True(t, apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established), "the GitOpsCluster CRD is established")

	d := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "gitops-addon-manager"}, d))
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Name: "gitops-addon-manager"}, &rbacv1.ClusterRole{}))
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Name: contract.AddonName}, cma))
	assert.Equal(t, "GitOps addon", cma.Spec.AddOnMeta.DisplayName)

	uninstall := action.NewUninstall(cfg)
	uninstall.Timeout = 2 * time.Minute
	// No kubelet runs the pre-delete hook's Job here; TestUninstall runs its command with
	// the hook's identity and RBAC.
	uninstall.DisableHooks = true
	_, err = uninstall.Run("gitops-addon")
	require.NoError(t, err, "helm uninstall")
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Name: gitOpsClusterCRD}, &apiextensionsv1.CustomResourceDefinition{}),
		"Helm never deletes CRDs: every GitOpsCluster survives an uninstall")
	err = env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "gitops-addon-manager"}, &appsv1.Deployment{})
	assert.Error(t, err, "the Deployment is removed")
}

// TestChartRefusesToInstallBesideACMsGitOpsAddon: on a hub where Red Hat ACM's gitops-addon
// (its ClusterManagementAddOn of the same name, with AddOnTemplates) exists, helm install
// fails with a message that names it and the fix, and leaves ACM's untouched.
func TestChartRefusesToInstallBesideACMsGitOpsAddon(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(testenv.OCMCRDPaths()...))
	ctx := context.Background()
	// ACM's own ClusterManagementAddOn, as its repository ships it.
	data, err := os.ReadFile(filepath.Join(acmFixturesDir(t), "addon", "clusterManagementAddon.yaml"))
	require.NoError(t, err)
	acm := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(data, &acm.Object))
	require.Equal(t, contract.AddonName, acm.GetName())
	require.NoError(t, env.Client.Create(ctx, acm))

	_, err = installChart(ctx, helmConfig(t, env.KubeconfigFile(t), chartNamespace), managerChart(t), map[string]any{})
	require.Error(t, err, "helm install beside ACM's gitops-addon")
	assert.Contains(t, err.Error(), "ClusterManagementAddOn gitops-addon already exists and was not installed by this chart")
	assert.Contains(t, err.Error(), "docs/migrating-from-acm.md")
	assert.Contains(t, err.Error(), "addonManager.enabled=false", "the refusal says how to run beside it")

	after := &addonv1alpha1.ClusterManagementAddOn{}
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Name: contract.AddonName}, after))
	assert.Equal(t, acm.GetUID(), after.UID, "ACM's ClusterManagementAddOn untouched")
	assert.Empty(t, after.Labels)

	// What the refusal says to do: hub-only beside ACM's addon.
	_, err = installChart(ctx, helmConfig(t, env.KubeconfigFile(t), chartNamespace), managerChart(t),
		map[string]any{"addonManager": map[string]any{"enabled": false}})
	require.NoError(t, err, "helm install hub-only beside ACM's gitops-addon")
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Name: contract.AddonName}, after))
	assert.Equal(t, acm.GetUID(), after.UID, "ACM's ClusterManagementAddOn is still ACM's")
	assert.Equal(t, acm.GetResourceVersion(), after.ResourceVersion, "and unchanged")
}
