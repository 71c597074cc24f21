package gitopscluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

func labelled(labels map[string]string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: labels}}
}

func TestClusterSecretCarriesTheClusterLabelsButOCMsAddonHealth(t *testing.T) {
	mc := labelled(map[string]string{
		"env": "prod", "cloud": "AWS",
		"feature.open-cluster-management.io/addon-gitops-addon": "available",
		"feature.open-cluster-management.io/addon-work-manager": "unhealthy",
		"cluster.open-cluster-management.io/clusterset":         "default",
	})
	gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: "gc"}}
	gc.Spec.ArgoServer.ArgoNamespace = "openshift-gitops"
	labels := desiredClusterSecret(gc, mc).Labels
	assert.Equal(t, "prod", labels["env"])
	assert.Equal(t, "default", labels["cluster.open-cluster-management.io/clusterset"])
	assert.NotContains(t, labels, "feature.open-cluster-management.io/addon-gitops-addon")
	assert.NotContains(t, labels, "feature.open-cluster-management.io/addon-work-manager")
}

func TestOnlyCopiedLabelChangesWakeTheController(t *testing.T) {
	base := map[string]string{"env": "prod", "feature.open-cluster-management.io/addon-gitops-addon": "available"}
	tests := []struct {
		name    string
		updated map[string]string
		want    bool
	}{
		{"OCM flips an addon's health", map[string]string{"env": "prod", "feature.open-cluster-management.io/addon-gitops-addon": "unreachable"}, false},
		{"nothing changed (a status or lease update)", base, false},
		{"a user label changed", map[string]string{"env": "staging", "feature.open-cluster-management.io/addon-gitops-addon": "available"}, true},
		{"a user label added", map[string]string{"env": "prod", "team": "a", "feature.open-cluster-management.io/addon-gitops-addon": "available"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := copiedLabelsChanged().Update(event.UpdateEvent{ObjectOld: labelled(base), ObjectNew: labelled(tt.updated)})
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestOnlyAddonChangesAGitOpsClusterReadsWakeIt(t *testing.T) {
	base := func() *addonv1beta1.ManagedClusterAddOn {
		return &addonv1beta1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "gitops-addon", Generation: 1,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "gitops-addon"}},
			Status: addonv1beta1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
				{Type: addonv1beta1.ManagedClusterAddOnRegistrationApplied, Status: metav1.ConditionTrue},
			}},
		}
	}
	condition := func(t string, s metav1.ConditionStatus) func(a *addonv1beta1.ManagedClusterAddOn) {
		return func(a *addonv1beta1.ManagedClusterAddOn) {
			meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: "R"})
		}
	}
	now := metav1.Now()
	tests := []struct {
		name   string
		change func(a *addonv1beta1.ManagedClusterAddOn)
		want   bool
	}{
		{"OCM sets the manifests applied", condition(addonv1beta1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue), false},
		{"OCM records the install namespace", func(a *addonv1beta1.ManagedClusterAddOn) { a.Status.Namespace = "open-cluster-management-agent-addon" }, false},
		{"it becomes Available", condition(addonv1beta1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue), true},
		{"Available stays Unknown", condition(addonv1beta1.ManagedClusterAddOnConditionAvailable, metav1.ConditionUnknown), false},
		{"someone edits its labels", func(a *addonv1beta1.ManagedClusterAddOn) { a.Labels["x"] = "y" }, true},
		{"someone edits its annotations", func(a *addonv1beta1.ManagedClusterAddOn) { a.Annotations = map[string]string{"x": "y"} }, true},
		{"its spec changes", func(a *addonv1beta1.ManagedClusterAddOn) { a.Generation++ }, true},
		{"it is being deleted", func(a *addonv1beta1.ManagedClusterAddOn) { a.DeletionTimestamp = &now }, true},
		{"its agent finds an Argo CD not ours", condition(contract.ConditionExistingArgoCD, metav1.ConditionTrue), true},
		{"its agent finds none", condition(contract.ConditionExistingArgoCD, metav1.ConditionFalse), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updated := base()
			tt.change(updated)
			got := addonChangeMatters().Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: updated})
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestWhatTheAgentFoundWakesTheGitOpsCluster: the ExistingArgoCD condition's message is
// quoted in the GitOpsCluster's status, so a new message wakes it while the condition is
// True, and only then.
func TestWhatTheAgentFoundWakesTheGitOpsCluster(t *testing.T) {
	withExisting := func(status metav1.ConditionStatus, message string) *addonv1beta1.ManagedClusterAddOn {
		return &addonv1beta1.ManagedClusterAddOn{Status: addonv1beta1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
			{Type: contract.ConditionExistingArgoCD, Status: status, Reason: "R", Message: message}}}}
	}
	tests := []struct {
		name     string
		old, new *addonv1beta1.ManagedClusterAddOn
		want     bool
	}{
		{"True, a new owner", withExisting("True", "OpenShift GitOps 1.15"), withExisting("True", "OpenShift GitOps 1.16"), true},
		{"False, a new message", withExisting("False", "none, 1"), withExisting("False", "none, 2"), false},
		{"True to False", withExisting("True", "x"), withExisting("False", "x"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, addonChangeMatters().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}))
		})
	}
}

