package gitopscluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/liveresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

const proxyNamespace = "open-cluster-management-addon"

// liveHub is a fake hub that serves managed-serviceaccount's and cluster-proxy's kinds
// when served, with a Reconciler reading live resources from it.
func liveHub(t *testing.T, served bool, objs ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	scheme := fixtures.HubScheme(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	for gvk := range scheme.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	if served {
		mapper.Add(liveresources.ManagedServiceAccountGVK, meta.RESTScopeNamespace)
		mapper.Add(liveresources.ProxyConfigurationGVK, meta.RESTScopeRoot)
	}
	c := fixtures.FakeHub(t, objs...).WithRESTMapper(mapper).WithInterceptorFuncs(metadataOfUnstructured()).Build()
	src := &liveresources.Source{Tokens: c, ProxyCA: c, Reader: c}
	return &Reconciler{Client: c, APIReader: c, LiveResources: src}, c
}

// metadataOfUnstructured serves metadata-only reads of kinds outside the scheme from
// their whole objects, as the apiserver does (the fake client cannot convert them), and
// refuses the kinds its RESTMapper does not know, as an apiserver that does not serve them.
func metadataOfUnstructured() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := served(c, obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := served(c, obj); err != nil {
				return err
			}
			pom, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return c.Get(ctx, key, obj, opts...)
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(pom.GroupVersionKind())
			if err := c.Get(ctx, key, u, opts...); err != nil {
				return err
			}
			return metadataOf(u, pom)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := served(c, list); err != nil {
				return err
			}
			poml, ok := list.(*metav1.PartialObjectMetadataList)
			if !ok {
				return c.List(ctx, list, opts...)
			}
			ul := &unstructured.UnstructuredList{}
			ul.SetGroupVersionKind(poml.GroupVersionKind())
			if err := c.List(ctx, ul, opts...); err != nil {
				return err
			}
			poml.Items = make([]metav1.PartialObjectMetadata, len(ul.Items))
			for i := range ul.Items {
				if err := metadataOf(&ul.Items[i], &poml.Items[i]); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// served is the NoKindMatch error of an apiserver that does not serve an unstructured or
// metadata-only object's kind.
func served(c client.WithWatch, obj runtime.Object) error {
	switch obj.(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata, *unstructured.UnstructuredList, *metav1.PartialObjectMetadataList:
	default:
		return nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	_, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err
}

func metadataOf(u *unstructured.Unstructured, pom *metav1.PartialObjectMetadata) error {
	pom.TypeMeta = metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}
	m, _, _ := unstructured.NestedMap(u.Object, "metadata")
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, &pom.ObjectMeta)
}

func liveGitOpsCluster(enabled bool) *appsv1beta1.GitOpsCluster {
	gc := gitOpsCluster("gc", "p", true)
	gc.Spec.GitOpsAddon.LiveResources = &appsv1beta1.LiveResourcesSpec{Enabled: ptr.To(enabled)}
	return gc
}

// clusterProxy is what cluster-proxy's chart leaves on the hub: its configuration and CA.
func clusterProxy() []client.Object {
	mpc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"proxyServer": map[string]any{"namespace": proxyNamespace}}}}
	mpc.SetGroupVersionKind(liveresources.ProxyConfigurationGVK)
	mpc.SetName(liveresources.ProxyConfigurationName)
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: proxyNamespace, Name: liveresources.ProxyCASecretName},
		Data: map[string][]byte{liveresources.ProxyCAKey: []byte("proxy-ca-pem")}}
	return []client.Object{mpc, ca}
}

// tokenSecret is the token Secret managed-serviceaccount's agent reports for a cluster.
func tokenSecret(t *testing.T, cluster string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: liveresources.ServiceAccountName},
		Data: map[string][]byte{
			liveresources.TokenKey: fixtures.ServiceAccountToken(t, "system:serviceaccount:open-cluster-management-agent-addon:"+liveresources.ServiceAccountName),
			"ca.crt":               []byte("spoke-ca"),
		},
	}
}

func clusterSecret(t *testing.T, c client.Client, cluster string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName(cluster)}, s))
	return s
}

