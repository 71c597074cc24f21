package gitopscluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func TestManagementAddonIsDescribed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cma      *addonv1beta1.ClusterManagementAddOn
		template bool
		says     string
	}{
		{name: "Red Hat ACM's, as it ships", cma: fixtures.ACMManagementAddOn(t), template: true, says: "AddOnTemplate addon, as Red Hat ACM"},
		{name: "an AddOnTemplate given by a placement", template: true, says: "AddOnTemplate", cma: &addonv1beta1.ClusterManagementAddOn{
			Spec: addonv1beta1.ClusterManagementAddOnSpec{InstallStrategy: addonv1beta1.InstallStrategy{Placements: []addonv1beta1.PlacementStrategy{{
				Configs: []addonv1beta1.AddOnConfig{{ConfigGroupResource: addonv1beta1.ConfigGroupResource{
					Group: "addon.open-cluster-management.io", Resource: "addontemplates"}}}}}}}}},
		{name: "this chart's", says: "installed by Helm", cma: &addonv1beta1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}}, Spec: addonv1beta1.ClusterManagementAddOnSpec{
			DefaultConfigs: []addonv1beta1.AddOnConfig{{ConfigGroupResource: addonv1beta1.ConfigGroupResource{
				Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}}}}}},
		{name: "unlabelled", says: "another installer", cma: &addonv1beta1.ClusterManagementAddOn{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.template, IsTemplateAddon(tc.cma))
			assert.Contains(t, DescribeManagementAddon(tc.cma), tc.says)
		})
	}
}

// TestHubOnlyLeavesTheAddonToACM: a hub-only manager (--deliver-addon=false) beside Red
// Hat ACM's AddOnTemplate gitops-addon registers the clusters of an ACM GitOpsCluster that
// asks for the addon, and never creates, changes or removes a ManagedClusterAddOn: ACM's
// stay exactly as they are, and AddOnsReady says who delivers the addon.
func TestHubOnlyLeavesTheAddonToACM(t *testing.T) {
	ctx := context.Background()
	newHubOnly := func(t *testing.T, objs ...client.Object) (*Reconciler, client.Client) {
		c := fixtures.FakeHub(t, objs...).Build()
		return &Reconciler{Client: c, APIReader: c, HubOnly: true}, c
	}
	acmAddon := func(cluster string) *addonv1beta1.ManagedClusterAddOn {
		return &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: contract.AddonName,
			Labels: map[string]string{"app": "acm"}}}
	}

	t.Run("beside ACM's addon: clusters registered, ACM's ManagedClusterAddOns untouched, none added", func(t *testing.T) {
		gc := gitOpsCluster("gc", "p", true)
		gc.Annotations = map[string]string{appsv1beta1.AnnotationAdopt: "true"}
		stale := ownedAddonOf(t, gitOpsCluster("gc-old", "p", true), "c3")
		r, c := newHubOnly(t, append(placementObjects("p", "c1", "c2"), gc, fixtures.ACMManagementAddOn(t), acmAddon("c1"), stale)...)
		before := map[string]string{}
		for _, cluster := range []string{"c1", "c3"} {
			mca := &addonv1beta1.ManagedClusterAddOn{}
			require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca))
			before[cluster] = mca.ResourceVersion
		}
		got := reconcileOnce(t, r, gc)

		for _, cluster := range []string{"c1", "c2"} {
			require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName(cluster)}, &corev1.Secret{}),
				"cluster %s registered with Argo CD", cluster)
		}
		for cluster, rv := range before {
			mca := &addonv1beta1.ManagedClusterAddOn{}
			require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca))
			assert.Equal(t, rv, mca.ResourceVersion, "ManagedClusterAddOn on %s not changed, not adopted, not removed", cluster)
		}
		err := c.Get(ctx, types.NamespacedName{Namespace: "c2", Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{})
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "no ManagedClusterAddOn created on c2")

		cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
		require.NotNil(t, cond)
		assert.Equal(t, metav1.ConditionTrue, cond.Status)
		assert.Equal(t, appsv1beta1.ReasonAddOnDeliveredElsewhere, cond.Reason)
		assert.Contains(t, cond.Message, "AddOnTemplate addon, as Red Hat ACM delivers its gitops-addon")
		assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady))
	})

	t.Run("nothing delivers the addon: AddOnsReady False with the fix", func(t *testing.T) {
		gc := gitOpsCluster("gc", "p", true)
		r, _ := newHubOnly(t, append(placementObjects("p", "c1"), gc)...)
		got := reconcileOnce(t, r, gc)
		cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
		require.NotNil(t, cond)
		assert.Equal(t, metav1.ConditionFalse, cond.Status)
		assert.Equal(t, appsv1beta1.ReasonAddOnNotDelivered, cond.Reason)
		assert.Contains(t, cond.Message, "addonManager.enabled=true")
	})
}

// ownedAddonOf is a ManagedClusterAddOn that a GitOpsCluster created, as it labels them.
func ownedAddonOf(t *testing.T, gc *appsv1beta1.GitOpsCluster, cluster string) *addonv1beta1.ManagedClusterAddOn {
	t.Helper()
	a := desiredAddon(gc, cluster, contract.AddonSettings{}, nil)
	a.TypeMeta = metav1.TypeMeta{}
	return a
}
