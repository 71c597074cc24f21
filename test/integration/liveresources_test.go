package integration

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/liveresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// addonKindCRD is a CRD of the kind an addon of OCM serves, as its chart installs it, with
// the schema left open: the manager writes and reads only the fields its tests check.
func addonKindCRD(gvk schema.GroupVersionKind, plural string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: gvk.Kind, ListKind: gvk.Kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvk.Version, Served: true, Storage: true, Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// TestLiveResourcesOnARealHub: a GitOpsCluster asks for live resources before OCM's addons
// are on the hub, and its condition says what is missing, one piece after the other, as
// managed-serviceaccount and cluster-proxy arrive; once the token is reported the cluster
// Secret reads through cluster-proxy and the spoke binds the token's ServiceAccount; turned
// off, nothing is left. On a real kube-apiserver: the metadata-only cache of
// ManagedServiceAccounts, whose API appears while the manager runs, and the caches of the
// Secrets of two names.
func TestLiveResourcesOnARealHub(t *testing.T) {
	h := newHub(t, t, func(o *manager.Options) {
		o.LiveResources, o.ClusterProxyAddress = true, "127.0.0.1:9092"
	})
	const cluster, ns, name = "live-1", "openshift-gitops", "live"
	h.managedCluster(cluster, nil)
	h.placement(ns, name, cluster)
	h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: live, namespace: openshift-gitops}
spec:
  argoServer: {argoNamespace: openshift-gitops}
  placementRef: {kind: Placement, apiVersion: cluster.open-cluster-management.io/v1beta1, name: live}
  gitopsAddon: {enabled: true, liveResources: {enabled: true}}
`)
	cond := h.waitCondition(ns, name, appsv1beta1.ConditionLiveResources, metav1.ConditionFalse, appsv1beta1.ReasonMSANotInstalled)
	assert.Contains(t, cond.Message, "Fix: install managed-serviceaccount")

	// managed-serviceaccount's and cluster-proxy's APIs arrive; a change of the
	// GitOpsCluster, or its two-minute recheck, looks again.
	h.create(addonKindCRD(liveresources.ManagedServiceAccountGVK, "managedserviceaccounts", apiextensionsv1.NamespaceScoped))
	h.create(addonKindCRD(liveresources.ProxyConfigurationGVK, "managedproxyconfigurations", apiextensionsv1.ClusterScoped))
	for _, crd := range []string{"managedserviceaccounts.authentication.open-cluster-management.io", "managedproxyconfigurations.proxy.open-cluster-management.io"} {
		waitEstablished(t, h.ctx, h.c, crd)
	}
	gc := h.gitOpsCluster(ns, name)
	h.touch(gc, func() { gc.Annotations = map[string]string{"example.com/look-again": "1"} })
	cond = h.waitCondition(ns, name, appsv1beta1.ConditionLiveResources, metav1.ConditionFalse, appsv1beta1.ReasonClusterProxyNotInstalled)
	assert.Contains(t, cond.Message, "no ManagedProxyConfiguration cluster-proxy")

	msa := &unstructured.Unstructured{}
	msa.SetGroupVersionKind(liveresources.ManagedServiceAccountGVK)
	require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: cluster, Name: liveresources.ServiceAccountName}, msa), "its ManagedServiceAccount")
	owner, ok := ownership.Recorded(msa)
	assert.True(t, ok)
	assert.Equal(t, name, owner.Name)
	validity, _, _ := unstructured.NestedString(msa.Object, "spec", "rotation", "validity")
	assert.Equal(t, "168h0m0s", validity)

	// cluster-proxy's configuration, then its CA Secret (watched: no change of the
	// GitOpsCluster is needed), then the token managed-serviceaccount's agent reports.
	mpc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"proxyServer": map[string]any{"namespace": chartNamespace}}}}
	mpc.SetGroupVersionKind(liveresources.ProxyConfigurationGVK)
	mpc.SetName(liveresources.ProxyConfigurationName)
	h.create(mpc)
	h.namespace(chartNamespace)
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: chartNamespace, Name: liveresources.ProxyCASecretName},
		Data: map[string][]byte{liveresources.ProxyCAKey: []byte("proxy-ca-pem")}})
	cond = h.waitCondition(ns, name, appsv1beta1.ConditionLiveResources, metav1.ConditionFalse, appsv1beta1.ReasonTokensPending)
	assert.Contains(t, cond.Message, "on: "+cluster+".")

	token := fixtures.ServiceAccountToken(t, "system:serviceaccount:open-cluster-management-agent-addon:"+liveresources.ServiceAccountName)
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: liveresources.ServiceAccountName,
		Labels: map[string]string{"authentication.open-cluster-management.io/is-managed-serviceaccount": "true"}},
		Data: map[string][]byte{liveresources.TokenKey: token, "ca.crt": []byte("spoke-ca")}})
	h.waitCondition(ns, name, appsv1beta1.ConditionLiveResources, metav1.ConditionTrue, appsv1beta1.ReasonLiveResourcesReadable)

	secret := &corev1.Secret{}
	require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: ns, Name: gitopscluster.ClusterSecretName(cluster)}, secret))
	assert.Equal(t, "https://127.0.0.1:9092/"+cluster, string(secret.Data["server"]))
	var cfg struct {
		BearerToken     string         `json:"bearerToken"`
		TLSClientConfig map[string]any `json:"tlsClientConfig"`
	}
	require.NoError(t, json.Unmarshal(secret.Data["config"], &cfg))
	assert.Equal(t, string(token), cfg.BearerToken)
	assert.Equal(t, "cluster-proxy-addon-user."+chartNamespace+".svc", cfg.TLSClientConfig["serverName"])
	mca := h.waitAddon(cluster)
	assert.Equal(t, "open-cluster-management-agent-addon/"+liveresources.ServiceAccountName, mca.Annotations["gitops-addon.open-cluster-management.io/live-resources-reader"])
	assert.Equal(t, contract.ServiceAccountRef{Namespace: "open-cluster-management-agent-addon", Name: liveresources.ServiceAccountName},
		contract.SettingsOf(mca.Annotations).LiveResourcesReader)

	// Off: the ManagedServiceAccount goes, the cluster Secret is blank, the binding's annotation gone.
	gc = h.gitOpsCluster(ns, name)
	h.touch(gc, func() { gc.Spec.GitOpsAddon.LiveResources.Enabled = ptr.To(false) })
	require.Eventually(t, func() bool {
		err := h.c.Get(h.ctx, client.ObjectKeyFromObject(msa), msa.DeepCopy())
		return apierrors.IsNotFound(err)
	}, timeout, poll, "the ManagedServiceAccount removed")
	require.Eventually(t, func() bool {
		require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(secret), secret))
		return string(secret.Data["config"]) == `{"tlsClientConfig":{"insecure":false}}`
	}, timeout, poll, "the cluster Secret blank again")
	assert.Equal(t, "https://"+cluster+".example.com:6443", string(secret.Data["server"]))
	mca = h.waitAddon(cluster)
	assert.NotContains(t, mca.Annotations, "gitops-addon.open-cluster-management.io/live-resources-reader")
}
