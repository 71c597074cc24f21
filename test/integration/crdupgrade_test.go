package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/crdupgrade"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const (
	chartNamespace = install.Namespace
	// managerUser is the manager's ServiceAccount as the chart creates it.
	managerUser = "system:serviceaccount:" + chartNamespace + ":gitops-addon-manager"
	// olderCRDFile is the GitOpsCluster CRD of an older release (see the file's header).
	olderCRDFile = "gitopsclusters-72a8d42-older.yaml"
	// chartCRDFile is where the chart keeps the GitOpsCluster CRD.
	chartCRDFile = "crds/apps.open-cluster-management.io_gitopsclusters.yaml"
)

// chartServiceAccountGroups are the groups of a ServiceAccount of the chart's namespace.
var chartServiceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + chartNamespace, "system:authenticated"}

// asChartServiceAccount is a hub config with the identity of one of the chart's
// ServiceAccounts (user and groups as its token would give).
func asChartServiceAccount(cfg *rest.Config, name string) *rest.Config {
	impersonated := rest.CopyConfig(cfg)
	impersonated.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + chartNamespace + ":" + name, Groups: chartServiceAccountGroups}
	return impersonated
}

// olderChart is the current chart carrying the older GitOpsCluster CRD in its crds/.
func olderChart(t *testing.T) *chart.Chart {
	c, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"))
	require.NoError(t, err)
	older, err := os.ReadFile(filepath.Join("testdata", olderCRDFile))
	require.NoError(t, err)
	for _, f := range c.Files {
		if f.Name == chartCRDFile {
			f.Data = older
			return c
		}
	}
	t.Fatalf("the chart has no %s", chartCRDFile)
	return nil
}

// servedSchema reports what the hub's GitOpsCluster CRD serves of the two changes.
func servedSchema(t *testing.T, c client.Client) (hasRedisImage, hasKindRule bool, crd *apiextensionsv1.CustomResourceDefinition) {
	crd = &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Name: gitOpsClusterCRD}, crd))
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	_, hasRedisImage = spec.Properties["gitopsAddon"].Properties["redisImage"]
	for _, rule := range spec.Properties["placementRef"].XValidations {
		hasKindRule = hasKindRule || rule.Message == "placementRef.kind must be Placement"
	}
	return hasRedisImage, hasKindRule, crd
}

func gitOpsClusterFor(name, kind string) *appsv1beta1.GitOpsCluster {
	return &appsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: name},
		Spec: appsv1beta1.GitOpsClusterSpec{
			ArgoServer:   appsv1beta1.ArgoServerSpec{ArgoNamespace: "gitops"},
			PlacementRef: &appsv1beta1.PlacementReference{Kind: kind, Name: "all"},
			GitOpsAddon:  &appsv1beta1.GitOpsAddonSpec{Enabled: ptr.To(true), GitOpsImage: "quay.example.com/argocd:v3", RedisImage: "quay.example.com/redis:7"},
		},
	}
}

