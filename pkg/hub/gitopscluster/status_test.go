package gitopscluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

func TestComputeStatus(t *testing.T) {
	resolved := placementResult{resolved: true, clusters: []string{"a", "b"}}
	cases := []struct {
		name   string
		obs    observation
		want   map[string]metav1.ConditionStatus
		reason map[string]string
	}{
		{
			name: "everything ready",
			obs:  observation{placement: resolved, registration: registrationResult{registered: 2}, addons: addonResult{enabled: true, withAddon: 2, available: 2}},
			want: map[string]metav1.ConditionStatus{"PlacementResolved": "True", "ClustersRegistered": "True", "AddOnsReady": "True", "Ready": "True"},
		},
		{
			name:   "addon disabled is ready",
			obs:    observation{placement: resolved, registration: registrationResult{registered: 2}},
			want:   map[string]metav1.ConditionStatus{"AddOnsReady": "True", "Ready": "True"},
			reason: map[string]string{"AddOnsReady": appsv1beta1.ReasonAddOnDisabled},
		},
		{
			name: "hub-only beside another installation's addon is ready",
			obs: observation{placement: resolved, registration: registrationResult{registered: 2},
				addons: addonResult{enabled: true, hubOnly: true, deliverer: "an AddOnTemplate addon, as Red Hat ACM delivers its gitops-addon"}},
			want:   map[string]metav1.ConditionStatus{"AddOnsReady": "True", "Ready": "True"},
			reason: map[string]string{"AddOnsReady": appsv1beta1.ReasonAddOnDeliveredElsewhere},
		},
		{
			name:   "hub-only with nothing delivering the addon is not ready",
			obs:    observation{placement: resolved, registration: registrationResult{registered: 2}, addons: addonResult{enabled: true, hubOnly: true}},
			want:   map[string]metav1.ConditionStatus{"AddOnsReady": "False", "Ready": "False"},
			reason: map[string]string{"AddOnsReady": appsv1beta1.ReasonAddOnNotDelivered},
		},
		{
			name:   "placement missing",
			obs:    observation{placement: placementResult{reason: appsv1beta1.ReasonPlacementNotFound, message: "not found"}, addons: addonResult{enabled: true}},
			want:   map[string]metav1.ConditionStatus{"PlacementResolved": "False", "ClustersRegistered": "Unknown", "AddOnsReady": "Unknown", "Ready": "False"},
			reason: map[string]string{"PlacementResolved": appsv1beta1.ReasonPlacementNotFound},
		},
		{
			name:   "addons progressing",
			obs:    observation{placement: resolved, registration: registrationResult{registered: 2}, addons: addonResult{enabled: true, withAddon: 2, available: 1, notAvailable: []string{"b"}}},
			want:   map[string]metav1.ConditionStatus{"AddOnsReady": "False", "Ready": "False"},
			reason: map[string]string{"AddOnsReady": appsv1beta1.ReasonAddOnsProgressing},
		},
		{
			name:   "conflict with another GitOpsCluster",
			obs:    observation{placement: resolved, registration: registrationResult{registered: 1, problems: []string{"taken"}, conflict: true}, addons: addonResult{enabled: true, withAddon: 2, available: 2, problems: []string{"taken"}, conflict: true}},
			want:   map[string]metav1.ConditionStatus{"ClustersRegistered": "False", "AddOnsReady": "False", "Ready": "False"},
			reason: map[string]string{"ClustersRegistered": appsv1beta1.ReasonOwnedByOther, "AddOnsReady": appsv1beta1.ReasonOwnedByOther},
		},
		{
			name:   "foreign object is a registration failure, not a conflict",
			obs:    observation{placement: resolved, registration: registrationResult{registered: 1, problems: []string{"exists"}}},
			want:   map[string]metav1.ConditionStatus{"ClustersRegistered": "False"},
			reason: map[string]string{"ClustersRegistered": appsv1beta1.ReasonRegistrationFailed},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
			st := computeStatus(gc.Generation, gc.Status, tc.obs, metav1.Now())
			assert.Equal(t, int64(7), st.ObservedGeneration)
			for typ, status := range tc.want {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if assert.NotNil(t, c, typ) {
					assert.Equal(t, status, c.Status, "%s: %s", typ, c.Message)
					assert.Equal(t, int64(7), c.ObservedGeneration)
					assert.NotEmpty(t, c.Message)
				}
			}
			for typ, reason := range tc.reason {
				assert.Equal(t, reason, meta.FindStatusCondition(st.Conditions, typ).Reason, typ)
			}
		})
	}
}

