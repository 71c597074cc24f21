package gitopscluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func gitOpsCluster(name, placement string, addon bool) *appsv1beta1.GitOpsCluster {
	return fixtures.GitOpsCluster("gitops", name, fixtures.PlacementRef(placement), func(gc *appsv1beta1.GitOpsCluster) {
		gc.Spec.GitOpsAddon = &appsv1beta1.GitOpsAddonSpec{Enabled: ptr.To(addon), GitOpsOperatorImage: "example.com/op:v1"}
	})
}

// placementObjects are a Placement of the namespace gitops, its decision of clusters, and
// their ManagedClusters.
func placementObjects(name string, clusters ...string) []client.Object {
	placement, decision := fixtures.Placement("gitops", name, clusters...)
	objs := []client.Object{placement, decision}
	for _, c := range clusters {
		objs = append(objs, fixtures.ManagedCluster(c, nil))
	}
	return objs
}

func newReconciler(t *testing.T, objs ...client.Object) (*Reconciler, client.Client) {
	c := fixtures.FakeHub(t, objs...).Build()
	return &Reconciler{Client: c, APIReader: c}, c
}

func reconcileOnce(t *testing.T, r *Reconciler, gc *appsv1beta1.GitOpsCluster) *appsv1beta1.GitOpsCluster {
	t.Helper()
	if r.Trust != nil {
		keepTrust(t, r, gc.ArgoNamespace())
	}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
	require.NoError(t, err)
	out := &appsv1beta1.GitOpsCluster{}
	require.NoError(t, r.Client.Get(context.Background(), client.ObjectKeyFromObject(gc), out))
	return out
}

// keepTrust runs the Argo CD Agent trust controller on an Argo CD namespace, as the
// manager does beside the GitOpsCluster controller.
func keepTrust(t *testing.T, r *Reconciler, argoNamespace string) {
	t.Helper()
	trust := &argocdagent.TrustReconciler{Client: r.Client, Keeper: r.Trust, Routes: r.Routes}
	_, err := trust.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: argoNamespace}})
	require.NoError(t, err)
}

func TestReconcileCreatesSecretsAndAddons(t *testing.T) {
	gc := gitOpsCluster("gc", "p", true)
	r, c := newReconciler(t, append(placementObjects("p", "c1", "c2"), gc)...)
	got := reconcileOnce(t, r, gc)

	assert.Contains(t, got.Finalizers, Finalizer)
	for _, cluster := range []string{"c1", "c2"} {
		s := &corev1.Secret{}
		require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName(cluster)}, s))
		assert.Equal(t, "cluster", s.Labels["argocd.argoproj.io/secret-type"])
		mca := &addonv1beta1.ManagedClusterAddOn{}
		require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca))
		assert.Equal(t, "example.com/op:v1", contract.SettingsOf(mca.Annotations).Images.Operator)
	}
	assert.Equal(t, int32(2), got.Status.SelectedClusters)
	assert.Equal(t, int32(2), got.Status.AddonEnabledClusters)
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionClustersRegistered))
	assert.True(t, meta.IsStatusConditionFalse(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady), "no addon is Available yet")
}

// TestCreatedAddonsAreOwnedByTheClusterManagementAddOn: addon-framework acts on a
// ManagedClusterAddOn only once it has the controller reference to its
// ClusterManagementAddOn; the manager writes the very reference OCM's addon manager would,
// so that no cluster waits for OCM to add it; and the framework's pre-delete hook finalizer,
// so that its deploy controller deploys in its first sync.
func TestCreatedAddonsAreOwnedByTheClusterManagementAddOn(t *testing.T) {
	t.Run("the ClusterManagementAddOn exists", func(t *testing.T) {
		cma := &addonv1beta1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: contract.AddonName, UID: "cma-uid"}}
		gc := gitOpsCluster("gc", "p", true)
		r, c := newReconciler(t, append(placementObjects("p", "c1"), gc, cma)...)
		reconcileOnce(t, r, gc)
		mca := &addonv1beta1.ManagedClusterAddOn{}
		require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, mca))
		require.Len(t, mca.OwnerReferences, 1)
		ref := mca.OwnerReferences[0]
		assert.Equal(t, metav1.OwnerReference{
			APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ClusterManagementAddOn", Name: contract.AddonName,
			UID: "cma-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}, ref, "exactly what OCM's addon-owner controller writes (utils.MergeOwnerRefs then changes nothing)")
		assert.Equal(t, []string{addonv1beta1.AddonPreDeleteHookFinalizer}, mca.Finalizers,
			"the pre-delete hook finalizer addon-framework's deploy controller would add in an update of its own")
	})
	t.Run("no ClusterManagementAddOn: created without, OCM adds it later", func(t *testing.T) {
		gc := gitOpsCluster("gc", "p", true)
		r, c := newReconciler(t, append(placementObjects("p", "c1"), gc)...)
		reconcileOnce(t, r, gc)
		mca := &addonv1beta1.ManagedClusterAddOn{}
		require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, mca))
		assert.Empty(t, mca.OwnerReferences)
		assert.Empty(t, mca.Finalizers, "no addon manager acts on it yet: nothing would remove a finalizer")
	})
}