func readerOf(t *testing.T, c client.Client, cluster string) contract.ServiceAccountRef {
	t.Helper()
	mca := &addonv1beta1.ManagedClusterAddOn{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca))
	return contract.SettingsOf(mca.Annotations).LiveResourcesReader
}

func managedServiceAccount(t *testing.T, c client.Client, cluster string) (*metav1.PartialObjectMetadata, bool) {
	t.Helper()
	msa := &metav1.PartialObjectMetadata{}
	msa.SetGroupVersionKind(liveresources.ManagedServiceAccountGVK)
	err := c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: liveresources.ServiceAccountName}, msa)
	if err != nil {
		require.True(t, client.IgnoreNotFound(err) == nil, "reading the ManagedServiceAccount: %v", err)
		return nil, false
	}
	return msa, true
}

func TestLiveResourcesGoIntoTheClusterSecretOnceTheTokenIsThere(t *testing.T) {
	gc := liveGitOpsCluster(true)
	objs := append(append(placementObjects("p", "c1", "c2"), gc, tokenSecret(t, "c1")), clusterProxy()...)
	r, c := liveHub(t, true, objs...)
	got := reconcileOnce(t, r, gc)

	for _, cluster := range []string{"c1", "c2"} {
		msa, ok := managedServiceAccount(t, c, cluster)
		require.True(t, ok, "a ManagedServiceAccount in %s", cluster)
		owner, recorded := ownership.Recorded(msa)
		assert.True(t, recorded, "recorded as the GitOpsCluster's")
		assert.Equal(t, "gc", owner.Name)
	}

	s := clusterSecret(t, c, "c1")
	assert.Equal(t, "https://cluster-proxy-addon-user."+proxyNamespace+".svc:9092/c1", string(s.Data["server"]))
	var cfg struct {
		BearerToken     string `json:"bearerToken"`
		TLSClientConfig struct {
			Insecure bool   `json:"insecure"`
			CAData   string `json:"caData"`
		} `json:"tlsClientConfig"`
	}
	require.NoError(t, json.Unmarshal(s.Data["config"], &cfg))
	assert.Equal(t, string(tokenSecret(t, "c1").Data[liveresources.TokenKey]), cfg.BearerToken)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("proxy-ca-pem")), cfg.TLSClientConfig.CAData)
	assert.False(t, cfg.TLSClientConfig.Insecure)
	assert.Equal(t, contract.ServiceAccountRef{Namespace: "open-cluster-management-agent-addon", Name: liveresources.ServiceAccountName},
		readerOf(t, c, "c1"), "the spoke binds the read-only role to the token's ServiceAccount")

	blank := clusterSecret(t, c, "c2")
	assert.Equal(t, `{"tlsClientConfig":{"insecure":false}}`, string(blank.Data["config"]), "no token yet: blank")
	assert.True(t, readerOf(t, c, "c2").IsZero())

	cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionLiveResources)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, appsv1beta1.ReasonTokensPending, cond.Reason)
	assert.Contains(t, cond.Message, "1 of 2 cluster(s) readable")
	assert.Contains(t, cond.Message, "on: c2.")

	// c2's token comes: both readable, and a steady state writes nothing more.
	require.NoError(t, c.Create(context.Background(), tokenSecret(t, "c2")))
	got = reconcileOnce(t, r, got)
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionLiveResources), "%v", got.Status.Conditions)
	assert.Contains(t, string(clusterSecret(t, c, "c2").Data["config"]), "bearerToken")
	before := clusterSecret(t, c, "c2").ResourceVersion
	reconcileOnce(t, r, got)
	assert.Equal(t, before, clusterSecret(t, c, "c2").ResourceVersion, "no write in a steady state")
}

