package gitopscluster

import (
	"context"
	"strings"
	"testing"

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
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// testHubID is the hub's cluster ID in these tests: the UID of its kube-system Namespace.
const testHubID = "5d1e0c2a-7b7f-4c55-9d8e-0123456789ab"

// hubReconciler is newReconciler on a hub whose cluster ID is testHubID, recording Events.
func hubReconciler(t *testing.T, objs ...client.Object) (*Reconciler, client.Client, *events.FakeRecorder) {
	r, c := newReconciler(t, objs...)
	r.Hub = localcluster.Hub{ID: testHubID}
	recorder := events.NewFakeRecorder(100)
	r.Recorder = recorder
	return r, c, recorder
}

// managedClusterIn returns the ManagedCluster of cluster among objs (placementObjects'),
// to be made the hub.
func managedClusterIn(t *testing.T, objs []client.Object, cluster string) *clusterv1.ManagedCluster {
	t.Helper()
	for _, o := range objs {
		if mc, ok := o.(*clusterv1.ManagedCluster); ok && mc.Name == cluster {
			return mc
		}
	}
	t.Fatalf("no ManagedCluster %s", cluster)
	return nil
}

func withIDClaim(mc *clusterv1.ManagedCluster, id string) {
	mc.Status.ClusterClaims = append(mc.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: localcluster.ClaimClusterID, Value: id})
}

func addonOf(t *testing.T, c client.Client, cluster string) (*addonv1beta1.ManagedClusterAddOn, bool) {
	t.Helper()
	mca := &addonv1beta1.ManagedClusterAddOn{}
	err := c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return mca, true
}

func clusterSecretOf(t *testing.T, c client.Client, cluster string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName(cluster)}, s))
	return s
}

// markAddonAvailable does what OCM does when a cluster's addon agent renews its lease.
func markAddonAvailable(t *testing.T, c client.Client, cluster string, extra ...metav1.Condition) {
	t.Helper()
	mca, ok := addonOf(t, c, cluster)
	require.True(t, ok, "ManagedClusterAddOn on %s", cluster)
	for _, cond := range append([]metav1.Condition{{Type: addonv1beta1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue, Reason: "Lease"}}, extra...) {
		meta.SetStatusCondition(&mca.Status.Conditions, cond)
	}
	require.NoError(t, c.Status().Update(context.Background(), mca))
}

// TestTheHubGetsNoAddonAndIsTheInClusterDestination: a decided cluster that is the hub
// itself, by any of the three rules, gets no ManagedClusterAddOn whatever
// spec.gitopsAddon.enabled says, and its cluster Secret registers Argo CD's in-cluster
// address under the ManagedCluster's name; ExistingArgoCD names it and why, and the rest
// of the fleet gets Ready as usual.
func TestTheHubGetsNoAddonAndIsTheInClusterDestination(t *testing.T) {
	tests := []struct {
		name     string
		hub      string
		makeHub  func(mc *clusterv1.ManagedCluster)
		evidence string
	}{
		{name: "by name", hub: "local-cluster", makeHub: func(*clusterv1.ManagedCluster) {}, evidence: "its name is local-cluster"},
		{name: "by label", hub: "hub-b", makeHub: func(mc *clusterv1.ManagedCluster) { mc.Labels = map[string]string{"local-cluster": "true"} },
			evidence: "it has the label local-cluster=true"},
		{name: "by its cluster ID under another name", hub: "hub-a", makeHub: func(mc *clusterv1.ManagedCluster) { withIDClaim(mc, testHubID) },
			evidence: "its ClusterClaim id.k8s.io is " + testHubID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			objs := placementObjects("p", "c1", tt.hub)
			tt.makeHub(managedClusterIn(t, objs, tt.hub))
			r, c, recorder := hubReconciler(t, append(objs, gc)...)
			got := reconcileOnce(t, r, gc)

			_, hasAddon := addonOf(t, c, tt.hub)
			assert.False(t, hasAddon, "nothing is shipped to the hub")
			_, hasAddon = addonOf(t, c, "c1")
			assert.True(t, hasAddon, "the rest of the fleet gets its addon")

			secret := clusterSecretOf(t, c, tt.hub)
			assert.Equal(t, localcluster.InClusterServer, string(secret.Data["server"]))
			assert.Equal(t, tt.hub, string(secret.Data["name"]), "named as the ManagedCluster, like every cluster")
			assert.Equal(t, "cluster", secret.Labels[labelSecretType])
			assert.Equal(t, tt.hub, secret.Labels[LabelClusterName])
			assert.NotContains(t, string(secret.Data["config"]), "bearerToken", "no credentials: Argo CD uses its own ServiceAccount")
			assert.NotEqual(t, localcluster.InClusterServer, string(clusterSecretOf(t, c, "c1").Data["server"]))

			existing := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionExistingArgoCD)
			require.NotNil(t, existing)
			assert.Equal(t, metav1.ConditionTrue, existing.Status)
			assert.Equal(t, appsv1beta1.ReasonHubCluster, existing.Reason)
			for _, words := range []string{"Cluster " + tt.hub + " is the hub itself (" + tt.evidence, "nothing shipped there",
				"registered as Argo CD's in-cluster destination https://kubernetes.default.svc", "pull-model Applications aimed at it are refused"} {
				assert.Contains(t, existing.Message, words)
			}
			assert.Equal(t, int32(1), got.Status.ExistingArgoCDClusters)
			assert.Equal(t, int32(1), got.Status.AddonEnabledClusters, "the hub is no addon target")
			assert.Contains(t, drain(recorder), "Normal HubCluster Cluster "+tt.hub+" is the hub itself")

			markAddonAvailable(t, c, "c1")
			got = reconcileOnce(t, r, got)
			assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady),
				"Ready for the rest of the fleet: %v", got.Status.Conditions)
			assert.NotContains(t, drain(recorder), "HubCluster", "the Event is emitted when the condition changes, not at every reconcile")
		})
	}
}