func TestReconcileNeverTouchesForeignObjects(t *testing.T) {
	userSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: ClusterSecretName("c1"), Labels: map[string]string{"team": "a"}}, Data: map[string][]byte{"server": []byte("https://mine")}}
	userAddon := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: contract.AddonName, Labels: map[string]string{"team": "a"}}}
	gc := gitOpsCluster("gc", "p", true)
	r, c := newReconciler(t, append(placementObjects("p", "c1"), gc, userSecret, userAddon)...)
	got := reconcileOnce(t, r, gc)

	s := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(userSecret), s))
	assert.Equal(t, "https://mine", string(s.Data["server"]), "a secret we did not create is never overwritten")
	cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionClustersRegistered)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, appsv1beta1.ReasonRegistrationFailed, cond.Reason)
	assert.Contains(t, cond.Message, "was not created by gitops-addon")

	mca := &addonv1beta1.ManagedClusterAddOn{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(userAddon), mca))
	assert.Equal(t, map[string]string{"team": "a"}, mca.Labels, "a user's ManagedClusterAddOn is left as it is")
	assert.Equal(t, int32(1), got.Status.AddonEnabledClusters, "but it counts: the addon is enabled there")

	// Deleting the GitOpsCluster leaves both.
	require.NoError(t, c.Delete(context.Background(), got))
	reconcileDeleted(t, r, got)
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(userSecret), &corev1.Secret{}))
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(userAddon), &addonv1beta1.ManagedClusterAddOn{}))
}

func reconcileDeleted(t *testing.T, r *Reconciler, gc *appsv1beta1.GitOpsCluster) {
	t.Helper()
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
	require.NoError(t, err)
}

func TestReconcileConflictBetweenGitOpsClusters(t *testing.T) {
	first, second := gitOpsCluster("first", "p", true), gitOpsCluster("second", "q", true)
	first.UID, second.UID = "uid-first", "uid-second"
	objs := append(placementObjects("p", "c1"), placementObjects("q")...)
	objs = append(objs, first, second)
	pdq := objs[len(placementObjects("p", "c1"))+1].(*clusterv1beta1.PlacementDecision)
	pdq.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "c1"}}
	r, c := newReconciler(t, objs...)
	reconcileOnce(t, r, first)
	got := reconcileOnce(t, r, second)

	cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
	assert.Equal(t, appsv1beta1.ReasonOwnedByOther, cond.Reason)
	assert.Contains(t, cond.Message, "gitops/first")
	mca := &addonv1beta1.ManagedClusterAddOn{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, mca))
	assert.Equal(t, "first", mca.Labels[ownership.LabelName])

	// The second's teardown does not delete the first's objects.
	require.NoError(t, c.Delete(context.Background(), got))
	reconcileDeleted(t, r, got)
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{}))
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName("c1")}, &corev1.Secret{}))
}