func TestLiveResourcesSayWhatIsNotInstalled(t *testing.T) {
	for _, tc := range []struct {
		name       string
		served     bool
		objs       []client.Object
		wantReason string
		wantText   string
	}{
		{name: "no managed-serviceaccount", wantReason: appsv1beta1.ReasonMSANotInstalled, wantText: "managed-serviceaccount is not installed"},
		{name: "no cluster-proxy", served: true, wantReason: appsv1beta1.ReasonClusterProxyNotInstalled, wantText: "cluster-proxy is not installed"},
		{name: "no CA of cluster-proxy", served: true, objs: clusterProxy()[:1], wantReason: appsv1beta1.ReasonClusterProxyNotInstalled,
			wantText: "Secret " + proxyNamespace + "/proxy-server-ca has no ca.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gc := liveGitOpsCluster(true)
			r, c := liveHub(t, tc.served, append(append(placementObjects("p", "c1"), gc, tokenSecret(t, "c1")), tc.objs...)...)
			got := reconcileOnce(t, r, gc)
			cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionLiveResources)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionFalse, cond.Status)
			assert.Equal(t, tc.wantReason, cond.Reason)
			assert.Contains(t, cond.Message, tc.wantText)
			assert.Contains(t, cond.Message, "Fix: install")
			assert.False(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady), "asked for and not there: not Ready")
			assert.Equal(t, `{"tlsClientConfig":{"insecure":false}}`, string(clusterSecret(t, c, "c1").Data["config"]), "blank")
			assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionClustersRegistered), "registration goes on")
		})
	}
}

// TestLiveResourcesOffOnTheManager: a GitOpsCluster asks, the manager runs with
// --live-resources=false; the condition names the manager's setting, not a missing addon.
func TestLiveResourcesOffOnTheManager(t *testing.T) {
	gc := liveGitOpsCluster(true)
	objs := append(append(placementObjects("p", "c1"), gc, tokenSecret(t, "c1")), clusterProxy()...)
	r, c := liveHub(t, true, objs...)
	r.LiveResources = nil
	got := reconcileOnce(t, r, gc)
	cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionLiveResources)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, appsv1beta1.ReasonLiveResourcesOffOnManager, cond.Reason)
	assert.Contains(t, cond.Message, "--live-resources=false")
	assert.Contains(t, cond.Message, "Fix: set liveResources.enabled to true")
	_, there := managedServiceAccount(t, c, "c1")
	assert.False(t, there, "no ManagedServiceAccount")
	assert.Equal(t, `{"tlsClientConfig":{"insecure":false}}`, string(clusterSecret(t, c, "c1").Data["config"]), "blank")
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter, "nothing to look for again: only a restart changes the manager's flag")

	// Off because its ClusterRole lacks the Secrets (liveresources.MissingGrants): the
	// condition names them and the fix.
	r.LiveResourcesOff = "its ClusterRole does not let it list Secrets gitops-addon-live-resources"
	got = reconcileOnce(t, r, got)
	cond = meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionLiveResources)
	require.NotNil(t, cond)
	assert.Equal(t, appsv1beta1.ReasonLiveResourcesOffOnManager, cond.Reason)
	assert.Contains(t, cond.Message, "The manager runs without live resources: its ClusterRole does not let it list Secrets gitops-addon-live-resources.")
	assert.Contains(t, cond.Message, "Fix: give the manager's ClusterRole the rules the chart's liveResources.enabled: true renders")
}