func TestStatusIsStableWhenNothingChanges(t *testing.T) {
	gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	obs := observation{placement: placementResult{resolved: true, clusters: []string{"a"}}, registration: registrationResult{registered: 1}}
	first := computeStatus(gc.Generation, gc.Status, obs, metav1.Now())
	gc.Status = first
	second := computeStatus(gc.Generation, gc.Status, obs, metav1.NewTime(metav1.Now().Add(3600e9)))
	assert.False(t, statusChanged(first, second), "a second reconcile with the same facts writes nothing")
}

func TestUnsupportedFieldsAreNamed(t *testing.T) {
	gc := &appsv1beta1.GitOpsCluster{Spec: appsv1beta1.GitOpsClusterSpec{
		ManagedServiceAccountRef: "msa",
		GitOpsAddon:              &appsv1beta1.GitOpsAddonSpec{Enabled: ptr.To(true), ReconcileScope: "All-Namespaces"},
	}}
	assert.Equal(t, []string{"spec.gitopsAddon.reconcileScope", "spec.managedServiceAccountRef"}, unsupportedFields(gc))
	st := computeStatus(gc.Generation, gc.Status, observation{unsupported: unsupportedFields(gc)}, metav1.Now())
	assert.Contains(t, st.Message, "spec.managedServiceAccountRef")
}

// TestAgentModeStatusMessageSaysWhatIsActedUpon reads status.message of Argo CD Agent mode
// GitOpsClusters: agent mode itself is acted upon, so only its unused fields are named.
func TestAgentModeStatusMessageSaysWhatIsActedUpon(t *testing.T) {
	tests := []struct {
		name        string
		agent       appsv1beta1.ArgoCDAgentSpec
		wantNamed   []string
		wantNoExtra bool
	}{
		{
			name:        "agent mode with address, port and mode: nothing named",
			agent:       appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), ServerAddress: "principal.example.com", ServerPort: "443", Mode: "autonomous"},
			wantNoExtra: true,
		},
		{
			name:      "uninstall is named, the agent image is acted upon",
			agent:     appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), Image: "registry.example.com/argocd-agent:v1", Uninstall: ptr.To(true)},
			wantNamed: []string{"spec.gitopsAddon.argoCDAgent.uninstall"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := &appsv1beta1.GitOpsCluster{Spec: appsv1beta1.GitOpsClusterSpec{
				GitOpsAddon: &appsv1beta1.GitOpsAddonSpec{Enabled: ptr.To(true), ArgoCDAgent: &tt.agent},
			}}
			st := computeStatus(gc.Generation, gc.Status, observation{unsupported: unsupportedFields(gc)}, metav1.Now())
			ready := meta.FindStatusCondition(st.Conditions, appsv1beta1.ConditionReady)
			require.NotNil(t, ready)
			assert.NotContains(t, st.Message, "no agent is deployed")
			if tt.wantNoExtra {
				assert.Equal(t, ready.Message, st.Message, "status.message is the Ready message alone")
				return
			}
			assert.Equal(t, ready.Message+" Not acted upon by gitops-addon: "+strings.Join(tt.wantNamed, ", ")+".", st.Message)
		})
	}
}