func TestUnresolvedPlacementKeepsRegistrations(t *testing.T) {
	gc := gitOpsCluster("gc", "p", true)
	r, c := newReconciler(t, append(placementObjects("p", "c1"), gc)...)
	got := reconcileOnce(t, r, gc)
	got.Spec.PlacementRef.Name = "typo"
	got.Generation++
	require.NoError(t, c.Update(context.Background(), got))
	got = reconcileOnce(t, r, got)

	cond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionPlacementResolved)
	assert.Equal(t, appsv1beta1.ReasonPlacementNotFound, cond.Reason)
	assert.Contains(t, cond.Message, `"typo"`)
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName("c1")}, &corev1.Secret{}), "a typo never unregisters clusters")
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{}))
}

func TestDisablingTheAddonRemovesOnlyOurAddons(t *testing.T) {
	gc := gitOpsCluster("gc", "p", true)
	r, c := newReconciler(t, append(placementObjects("p", "c1"), gc)...)
	got := reconcileOnce(t, r, gc)
	got.Spec.GitOpsAddon.Enabled = ptr.To(false)
	require.NoError(t, c.Update(context.Background(), got))
	got = reconcileOnce(t, r, got)
	err := c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "addon removed")
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName("c1")}, &corev1.Secret{}), "registration stays")
	assert.Equal(t, appsv1beta1.ReasonAddOnDisabled, meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady).Reason)
}

// TestArgoNamespaceOutsideTheManagersIsRefused: the chart grants the manager Secrets and
// ConfigMaps only in its argoNamespaces; a GitOpsCluster naming another namespace gets a
// condition that says so and how to fix it, and nothing is written for it.
func TestArgoNamespaceOutsideTheManagersIsRefused(t *testing.T) {
	tests := []struct {
		name            string
		allowed         []string
		argoCDAgentMode bool
		emptyArgo       bool // spec.argoServer.argoNamespace "": the GitOpsCluster's own namespace (gitops)
		wantReason      string
		refusedOn       string
		refusedAs       string
	}{
		{name: "any namespace when none is configured", wantReason: appsv1beta1.ReasonRegistered},
		{name: "a listed namespace", allowed: []string{"openshift-gitops", "gitops"}, wantReason: appsv1beta1.ReasonRegistered},
		{name: "an unlisted namespace", allowed: []string{"openshift-gitops"}, wantReason: appsv1beta1.ReasonArgoNamespaceNotAllowed, refusedOn: appsv1beta1.ConditionClustersRegistered,
			refusedAs: `spec.argoServer.argoNamespace "gitops" is not one of`},
		{name: "an unlisted namespace in agent mode", allowed: []string{"openshift-gitops"}, argoCDAgentMode: true, wantReason: appsv1beta1.ReasonArgoNamespaceNotAllowed, refusedOn: appsv1beta1.ConditionArgoCDAgentTrust,
			refusedAs: `spec.argoServer.argoNamespace "gitops" is not one of`},
		{name: "empty argoNamespace: the GitOpsCluster's own namespace, listed", allowed: []string{"openshift-gitops", "gitops"}, emptyArgo: true, wantReason: appsv1beta1.ReasonRegistered},
		{name: "empty argoNamespace: the GitOpsCluster's own namespace, unlisted", allowed: []string{"openshift-gitops"}, emptyArgo: true,
			wantReason: appsv1beta1.ReasonArgoNamespaceNotAllowed, refusedOn: appsv1beta1.ConditionClustersRegistered,
			refusedAs: `spec.argoServer.argoNamespace is empty, which means the GitOpsCluster's own namespace "gitops", and that is not one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			if tt.argoCDAgentMode {
				gc.Spec.GitOpsAddon.ArgoCDAgent = &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true)}
			}
			if tt.emptyArgo {
				gc.Spec.ArgoServer.ArgoNamespace = ""
			}
			r, c := newReconciler(t, append(placementObjects("p", "c1"), gc)...)
			r.ArgoNamespaces = tt.allowed
			got := reconcileOnce(t, r, gc)

			secretErr := c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName("c1")}, &corev1.Secret{})
			addonErr := c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{})
			if tt.refusedOn == "" {
				require.NoError(t, secretErr, "cluster Secret written")
				require.NoError(t, addonErr, "ManagedClusterAddOn written")
				assert.Equal(t, tt.wantReason, meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionClustersRegistered).Reason)
				return
			}
			assert.True(t, apierrors.IsNotFound(secretErr), "no cluster Secret in a refused namespace: %v", secretErr)
			assert.True(t, apierrors.IsNotFound(addonErr), "no ManagedClusterAddOn for a refused GitOpsCluster: %v", addonErr)
			refused := meta.FindStatusCondition(got.Status.Conditions, tt.refusedOn)
			require.NotNil(t, refused)
			assert.Equal(t, metav1.ConditionFalse, refused.Status)
			assert.Equal(t, tt.wantReason, refused.Reason)
			assert.Contains(t, refused.Message, tt.refusedAs+` the namespaces the manager was installed for (openshift-gitops)`)
			assert.Contains(t, refused.Message, "Fix: add \"gitops\" to the chart value argoNamespaces")
			addons := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
			assert.Equal(t, metav1.ConditionUnknown, addons.Status, "later steps not evaluated")
			assert.False(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady))
		})
	}
}

// TestArgoCDAgentModePerCluster: the ManagedCluster label overrides the GitOpsCluster's
// mode for its cluster (a mixed fleet); a label that is not a mode is reported and not used.
func TestArgoCDAgentModePerCluster(t *testing.T) {
	tests := []struct {
		name        string
		agent       *appsv1beta1.ArgoCDAgentSpec
		label       string
		wantMode    string
		wantProblem string
	}{
		{name: "agent mode off: no mode", agent: nil, label: "autonomous", wantMode: ""},
		{name: "the GitOpsCluster's default", agent: &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true)}, wantMode: "managed"},
		{name: "the GitOpsCluster's mode", agent: &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), Mode: "autonomous"}, wantMode: "autonomous"},
		{name: "the cluster's label wins", agent: &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true)}, label: "autonomous", wantMode: "autonomous"},
		{name: "a label that is not a mode is reported", agent: &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true)}, label: "pull", wantMode: "managed",
			wantProblem: `ManagedCluster c1 has label gitops-addon.open-cluster-management.io/argocd-agent-mode="pull", which is not an Argo CD Agent mode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			gc.Spec.GitOpsAddon.ArgoCDAgent = tt.agent
			objs := placementObjects("p", "c1")
			if tt.label != "" {
				objs[2].SetLabels(map[string]string{contract.ArgoCDAgentMode: tt.label})
			}
			r, c := newReconciler(t, append(objs, gc)...)
			got := reconcileOnce(t, r, gc)

			mca := &addonv1beta1.ManagedClusterAddOn{}
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, mca))
			mode, set := mca.Annotations[contract.ArgoCDAgentMode]
			assert.Equal(t, tt.wantMode, mode)
			assert.Equal(t, tt.wantMode != "", set)
			addons := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
			if tt.wantProblem != "" {
				assert.Equal(t, appsv1beta1.ReasonAddOnFailed, addons.Reason)
				assert.Contains(t, addons.Message, tt.wantProblem)
			} else {
				assert.NotContains(t, addons.Message, contract.ArgoCDAgentMode)
			}
		})
	}
}