// TestLiveResourcesLeaveOutClustersWhoseArgoCDIsSkipped: where the addon reports an Argo
// CD gitops-addon did not create and the choice is Skip, no pulled Application runs and the
// spoke binds no reader, so no token is kept for it; with UseExisting it is read as any other.
func TestLiveResourcesLeaveOutClustersWhoseArgoCDIsSkipped(t *testing.T) {
	found := metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionTrue, Reason: contract.ExistingArgoCDOLM,
		Message: "OpenShift GitOps 1.16 via OLM, ArgoCD openshift-gitops/openshift-gitops"}
	for _, tc := range []struct {
		name     string
		label    string
		wantRead bool
	}{
		{name: "Skip, the default", wantRead: false},
		{name: "UseExisting by the cluster's label", label: contract.ExistingArgoCDUse, wantRead: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gc := liveGitOpsCluster(true)
			objs := append(append(placementObjects("p", "c1", "c2"), gc, tokenSecret(t, "c1"), tokenSecret(t, "c2")), clusterProxy()...)
			r, c := liveHub(t, true, objs...)
			if tc.label != "" {
				mc := &clusterv1.ManagedCluster{}
				require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "c1"}, mc))
				mc.Labels = map[string]string{contract.ExistingArgoCDPolicy: tc.label}
				require.NoError(t, c.Update(context.Background(), mc))
			}
			got := reconcileOnce(t, r, gc)
			_, there := managedServiceAccount(t, c, "c1")
			require.True(t, there, "before its addon reports, the cluster is read as any other")

			markAddonAvailable(t, c, "c1", found)
			got = reconcileOnce(t, r, got)
			_, there = managedServiceAccount(t, c, "c1")
			assert.Equal(t, tc.wantRead, there, "c1's ManagedServiceAccount")
			assert.Equal(t, tc.wantRead, strings.Contains(string(clusterSecret(t, c, "c1").Data["config"]), "bearerToken"), "c1's token in its cluster Secret")
			assert.Equal(t, !tc.wantRead, readerOf(t, c, "c1").IsZero(), "c1's reader")
			assert.Contains(t, string(clusterSecret(t, c, "c2").Data["config"]), "bearerToken", "c2 is read")

			cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionLiveResources)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionTrue, cond.Status, cond.Message)
			if tc.wantRead {
				assert.Contains(t, cond.Message, "2 cluster(s) readable")
				assert.NotContains(t, cond.Message, "Not read")
			} else {
				assert.Contains(t, cond.Message, "1 cluster(s) readable")
				assert.Contains(t, cond.Message, "Not read: c1, whose own Argo CD is skipped")
			}
		})
	}
}

func TestLiveResourcesTurnedOffLeaveNothingBehind(t *testing.T) {
	gc := liveGitOpsCluster(true)
	objs := append(append(placementObjects("p", "c1"), gc, tokenSecret(t, "c1")), clusterProxy()...)
	r, c := liveHub(t, true, objs...)
	got := reconcileOnce(t, r, gc)
	require.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionLiveResources), "%v", got.Status.Conditions)

	got.Spec.GitOpsAddon.LiveResources.Enabled = ptr.To(false)
	require.NoError(t, c.Update(context.Background(), got))
	got = reconcileOnce(t, r, got)
	_, there := managedServiceAccount(t, c, "c1")
	assert.False(t, there, "its ManagedServiceAccount removed")
	assert.Equal(t, `{"tlsClientConfig":{"insecure":false}}`, string(clusterSecret(t, c, "c1").Data["config"]), "the token left the cluster Secret")
	assert.NotContains(t, string(clusterSecret(t, c, "c1").Data["server"]), "cluster-proxy")
	assert.True(t, readerOf(t, c, "c1").IsZero(), "the spoke's binding goes with the annotation")
	assert.Nil(t, meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionLiveResources))
}

func TestLiveResourcesNeverTakeAManagedServiceAccountOfSomeoneElse(t *testing.T) {
	users := &unstructured.Unstructured{}
	users.SetGroupVersionKind(liveresources.ManagedServiceAccountGVK)
	users.SetNamespace("c1")
	users.SetName(liveresources.ServiceAccountName)
	users.SetLabels(map[string]string{"team": "a"})
	gc := liveGitOpsCluster(true)
	objs := append(append(placementObjects("p", "c1"), gc, users), clusterProxy()...)
	r, c := liveHub(t, true, objs...)
	got := reconcileOnce(t, r, gc)

	cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionLiveResources)
	require.NotNil(t, cond)
	assert.Equal(t, appsv1beta1.ReasonOwnedByOther, cond.Reason)
	assert.Contains(t, cond.Message, "ManagedServiceAccount c1/gitops-addon-live-resources already exists and was not created by gitops-addon")
	msa, _ := managedServiceAccount(t, c, "c1")
	assert.Equal(t, map[string]string{"team": "a"}, msa.Labels, "left as it was")

	// Turned off, the user's stays.
	got.Spec.GitOpsAddon.LiveResources.Enabled = ptr.To(false)
	require.NoError(t, c.Update(context.Background(), got))
	reconcileOnce(t, r, got)
	_, there := managedServiceAccount(t, c, "c1")
	assert.True(t, there, "never deleted: not ours")
}