func TestListNamesIsBounded(t *testing.T) {
	names := make([]string, 25)
	for i := range names {
		names[i] = string(rune('a' + i))
	}
	assert.Equal(t, "a, b, c, d, e, f, g, h, i, j and 15 more", listNames(names))
}

func TestImageSettingsCarryTheAgentImage(t *testing.T) {
	gc := &appsv1beta1.GitOpsCluster{Spec: appsv1beta1.GitOpsClusterSpec{GitOpsAddon: &appsv1beta1.GitOpsAddonSpec{
		Enabled: ptr.To(true), GitOpsImage: "example.com/argocd:v3",
		ArgoCDAgent: &appsv1beta1.ArgoCDAgentSpec{Enabled: ptr.To(true), Image: "example.com/argocd-agent:v1"},
	}}}
	assert.Equal(t, contract.Images{ArgoCD: "example.com/argocd:v3", ArgoCDAgent: "example.com/argocd-agent:v1"}, imageSettings(gc))
}

// TestExistingArgoCDConditionStaysBoundedAndOutOfReady: at 1,000 clusters running their
// own Argo CD the message lists maxListed of them and counts the rest; the condition never
// makes Ready False; before the Placement resolves it says nothing it does not know.
func TestExistingArgoCDConditionStaysBoundedAndOutOfReady(t *testing.T) {
	var existing []existingArgoCD
	var clusters []string
	for i := range 1000 {
		cluster := fmt.Sprintf("spoke-%04d", i)
		clusters = append(clusters, cluster)
		existing = append(existing, existingArgoCD{cluster: cluster, found: strings.Repeat("x", 2*maxFoundLength)[:maxFoundLength] + "…",
			choice: existingArgoCDChoice{value: contract.ExistingArgoCDSkip, source: "spec.gitopsAddon.existingArgoCD"}})
	}
	resolved := placementResult{resolved: true, clusters: clusters}
	tests := []struct {
		name       string
		obs        observation
		wantStatus metav1.ConditionStatus
		wantReason string
		wantWords  []string
	}{
		{name: "a thousand clusters with their own Argo CD", wantStatus: metav1.ConditionTrue, wantReason: appsv1beta1.ReasonExistingArgoCDFound,
			obs: observation{placement: resolved, registration: registrationResult{registered: 1000},
				addons: addonResult{enabled: true, withAddon: 1000, available: 1000, existing: existing}},
			wantWords: []string{"1000 cluster(s) already run an Argo CD", "and 990 more clusters"}},
		{name: "the hub's ID unknown is said", wantStatus: metav1.ConditionFalse, wantReason: appsv1beta1.ReasonNoExistingArgoCD,
			obs:       observation{placement: resolved, registration: registrationResult{registered: 1000}, hubIDProblem: "the hub's cluster ID could not be read"},
			wantWords: []string{"The hub's cluster ID could not be read."}},
		{name: "the Placement unresolved", wantStatus: metav1.ConditionUnknown, wantReason: appsv1beta1.ReasonPlacementUnresolved,
			obs: observation{placement: placementResult{reason: appsv1beta1.ReasonPlacementNotFound, message: "not found"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := computeStatus(0, appsv1beta1.GitOpsClusterStatus{}, tt.obs, metav1.Now())
			c := meta.FindStatusCondition(st.Conditions, appsv1beta1.ConditionExistingArgoCD)
			require.NotNil(t, c)
			assert.Equal(t, tt.wantStatus, c.Status)
			assert.Equal(t, tt.wantReason, c.Reason)
			for _, words := range tt.wantWords {
				assert.Contains(t, c.Message, words)
			}
			assert.Less(t, len(c.Message), 8*1024, "bounded whatever the fleet")
			if tt.obs.placement.resolved {
				assert.True(t, meta.IsStatusConditionTrue(st.Conditions, appsv1beta1.ConditionReady), "informational only")
			}
			assert.NotContains(t, meta.FindStatusCondition(st.Conditions, appsv1beta1.ConditionReady).Message, "ExistingArgoCD")
		})
	}
}