// TestHandoverResolvesOtherGitOpsClustersOnce: a Placement shrinking by many clusters
// hands each contested ManagedClusterAddOn to the other GitOpsCluster that selects it;
// the other GitOpsClusters and their decisions are read once for all of them, not once
// per cluster (a shrink of 500 clusters was 500 lists).
func TestHandoverResolvesOtherGitOpsClustersOnce(t *testing.T) {
	var clusters []string
	for i := range 20 {
		clusters = append(clusters, fmt.Sprintf("c%02d", i))
	}
	first, second := gitOpsCluster("first", "p", true), gitOpsCluster("second", "q", true)
	first.UID, second.UID = "uid-first", "uid-second"
	objs := append(placementObjects("p", clusters...), placementObjects("q", clusters...)[:2]...)
	objs = append(objs, first, second)
	var lists atomic.Int32
	c := fixtures.FakeHub(t, objs...).WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*appsv1beta1.GitOpsClusterList); ok {
			lists.Add(1)
		}
		return cl.List(ctx, list, opts...)
	}}).Build()
	r := &Reconciler{Client: c, APIReader: c}
	reconcileOnce(t, r, first) // first owns every cluster's addon; second is in conflict
	reconcileOnce(t, r, second)

	pd := &clusterv1beta1.PlacementDecision{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: "p-decision-1"}, pd))
	pd.Status.Decisions = nil
	require.NoError(t, c.Update(context.Background(), pd))
	lists.Store(0)
	reconcileOnce(t, r, first)

	for _, cluster := range clusters {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca), "kept: handed over")
		assert.Equal(t, "second", mca.Labels[ownership.LabelName], cluster)
	}
	// Once for the addons let go, once for the cluster Secrets (a third list, for the
	// shared ApplicationSet objects, is pkg/hub/appsetaccess's now); it was twice per
	// cluster (41 here).
	assert.LessOrEqual(t, lists.Load(), int32(3), "GitOpsClusters listed %d times for 20 handovers", lists.Load())
}