// drain returns the Events recorded so far, one per line.
func drain(recorder *events.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// TestAnotherClustersIDMakesNoHub: a cluster whose id.k8s.io claim is another cluster's
// ID is an ordinary target.
func TestAnotherClustersIDMakesNoHub(t *testing.T) {
	gc := gitOpsCluster("gc", "p", true)
	objs := placementObjects("p", "spoke-1")
	withIDClaim(managedClusterIn(t, objs, "spoke-1"), "1b2c3d4e-0000-4000-8000-00000000dead")
	r, c, _ := hubReconciler(t, append(objs, gc)...)
	got := reconcileOnce(t, r, gc)

	_, hasAddon := addonOf(t, c, "spoke-1")
	assert.True(t, hasAddon)
	assert.Equal(t, "https://spoke-1-control-plane", string(clusterSecretOf(t, c, "spoke-1").Data["server"]))
	existing := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionExistingArgoCD)
	assert.Equal(t, metav1.ConditionFalse, existing.Status)
	assert.Equal(t, appsv1beta1.ReasonNoExistingArgoCD, existing.Reason)
	assert.Zero(t, got.Status.ExistingArgoCDClusters)
}

// TestTheHubsAddonFromBeforeGoes: a ManagedClusterAddOn this GitOpsCluster created on the
// hub before (an earlier release shipped the stack there) is removed through the usual
// removal, never handed to another GitOpsCluster that selects the hub too; one a user
// created there is left alone.
func TestTheHubsAddonFromBeforeGoes(t *testing.T) {
	gc, other := gitOpsCluster("gc", "p", true), gitOpsCluster("other", "q", true)
	gc.UID, other.UID = "uid-gc", "uid-other"
	ours := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "local-cluster", Name: contract.AddonName, Labels: ownership.Labels(gc)}}
	users := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "hub-b", Name: contract.AddonName, Labels: map[string]string{"team": "a"}}}
	objs := append(placementObjects("p", "local-cluster", "hub-b"), placementObjects("q", "local-cluster")[:2]...)
	managedClusterIn(t, objs, "hub-b").Labels = map[string]string{"local-cluster": "true"}
	r, c, recorder := hubReconciler(t, append(objs, gc, other, ours, users)...)

	got := reconcileOnce(t, r, gc)
	_, hasAddon := addonOf(t, c, "local-cluster")
	assert.False(t, hasAddon, "removed, not handed over to gitops/other")
	assert.Contains(t, drain(recorder), "AddOnRemoved")
	mca, hasAddon := addonOf(t, c, "hub-b")
	require.True(t, hasAddon, "a user's ManagedClusterAddOn is left alone")
	assert.Equal(t, map[string]string{"team": "a"}, mca.Labels)
	assert.Equal(t, int32(2), got.Status.ExistingArgoCDClusters)
	assert.Equal(t, int32(0), got.Status.AddonEnabledClusters)
}