// TestAClusterIDChangeWakesTheController: the id.k8s.io claim tells whether a cluster is
// the hub itself; other status changes of a ManagedCluster wake nothing.
func TestAClusterIDChangeWakesTheController(t *testing.T) {
	withClaims := func(claims ...clusterv1.ManagedClusterClaim) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{Status: clusterv1.ManagedClusterStatus{ClusterClaims: claims}}
	}
	id := func(v string) clusterv1.ManagedClusterClaim {
		return clusterv1.ManagedClusterClaim{Name: "id.k8s.io", Value: v}
	}
	other := clusterv1.ManagedClusterClaim{Name: "platform.open-cluster-management.io", Value: "AWS"}
	tests := []struct {
		name     string
		old, new *clusterv1.ManagedCluster
		want     bool
	}{
		{"the klusterlet reports its ID", withClaims(), withClaims(id("a")), true},
		{"the ID changes", withClaims(id("a")), withClaims(id("b")), true},
		{"another claim changes", withClaims(id("a")), withClaims(id("a"), other), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, clusterIDChanged().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}))
		})
	}
}

// TestClusterSecretUpdatesKeepOtherToolsLabels: labels another tool puts on a cluster
// Secret stay; a label removed from the ManagedCluster leaves the Secret; a steady state
// changes nothing.
func TestClusterSecretUpdatesKeepOtherToolsLabels(t *testing.T) {
	gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: "gc"}}
	gc.Spec.ArgoServer.ArgoNamespace = "openshift-gitops"
	written := desiredClusterSecret(gc, labelled(map[string]string{"env": "prod", "team": "a"}))

	tests := []struct {
		name        string
		current     func() *corev1.Secret
		cluster     map[string]string
		wantChanged bool
		want        map[string]string // labels that must be there ("" = must be absent)
	}{
		{"steady state", func() *corev1.Secret { return written.DeepCopy() }, map[string]string{"env": "prod", "team": "a"}, false,
			map[string]string{"env": "prod", "team": "a"}},
		{"another tool's label stays", func() *corev1.Secret {
			s := written.DeepCopy()
			s.Labels["backup.example.com/include"] = "true"
			return s
		}, map[string]string{"env": "prod", "team": "a"}, false, map[string]string{"backup.example.com/include": "true"}},
		{"a label removed from the ManagedCluster leaves, another tool's stays", func() *corev1.Secret {
			s := written.DeepCopy()
			s.Labels["backup.example.com/include"] = "true"
			return s
		}, map[string]string{"env": "prod"}, true, map[string]string{"team": "", "backup.example.com/include": "true", "env": "prod"}},
		{"a Secret written before the annotation keeps every label", func() *corev1.Secret {
			s := written.DeepCopy()
			delete(s.Annotations, AnnotationWrittenLabels)
			s.Labels["backup.example.com/include"] = "true"
			return s
		}, map[string]string{"env": "prod"}, true, map[string]string{"team": "a", "backup.example.com/include": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := tt.current()
			changed := updateSecret(current, desiredClusterSecret(gc, labelled(tt.cluster)))
			assert.Equal(t, tt.wantChanged, changed)
			for k, v := range tt.want {
				if v == "" {
					assert.NotContains(t, current.Labels, k)
					continue
				}
				assert.Equal(t, v, current.Labels[k], k)
			}
		})
	}
}