// TestArgoCDAgentModeAnnotationsCarryThePrincipalAndItsCA: an Argo CD Agent mode cluster's
// ManagedClusterAddOn tells the spoke where the principal is and the CA to trust it by;
// the CA stays on the hub with propagateHubCA: false or ACM's skip annotation.
func TestArgoCDAgentModeAnnotationsCarryThePrincipalAndItsCA(t *testing.T) {
	tests := []struct {
		name        string
		agent       appsv1beta1.ArgoCDAgentSpec
		annotations map[string]string
		principal   string
		wantCA      bool
	}{
		{name: "address and default port, CA propagated", agent: appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "principal.example.com"},
			principal: "principal.example.com:443", wantCA: true},
		{name: "IPv6 address and port", agent: appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "fd00::1", ServerPort: "8443"},
			principal: "[fd00::1]:8443", wantCA: true},
		{name: "no address yet", agent: appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true)}, wantCA: true},
		{name: "propagateHubCA false", agent: appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), PropagateHubCA: ptr.To(false)}},
		{name: "ACM's skip annotation", agent: appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true)},
			annotations: map[string]string{appsv1beta1.AnnotationSkipHubCAPropagation: "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			gc.Annotations = tt.annotations
			gc.Spec.GitOpsAddon.ArgoCDAgent = &tt.agent
			r, c := newReconciler(t, append(placementObjects("p", "c1"), gc)...)
			r.Trust = &argocdagent.Keeper{Client: c, APIReader: c}
			reconcileOnce(t, r, gc)

			mca := &addonv1beta1.ManagedClusterAddOn{}
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, mca))
			agent := contract.SettingsOf(mca.Annotations).ArgoCDAgent
			require.NotNil(t, agent, "agent mode is on")
			assert.Equal(t, tt.principal, agent.Principal)
			_, set := mca.Annotations["gitops-addon.open-cluster-management.io/argocd-agent-principal"]
			assert.Equal(t, tt.principal != "", set, "an unknown principal leaves no annotation")
			ca := agent.PrincipalCA
			if !tt.wantCA {
				assert.Empty(t, ca)
				return
			}
			caSecret := &corev1.Secret{}
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: pki.CASecret}, caSecret))
			assert.Equal(t, string(caSecret.Data[corev1.TLSCertKey]), ca, "the CA's certificate")
			assert.NotContains(t, ca, "PRIVATE KEY", "never its key")
		})
	}
}

