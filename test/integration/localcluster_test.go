package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
)

// TestHubItselfIsNeverATarget runs the manager on a real kube-apiserver whose cluster ID
// is the UID of its own kube-system Namespace, read by the manager at its start. The hub,
// registered as a managed cluster by any of the three rules (the name local-cluster, the
// label local-cluster=true, or its cluster ID claimed under another name), gets no
// ManagedClusterAddOn, and its Argo CD cluster Secret registers the in-cluster address;
// a cluster claiming another ID is an ordinary target, and the rest of the fleet becomes
// Ready.
func TestHubItselfIsNeverATarget(t *testing.T) {
	h := sharedHub(t)
	const ns = "localcluster-gitops"
	kubeSystem := &corev1.Namespace{}
	require.NoError(t, h.c.Get(h.ctx, client.ObjectKey{Name: localcluster.IDNamespace}, kubeSystem))
	hubID := string(kubeSystem.UID)
	require.NotEmpty(t, hubID)

	hubs := map[string]string{ // cluster: the evidence the condition gives
		"local-cluster":   "its name is local-cluster",
		"lc-labelled-hub": "it has the label local-cluster=true",
		"lc-imported-hub": "its ClusterClaim id.k8s.io is " + hubID,
	}
	spokes := []string{"lc-spoke", "lc-other-id"}
	h.managedCluster("local-cluster", nil)
	h.managedCluster("lc-labelled-hub", nil)
	labelled := &clusterv1.ManagedCluster{}
	require.NoError(t, h.c.Get(h.ctx, client.ObjectKey{Name: "lc-labelled-hub"}, labelled))
	h.touch(labelled, func() { labelled.Labels[localcluster.Label] = localcluster.LabelValue })
	h.managedCluster("lc-imported-hub", map[string]string{localcluster.ClaimClusterID: hubID})
	h.managedCluster("lc-spoke", nil)
	h.managedCluster("lc-other-id", map[string]string{localcluster.ClaimClusterID: "00000000-0000-4000-8000-000000000000"})
	h.placement(ns, "all-clusters", append(spokes, "local-cluster", "lc-labelled-hub", "lc-imported-hub")...)
	h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: all-clusters, namespace: localcluster-gitops}
spec:
  argoServer: {argoNamespace: localcluster-gitops}
  placementRef: {kind: Placement, name: all-clusters}
  gitopsAddon: {enabled: true}
`)

	t.Run("the hub, by each rule, is named as such", func(t *testing.T) {
		h := h.with(t)
		existing := h.waitCondition(ns, "all-clusters", appsv1beta1.ConditionExistingArgoCD, metav1.ConditionTrue, appsv1beta1.ReasonHubCluster)
		for cluster, evidence := range hubs {
			assert.Contains(t, existing.Message, "Cluster "+cluster+" is the hub itself ("+evidence)
		}
		assert.Contains(t, existing.Message, "nothing shipped there")
		assert.NotContains(t, existing.Message, "lc-spoke")
		assert.Equal(t, int32(len(hubs)), h.gitOpsCluster(ns, "all-clusters").Status.ExistingArgoCDClusters)
	})

	t.Run("the spokes get their addon, the hub none", func(t *testing.T) {
		h := h.with(t)
		for _, cluster := range spokes {
			h.waitAddon(cluster)
		}
		h.waitCondition(ns, "all-clusters", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		// Whatever was decided has been written by now; and stays so after one more pass
		// (the positive control: the GitOpsCluster woken, and reconciled again).
		gc := h.gitOpsCluster(ns, "all-clusters")
		waitReconcileAfter(t, gitopscluster.ControllerName, func() {
			h.touch(gc, func() { metav1.SetMetaDataAnnotation(&gc.ObjectMeta, "example.com/touched", "1") })
		})
		for cluster := range hubs {
			err := h.c.Get(h.ctx, types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{})
			require.True(t, apierrors.IsNotFound(err), "no ManagedClusterAddOn on %s: %v", cluster, err)
		}
	})

	t.Run("the hub is Argo CD's in-cluster destination, under its own name", func(t *testing.T) {
		h := h.with(t)
		// Argo CD keeps one cluster per server address: of the three hub clusters (the
		// same hub, registered three times), the first by name holds the in-cluster
		// Secret, and the condition says so of the others.
		secret := &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: ns, Name: clusterSecret("lc-imported-hub")}, secret))
		assert.Equal(t, localcluster.InClusterServer, string(secret.Data["server"]))
		assert.Equal(t, "lc-imported-hub", string(secret.Data["name"]))
		assert.Equal(t, "cluster", secret.Labels["argocd.argoproj.io/secret-type"])
		for _, cluster := range []string{"local-cluster", "lc-labelled-hub"} {
			err := h.c.Get(h.ctx, types.NamespacedName{Namespace: ns, Name: clusterSecret(cluster)}, &corev1.Secret{})
			assert.True(t, apierrors.IsNotFound(err), "no second Secret for the in-cluster address (%s): %v", cluster, err)
		}
		existing := h.waitCondition(ns, "all-clusters", appsv1beta1.ConditionExistingArgoCD, metav1.ConditionTrue, appsv1beta1.ReasonHubCluster)
		assert.Contains(t, existing.Message, "registered already by the Secret of cluster lc-imported-hub, the same hub")
		for _, cluster := range spokes {
			s := &corev1.Secret{}
			require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: ns, Name: clusterSecret(cluster)}, s))
			assert.Equal(t, "https://"+cluster+".example.com:6443", string(s.Data["server"]), "an ordinary cluster keeps its API URL")
		}
	})

	t.Run("the rest of the fleet becomes Ready", func(t *testing.T) {
		h := h.with(t)
		h.ownAddOnsByCMA(spokes...)
		h.markAvailable(spokes...)
		h.waitCondition(ns, "all-clusters", appsv1beta1.ConditionReady, metav1.ConditionTrue, appsv1beta1.ReasonReady)
		require.Eventually(t, func() bool { return hasEvent(h, ns, "all-clusters", appsv1beta1.ReasonHubCluster) }, timeout, poll,
			"a Normal Event says what was found")
	})
}