// TestHelmUpgradeCarriesTheCRDForward installs the chart with an older GitOpsCluster CRD,
// creates GitOpsClusters, upgrades the chart (which, like every Helm upgrade, leaves
// crds/ alone) and starts the new manager's CRD upgrade with the manager's identity: the
// hub then serves the current schema, every object keeps its fields, the rule the older
// CRD lacked is enforced again; an older manager refuses to downgrade it, and the
// manager's identity can write no other CRD and delete none.
func TestHelmUpgradeCarriesTheCRDForward(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(testenv.OCMCRDPaths()...))
	ctx := context.Background()
	helm := helmConfig(t, env.KubeconfigFile(t), chartNamespace)
	admin := env.Client

	_, err := installChart(ctx, helm, olderChart(t), nil)
	require.NoError(t, err, "helm install with the older CRD")
	redisImage, kindRule, _ := servedSchema(t, admin)
	require.False(t, redisImage, "the older schema is served")
	require.False(t, kindRule)

	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}}))
	kept := gitOpsClusterFor("kept", "Placement")
	require.NoError(t, admin.Create(ctx, kept))
	odd := gitOpsClusterFor("odd-kind", "PlacementRule")
	require.NoError(t, admin.Create(ctx, odd), "the older schema has no rule on placementRef.kind")
	before := &appsv1beta1.GitOpsCluster{}
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(kept), before))
	require.Empty(t, before.Spec.GitOpsAddon.RedisImage, "the older schema prunes a field it does not know")

	current, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"))
	require.NoError(t, err)
	upgrade := action.NewUpgrade(helm)
	upgrade.Namespace, upgrade.Timeout = chartNamespace, 2*time.Minute
	_, err = upgrade.RunWithContext(ctx, "gitops-addon", current, nil)
	require.NoError(t, err, "helm upgrade")
	redisImage, _, _ = servedSchema(t, admin)
	require.False(t, redisImage, "Helm itself never upgrades crds/: without the manager the hub keeps the older schema")

	scheme, err := manager.NewScheme()
	require.NoError(t, err)
	asMgr, err := client.New(asChartServiceAccount(env.Config, "gitops-addon-manager"), client.Options{Scheme: scheme})
	require.NoError(t, err)
	outcomes, err := crdupgrade.Ensure(ctx, asMgr, nil)
	require.NoError(t, err, "the new manager's CRD upgrade, with the RBAC the chart grants it")
	for _, o := range outcomes {
		assert.True(t, o.Applied, "%s applied (%s)", o.Name, o.Problem)
	}

	t.Run("the current schema is served", func(t *testing.T) {
		redisImage, kindRule, crd := servedSchema(t, admin)
		assert.True(t, redisImage)
		assert.True(t, kindRule)
		assert.Equal(t, strconv.Itoa(crdupgrade.SchemaRevision), crd.Annotations[crdupgrade.AnnotationSchemaRevision])
	})
	t.Run("every object keeps its fields", func(t *testing.T) {
		after := &appsv1beta1.GitOpsCluster{}
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(kept), after))
		assert.Equal(t, before.Spec, after.Spec)
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(odd), &appsv1beta1.GitOpsCluster{}), "an object the new rule would reject is still there")
		after.Spec.GitOpsAddon.RedisImage = "quay.example.com/redis:7"
		require.NoError(t, admin.Update(ctx, after))
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(kept), after))
		assert.Equal(t, "quay.example.com/redis:7", after.Spec.GitOpsAddon.RedisImage, "the new field is kept now")
	})
	t.Run("the rule is enforced again", func(t *testing.T) {
		err := admin.Create(ctx, gitOpsClusterFor("rejected", "PlacementRule"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "placementRef.kind must be Placement")
	})
	t.Run("an older manager refuses to downgrade", func(t *testing.T) {
		_, _, crd := servedSchema(t, admin)
		crd.Annotations[crdupgrade.AnnotationSchemaRevision] = strconv.Itoa(crdupgrade.SchemaRevision + 1)
		require.NoError(t, admin.Update(ctx, crd), "as if a newer manager had applied it")
		_, _, crd = servedSchema(t, admin)
		outcomes, err := crdupgrade.Ensure(ctx, asMgr, nil)
		require.NoError(t, err, "a refusal is no error: the manager runs on the newer CRD")
		refused := false
		for _, o := range outcomes {
			if o.Name == gitOpsClusterCRD {
				refused = !o.Applied
				assert.Contains(t, o.Problem, "refusing to downgrade")
			}
		}
		assert.True(t, refused)
		_, _, unchanged := servedSchema(t, admin)
		assert.Equal(t, crd.ResourceVersion, unchanged.ResourceVersion, "not written")
	})
	t.Run("the manager can write only its own CRDs and delete none (SubjectAccessReview)", func(t *testing.T) {
		tests := []struct {
			verb, name string
			allowed    bool
		}{
			{"patch", gitOpsClusterCRD, true},
			{"update", "multiclusterapplicationsetreports.apps.open-cluster-management.io", true},
			{"patch", "applications.argoproj.io", false},
			{"update", "managedclusters.cluster.open-cluster-management.io", false},
			{"delete", gitOpsClusterCRD, false},
			{"deletecollection", "", false},
		}
		for _, tt := range tests {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: managerUser, Groups: chartServiceAccountGroups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: tt.verb, Name: tt.name},
			}}
			require.NoError(t, admin.Create(ctx, sar))
			assert.Equal(t, tt.allowed, sar.Status.Allowed, "%s %s", tt.verb, tt.name)
		}
	})
}