// TestPrincipalAddressIsSetOrDiscovered: agents connect to serverAddress, or to the
// load balancer of the principal's Service; without either the trust condition says what
// is missing and how to fix it, and the GitOpsCluster is not Ready.
func TestPrincipalAddressIsSetOrDiscovered(t *testing.T) {
	principalService := func(serviceType corev1.ServiceType, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: "hub-argocd-agent-principal", Labels: map[string]string{
				"app.kubernetes.io/part-of": "argocd-agent", "app.kubernetes.io/component": "principal", "app.kubernetes.io/name": "hub-argocd-agent-principal",
			}},
			Spec:   corev1.ServiceSpec{Type: serviceType, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
		}
	}
	principalRoute := func(admitted corev1.ConditionStatus) *routev1.Route {
		return &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: "hub-argocd-agent-principal", Labels: map[string]string{
				"app.kubernetes.io/part-of": "argocd-agent", "app.kubernetes.io/component": "principal", "app.kubernetes.io/name": "hub-argocd-agent-principal",
			}},
			Spec: routev1.RouteSpec{Host: "principal-gitops.apps.hub.example.com"},
			Status: routev1.RouteStatus{Ingress: []routev1.RouteIngress{{Host: "principal-gitops.apps.hub.example.com",
				Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: admitted}}}}},
		}
	}
	for _, tt := range []struct {
		name          string
		address       string
		service       *corev1.Service
		route         *routev1.Route
		wantReason    string
		wantMessage   string
		wantPrincipal string
		wantSANs      []string
	}{
		{name: "no principal, no serverAddress", wantReason: appsv1beta1.ReasonPrincipalAddressUnknown,
			wantMessage: "No Argo CD Agent principal runs in gitops"},
		{name: "a ClusterIP principal, no serverAddress", service: principalService(corev1.ServiceTypeClusterIP), wantReason: appsv1beta1.ReasonPrincipalAddressUnknown,
			wantMessage: "The principal's Service gitops/hub-argocd-agent-principal is of type ClusterIP"},
		{name: "a LoadBalancer principal is discovered", service: principalService(corev1.ServiceTypeLoadBalancer, corev1.LoadBalancerIngress{IP: "203.0.113.7"}),
			wantReason: appsv1beta1.ReasonCertificatesCurrent, wantPrincipal: "203.0.113.7:443",
			wantSANs: []string{"hub-argocd-agent-principal", "hub-argocd-agent-principal.gitops.svc", "203.0.113.7"}},
		{name: "serverAddress wins", address: "principal.example.com", service: principalService(corev1.ServiceTypeLoadBalancer, corev1.LoadBalancerIngress{Hostname: "lb.example.net"}),
			wantReason: appsv1beta1.ReasonCertificatesCurrent, wantPrincipal: "principal.example.com:443", wantSANs: []string{"principal.example.com"}},
		{name: "an admitted Route (OpenShift) is discovered before the load balancer", service: principalService(corev1.ServiceTypeLoadBalancer, corev1.LoadBalancerIngress{IP: "203.0.113.7"}),
			route: principalRoute(corev1.ConditionTrue), wantReason: appsv1beta1.ReasonCertificatesCurrent, wantPrincipal: "principal-gitops.apps.hub.example.com:443",
			wantSANs: []string{"principal-gitops.apps.hub.example.com", "hub-argocd-agent-principal.gitops.svc"}},
		{name: "a Route no router admitted is not where agents connect", service: principalService(corev1.ServiceTypeClusterIP),
			route: principalRoute(corev1.ConditionFalse), wantReason: appsv1beta1.ReasonPrincipalAddressUnknown,
			wantMessage: "enable its Route (spec.argoCDAgent.principal.server.route.enabled), which is discovered once admitted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			gc.Spec.GitOpsAddon.ArgoCDAgent = &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: tt.address}
			objs := append(placementObjects("p", "c1"), gc)
			if tt.service != nil {
				objs = append(objs, tt.service)
			}
			if tt.route != nil {
				objs = append(objs, tt.route)
			}
			r, c := newReconciler(t, objs...)
			r.Trust = &argocdagent.Keeper{Client: c, APIReader: c}
			r.Routes = true
			got := reconcileOnce(t, r, gc)
			trust := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionArgoCDAgentTrust)
			require.NotNil(t, trust)
			assert.Equal(t, tt.wantReason, trust.Reason)
			mca := &addonv1beta1.ManagedClusterAddOn{}
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "c1", Name: contract.AddonName}, mca))
			assert.Equal(t, tt.wantPrincipal, principalOf(mca))
			if tt.wantMessage != "" {
				assert.Equal(t, metav1.ConditionFalse, trust.Status)
				assert.Contains(t, trust.Message, tt.wantMessage)
				assert.Contains(t, trust.Message, "Fix:")
				assert.False(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady))
				return
			}
			secret := &corev1.Secret{}
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: pki.PrincipalSecret}, secret))
			block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
			require.NotNil(t, block)
			cert, err := x509.ParseCertificate(block.Bytes)
			require.NoError(t, err)
			names := append(slices.Clone(cert.DNSNames), func() []string {
				var ips []string
				for _, ip := range cert.IPAddresses {
					ips = append(ips, ip.String())
				}
				return ips
			}()...)
			for _, want := range tt.wantSANs {
				assert.Contains(t, names, want, "the principal's certificate names where agents reach it")
			}
		})
	}
}