// TestSomeoneElsesInClusterSecretIsNotDoubled: Argo CD keeps one cluster per server
// address, so when a Secret someone else wrote registers the in-cluster address already
// (a user's "in-cluster" Secret), no second one is written for the hub, and the
// condition says who registers it. A Secret of ours from before makes way for it.
func TestSomeoneElsesInClusterSecretIsNotDoubled(t *testing.T) {
	users := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: "in-cluster", Labels: map[string]string{labelSecretType: "cluster"}},
		// With a trailing slash, which Argo CD ignores.
		Data: map[string][]byte{"name": []byte("in-cluster"), "server": []byte(localcluster.InClusterServer + "/")},
	}
	tests := []struct {
		name      string
		oursFirst bool
	}{
		{name: "none of ours yet"},
		{name: "ours from before, found at the manager's start", oursFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", false)
			objs := append(placementObjects("p", "local-cluster", "c1"), gc)
			if !tt.oursFirst {
				objs = append(objs, users.DeepCopy())
			}
			r, c, _ := hubReconciler(t, objs...)
			if tt.oursFirst {
				got := reconcileOnce(t, r, gc)
				clusterSecretOf(t, c, "local-cluster")
				require.NoError(t, c.Create(context.Background(), users.DeepCopy()))
				r = &Reconciler{Client: c, APIReader: c, Hub: localcluster.Hub{ID: testHubID}} // a new manager: its first reconcile searches
				gc = got
			}
			got := reconcileOnce(t, r, gc)

			err := c.Get(context.Background(), types.NamespacedName{Namespace: "gitops", Name: ClusterSecretName("local-cluster")}, &corev1.Secret{})
			assert.True(t, apierrors.IsNotFound(err), "no second Secret for the in-cluster address: %v", err)
			clusterSecretOf(t, c, "c1")
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(users), &corev1.Secret{}), "the user's stays")
			existing := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionExistingArgoCD)
			assert.Equal(t, appsv1beta1.ReasonHubCluster, existing.Reason)
			assert.Contains(t, existing.Message, "in-cluster destination https://kubernetes.default.svc is registered already by Secret gitops/in-cluster")
			assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionClustersRegistered))
			assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady))
		})
	}
}

// TestExistingArgoCDIsCountedFromTheAddons: a cluster whose addon reports
// ExistingArgoCD True is counted and named with what its agent found and the choice in
// force; it keeps the rest of the fleet Ready, in Argo CD Agent mode too (its
// argocd-agent is withheld with the stack); with the hub among the clusters, both kinds
// are named.
func TestExistingArgoCDIsCountedFromTheAddons(t *testing.T) {
	found := metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionTrue, Reason: contract.ExistingArgoCDOLM,
		Message: "OpenShift GitOps 1.16 via OLM, ArgoCD openshift-gitops/openshift-gitops"}
	none := metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionFalse, Reason: contract.ExistingArgoCDNone, Message: "none"}
	tests := []struct {
		name            string
		withHub         bool
		argoCDAgentMode bool
		wantReason      string
		wantCount       int32
		wantWords       []string
	}{
		{name: "one cluster runs its own", wantReason: appsv1beta1.ReasonExistingArgoCDFound, wantCount: 1,
			wantWords: []string{"1 cluster(s) already run an Argo CD gitops-addon did not create", "cluster c1 (OpenShift GitOps 1.16 via OLM, ArgoCD openshift-gitops/openshift-gitops; Skip, by spec.gitopsAddon.existingArgoCD"}},
		{name: "and the hub", withHub: true, wantReason: appsv1beta1.ReasonExistingArgoCDFound, wantCount: 2,
			wantWords: []string{"Cluster local-cluster is the hub itself", "cluster c1 (OpenShift GitOps 1.16"}},
		{name: "in Argo CD Agent mode", argoCDAgentMode: true, wantReason: appsv1beta1.ReasonExistingArgoCDFound, wantCount: 1,
			wantWords: []string{"cluster c1 (OpenShift GitOps 1.16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			if tt.argoCDAgentMode {
				gc.Spec.GitOpsAddon.ArgoCDAgent = &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "principal.example.com"}
			}
			clusters := []string{"c1", "c2"}
			if tt.withHub {
				clusters = append(clusters, "local-cluster")
			}
			r, c, _ := hubReconciler(t, append(placementObjects("p", clusters...), gc)...)
			if tt.argoCDAgentMode {
				r.Trust = &argocdagent.Keeper{Client: c, APIReader: c}
			}
			got := reconcileOnce(t, r, gc)
			markAddonAvailable(t, c, "c1", found)
			agentUp := []metav1.Condition{none}
			if tt.argoCDAgentMode {
				agentUp = append(agentUp,
					metav1.Condition{Type: contract.ConditionArgoCDAgentCertificate, Status: metav1.ConditionTrue, Reason: "InPlace"},
					metav1.Condition{Type: contract.ConditionArgoCDAgentConnected, Status: metav1.ConditionTrue, Reason: "Connected"})
			}
			markAddonAvailable(t, c, "c2", agentUp...)
			got = reconcileOnce(t, r, got)

			existing := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionExistingArgoCD)
			assert.Equal(t, metav1.ConditionTrue, existing.Status)
			assert.Equal(t, tt.wantReason, existing.Reason)
			for _, words := range tt.wantWords {
				assert.Contains(t, existing.Message, words)
			}
			assert.NotContains(t, existing.Message, "cluster c2")
			assert.Equal(t, tt.wantCount, got.Status.ExistingArgoCDClusters)
			assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady),
				"an Argo CD that is not ours is no fault: %s", meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady).Message)
			assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady), "%v", got.Status.Conditions)
		})
	}
}

