package stackstatus

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

func work(name string, applied metav1.ConditionStatus, manifests ...workv1.ManifestCondition) workv1.ManifestWork {
	w := workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c1"}}
	if applied != "" {
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: applied}}
	}
	w.Status.ResourceStatus.Manifests = manifests
	return w
}

func manifest(kind, namespace, name string, applied metav1.ConditionStatus, message string) workv1.ManifestCondition {
	return workv1.ManifestCondition{
		ResourceMeta: workv1.ManifestResourceMeta{Kind: kind, Namespace: namespace, Name: name},
		Conditions:   []metav1.Condition{{Type: workv1.ManifestApplied, Status: applied, Message: message}},
	}
}

func TestCondition(t *testing.T) {
	denied := `admission webhook "policy.example.com" denied the request: images from quay.io are not allowed`
	for _, tc := range []struct {
		name     string
		works    []workv1.ManifestWork
		status   metav1.ConditionStatus
		reason   string
		mentions []string
	}{
		{"no report yet", []workv1.ManifestWork{work("addon-gitops-addon-deploy-0", "")}, metav1.ConditionUnknown, contract.StackNotYetStatus, nil},
		{"all applied", []workv1.ManifestWork{work("addon-gitops-addon-deploy-0", metav1.ConditionTrue,
			manifest("Deployment", "open-cluster-management-agent-addon", "gitops-addon-agent", metav1.ConditionTrue, "Apply manifest complete"))},
			metav1.ConditionTrue, contract.StackApplied, nil},
		{"one denied, with the work agent's message", []workv1.ManifestWork{work("addon-gitops-addon-deploy-0", metav1.ConditionFalse,
			manifest("Deployment", "open-cluster-management-agent-addon", "gitops-addon-agent", metav1.ConditionTrue, "Apply manifest complete"),
			manifest("Deployment", "openshift-gitops", "openshift-gitops-operator-controller-manager", metav1.ConditionFalse, denied))},
			metav1.ConditionFalse, contract.StackApplyFailed,
			[]string{"could not apply 1 object(s)", "Deployment openshift-gitops/openshift-gitops-operator-controller-manager in ManifestWork addon-gitops-addon-deploy-0: " + denied}},
		{"the work failed without a manifest's reason", []workv1.ManifestWork{work("addon-gitops-addon-deploy-0", metav1.ConditionFalse)},
			metav1.ConditionFalse, contract.StackApplyFailed, []string{"the ManifestWork in ManifestWork addon-gitops-addon-deploy-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := condition(tc.works)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			for _, m := range tc.mentions {
				assert.Contains(t, c.Message, m)
			}
		})
	}
}

func TestFailureMessageIsBounded(t *testing.T) {
	var manifests []workv1.ManifestCondition
	for i := 0; i < 200; i++ {
		manifests = append(manifests, manifest("ConfigMap", "ns", strings.Repeat("x", 40)+string(rune('a'+i%26)), metav1.ConditionFalse, strings.Repeat("denied ", 10)))
	}
	c := condition([]workv1.ManifestWork{work("w", metav1.ConditionFalse, manifests...)})
	assert.LessOrEqual(t, len(c.Message), maxMessage+100)
	assert.Contains(t, c.Message, "more (kubectl get manifestwork")
}

func TestStatusOnlyKeepsWhatTheConditionNeeds(t *testing.T) {
	w := work("addon-gitops-addon-deploy-0", metav1.ConditionFalse,
		manifest("ArgoCD", "openshift-gitops", "openshift-gitops", metav1.ConditionFalse, "conflict"))
	w.Spec.Workload.Manifests = []workv1.Manifest{{}}
	slim, err := statusOnly(&w)
	assert.NoError(t, err)
	assert.Empty(t, slim.(*workv1.ManifestWork).Spec.Workload.Manifests)
	assert.Equal(t, condition([]workv1.ManifestWork{w}), condition([]workv1.ManifestWork{*slim.(*workv1.ManifestWork)}))
}