// TestArgoCDAgentCertificatesAndConnectionsAreCountedPerCluster: the GitOpsCluster says on how
// many Argo CD Agent mode clusters argocd-agent has its client certificate and is connected,
// names the others, and is not ready while an Available cluster's agent is not connected.
func TestArgoCDAgentCertificatesAndConnectionsAreCountedPerCluster(t *testing.T) {
	type agentReport struct{ available, certificate, connected bool }
	for _, tt := range []struct {
		name         string
		c1, c2       agentReport
		wantStatus   metav1.ConditionStatus
		wantReason   string
		wantMessages []string
	}{
		{name: "one certificate, no connection", c1: agentReport{true, true, false}, c2: agentReport{true, false, false},
			wantStatus: metav1.ConditionFalse, wantReason: appsv1beta1.ReasonArgoCDAgentsNotConnected,
			wantMessages: []string{"Argo CD Agent client certificate in place on 1 of 2 Argo CD Agent mode cluster(s); not yet on: c2",
				"argocd-agent connected to the principal on 0 of 2; not connected: c1, c2 (see their ManagedClusterAddOn's ArgoCDAgentConnected condition)"}},
		{name: "one connected", c1: agentReport{true, true, true}, c2: agentReport{true, true, false},
			wantStatus: metav1.ConditionFalse, wantReason: appsv1beta1.ReasonArgoCDAgentsNotConnected,
			wantMessages: []string{"connected to the principal on 1 of 2; not connected: c2"}},
		{name: "all connected", c1: agentReport{true, true, true}, c2: agentReport{true, true, true},
			wantStatus: metav1.ConditionTrue, wantReason: appsv1beta1.ReasonAddOnsAvailable,
			wantMessages: []string{"2 of 2 addon(s) Available. Argo CD Agent client certificate in place on 2 of 2 Argo CD Agent mode cluster(s); argocd-agent connected to the principal on 2 of 2."}},
		{name: "an addon not Available is named first", c1: agentReport{true, true, true}, c2: agentReport{false, false, false},
			wantStatus: metav1.ConditionFalse, wantReason: appsv1beta1.ReasonAddOnsProgressing,
			wantMessages: []string{"waiting for: c2", "not connected: c2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			gc.Spec.GitOpsAddon.ArgoCDAgent = &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "principal.example.com"}
			r, c := newReconciler(t, append(placementObjects("p", "c1", "c2"), gc)...)
			r.Trust = &argocdagent.Keeper{Client: c, APIReader: c}
			reconcileOnce(t, r, gc)
			for cluster, report := range map[string]agentReport{"c1": tt.c1, "c2": tt.c2} {
				mca := &addonv1beta1.ManagedClusterAddOn{}
				require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca))
				for condition, on := range map[string]bool{addonv1beta1.ManagedClusterAddOnConditionAvailable: report.available,
					contract.ConditionArgoCDAgentCertificate: report.certificate, contract.ConditionArgoCDAgentConnected: report.connected} {
					status := metav1.ConditionFalse
					if on {
						status = metav1.ConditionTrue
					}
					meta.SetStatusCondition(&mca.Status.Conditions, metav1.Condition{Type: condition, Status: status, Reason: "Test"})
				}
				require.NoError(t, c.Status().Update(context.Background(), mca))
			}
			got := reconcileOnce(t, r, gc)

			addons := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
			require.NotNil(t, addons)
			assert.Equal(t, tt.wantStatus, addons.Status, addons.Message)
			assert.Equal(t, tt.wantReason, addons.Reason, addons.Message)
			for _, m := range tt.wantMessages {
				assert.Contains(t, addons.Message, m)
			}
		})
	}
}