// TestExistingArgoCDChoicePerCluster: spec.gitopsAddon.existingArgoCD, overridden by the
// cluster's label when it is a valid choice, goes into the addon settings; the default,
// Skip, writes no annotation, so that existing clusters' addons do not change; a label
// that is no choice is reported and not used.
func TestExistingArgoCDChoicePerCluster(t *testing.T) {
	tests := []struct {
		name        string
		spec        string
		label       string
		want        string // the annotation, "" for none
		wantProblem string
	}{
		{name: "the default: no annotation"},
		{name: "Skip written in the spec: no annotation", spec: "Skip"},
		{name: "UseExisting in the spec", spec: "UseExisting", want: "UseExisting"},
		{name: "the label overrides the spec", spec: "UseExisting", label: "Skip"},
		{name: "the label chooses UseExisting", label: "UseExisting", want: "UseExisting"},
		{name: "a label that is no choice is reported", spec: "UseExisting", label: "Adopt", want: "UseExisting",
			wantProblem: `ManagedCluster c1 has label gitops-addon.open-cluster-management.io/existing-argocd="Adopt", which is not a choice for an existing Argo CD: using the GitOpsCluster's "UseExisting"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", true)
			gc.Spec.GitOpsAddon.ExistingArgoCD = tt.spec
			objs := placementObjects("p", "c1")
			if tt.label != "" {
				managedClusterIn(t, objs, "c1").Labels = map[string]string{contract.ExistingArgoCDPolicy: tt.label}
			}
			r, c, _ := hubReconciler(t, append(objs, gc)...)
			got := reconcileOnce(t, r, gc)

			mca, ok := addonOf(t, c, "c1")
			require.True(t, ok)
			choice, set := mca.Annotations[contract.ExistingArgoCDPolicy]
			assert.Equal(t, tt.want, choice)
			assert.Equal(t, tt.want != "", set)
			assert.Equal(t, tt.want, contract.SettingsOf(mca.Annotations).ExistingArgoCD)
			addons := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
			if tt.wantProblem == "" {
				assert.NotContains(t, addons.Message, contract.ExistingArgoCDPolicy)
				return
			}
			assert.Equal(t, appsv1beta1.ReasonAddOnFailed, addons.Reason)
			assert.Contains(t, addons.Message, tt.wantProblem)
			assert.Contains(t, addons.Message, "Fix: set the label to Skip or UseExisting, or remove it.")
		})
	}
}

// TestApplyFailuresReachReady: an object OCM's work agent could not apply on a cluster
// (StackApplied False, written by pkg/hub/stackstatus with the work agent's words) makes
// AddOnsReady and Ready False, quoting it with the cluster's name; fixed, both are True.
func TestApplyFailuresReachReady(t *testing.T) {
	denied := metav1.Condition{Type: contract.ConditionStackApplied, Status: metav1.ConditionFalse, Reason: contract.StackApplyFailed,
		Message: `OCM's work agent could not apply 1 object(s) of the addon on the cluster: Deployment openshift-gitops/openshift-gitops-operator-controller-manager ` +
			`in ManifestWork addon-gitops-addon-deploy-0: admission webhook "images.example.com" denied the request`}
	gc := gitOpsCluster("gc", "p", true)
	r, c, _ := hubReconciler(t, append(placementObjects("p", "c1", "c2"), gc)...)
	got := reconcileOnce(t, r, gc)
	markAddonAvailable(t, c, "c1", denied)
	markAddonAvailable(t, c, "c2")
	got = reconcileOnce(t, r, got)

	addons := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
	assert.Equal(t, metav1.ConditionFalse, addons.Status)
	assert.Contains(t, addons.Message, `Cluster c1: OCM's work agent could not apply 1 object(s)`)
	assert.Contains(t, addons.Message, `admission webhook "images.example.com" denied the request`)
	assert.False(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady))

	applied := metav1.Condition{Type: contract.ConditionStackApplied, Status: metav1.ConditionTrue, Reason: contract.StackApplied}
	markAddonAvailable(t, c, "c1", applied)
	got = reconcileOnce(t, r, got)
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, appsv1beta1.ConditionReady), "%v", got.Status.Conditions)
}

func TestAddonChangeMattersPassesAnApplyFailure(t *testing.T) {
	old := &addonv1beta1.ManagedClusterAddOn{}
	updated := old.DeepCopy()
	updated.Status.Conditions = []metav1.Condition{{Type: contract.ConditionStackApplied, Status: metav1.ConditionFalse, Message: "denied"}}
	assert.True(t, addonChangeMatters().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}))
	same := updated.DeepCopy()
	assert.False(t, addonChangeMatters().Update(event.UpdateEvent{ObjectOld: updated, ObjectNew: same}))
}