// TestGitOpsClustersSharingAPrincipalDoNotReissueItsCertificateInTurn: two Argo CD Agent mode
// GitOpsClusters of one Argo CD namespace (one principal) with different serverAddresses
// get one principal certificate naming both, issued once, not again by each reconcile.
func TestGitOpsClustersSharingAPrincipalDoNotReissueItsCertificateInTurn(t *testing.T) {
	a, b := gitOpsCluster("a", "pa", true), gitOpsCluster("b", "pb", true)
	a.UID, b.UID = "uid-a", "uid-b"
	a.Spec.GitOpsAddon.ArgoCDAgent = &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "principal.example.com"}
	b.Spec.GitOpsAddon.ArgoCDAgent = &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "10.0.0.9"}
	objs := append(placementObjects("pa", "c1"), placementObjects("pb", "c2")...)
	r, c := newReconciler(t, append(objs, a, b)...)
	r.Trust = &argocdagent.Keeper{Client: c, APIReader: c}
	principalTLS := func() *corev1.Secret {
		s := &corev1.Secret{}
		require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: pki.PrincipalSecret}, s))
		return s
	}
	reconcileOnce(t, r, a)
	reconcileOnce(t, r, b)
	issued := principalTLS()
	for range 3 {
		reconcileOnce(t, r, a)
		reconcileOnce(t, r, b)
	}
	assert.Equal(t, issued.ResourceVersion, principalTLS().ResourceVersion, "not issued again by the GitOpsClusters in turn")
	block, _ := pem.Decode(issued.Data[corev1.TLSCertKey])
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Contains(t, cert.DNSNames, "principal.example.com")
	assert.True(t, slices.ContainsFunc(cert.IPAddresses, func(ip net.IP) bool { return ip.String() == "10.0.0.9" }), "both GitOpsClusters' addresses: %v", cert.IPAddresses)
}

// principalOf is the principal address a ManagedClusterAddOn's settings carry; "" outside
// agent mode.
func principalOf(mca *addonv1beta1.ManagedClusterAddOn) string {
	if agent := contract.SettingsOf(mca.Annotations).ArgoCDAgent; agent != nil {
		return agent.Principal
	}
	return ""
}

// TestAgentModeWaitsForTheTrustItDoesNotIssue: the GitOpsCluster controller only reads
// the namespace's trust. Before the trust controller has issued it, the reconcile stops
// before signing anything: ArgoCDAgentTrust and the steps after it Unknown (TrustPending,
// no Warning), no cluster Secret, no trust Secret written; once the trust is there, the
// clusters are registered in agent format.
func TestAgentModeWaitsForTheTrustItDoesNotIssue(t *testing.T) {
	gc := gitOpsCluster("gc", "p", true)
	gc.Spec.GitOpsAddon.ArgoCDAgent = &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "principal.example.com"}
	r, c := newReconciler(t, append(placementObjects("p", "c1"), gc)...)
	r.Trust = &argocdagent.Keeper{Client: c, APIReader: c}
	recorder := events.NewFakeRecorder(20)
	r.Recorder = recorder

	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
	require.NoError(t, err, "waiting is not an error to retry with backoff")
	got := &appsv1beta1.GitOpsCluster{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gc), got))
	for _, condition := range []string{appsv1beta1.ConditionArgoCDAgentTrust, appsv1beta1.ConditionClustersRegistered, appsv1beta1.ConditionAddOnsReady} {
		cond := meta.FindStatusCondition(got.Status.Conditions, condition)
		require.NotNil(t, cond, condition)
		assert.Equal(t, metav1.ConditionUnknown, cond.Status, condition)
		assert.Equal(t, appsv1beta1.ReasonTrustPending, cond.Reason, condition)
	}
	trustCond := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionArgoCDAgentTrust)
	assert.Contains(t, trustCond.Message, "Waiting for gitops-addon to issue argocd-agent-ca")
	secrets := &corev1.SecretList{}
	require.NoError(t, c.List(context.Background(), secrets))
	assert.Empty(t, secrets.Items, "neither a cluster Secret nor a trust Secret is written by the GitOpsCluster controller")
	assert.Empty(t, recorder.Events, "a wait records no Warning")

	got = reconcileOnce(t, r, gc) // the trust controller runs, then the GitOpsCluster's
	trustCond = meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionArgoCDAgentTrust)
	require.NotNil(t, trustCond)
	assert.Equal(t, metav1.ConditionTrue, trustCond.Status, trustCond.Message)
	secret := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: "c1-cluster-secret"}, secret))
	assert.Equal(t, "c1", secret.Labels[argocdagent.LabelAgentName], "registered in agent format")
}
