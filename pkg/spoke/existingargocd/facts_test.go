package existingargocd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

func deployment(namespace, name, image string, labels map[string]string, env ...corev1.EnvVar) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Image: image, Env: env}}
	return d
}

func TestOperatorOf(t *testing.T) {
	ourLabels := map[string]string{contract.LabelManagedBy: contract.ManagedByValue}
	fromOperatorGroup := corev1.EnvVar{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"}}}
	for _, tc := range []struct {
		name     string
		d        *appsv1.Deployment
		operator bool
		ours     bool
	}{
		{"OLM's OpenShift GitOps operator (WATCH_NAMESPACE from the OperatorGroup)",
			deployment("openshift-gitops-operator", "openshift-gitops-operator-controller-manager", "registry.redhat.io/openshift-gitops-1/gitops-rhel9-operator@sha256:abc", nil, fromOperatorGroup), true, false},
		{"the upstream operator watching every namespace",
			deployment("argocd", "argocd-operator-controller-manager", "quay.io/argoprojlabs/argocd-operator:v0.18.0", nil, corev1.EnvVar{Name: "WATCH_NAMESPACE"}), true, false},
		{"an operator watching other namespaces only",
			deployment("team-a", "argocd-operator", "quay.io/argoprojlabs/argocd-operator:v0.18.0", nil, corev1.EnvVar{Name: "WATCH_NAMESPACE", Value: "team-a,team-b"}), false, false},
		{"an operator watching openshift-gitops among others",
			deployment("team-a", "argocd-operator", "quay.io/argoprojlabs/argocd-operator:v0.18.0", nil, corev1.EnvVar{Name: "WATCH_NAMESPACE", Value: "team-a, openshift-gitops"}), true, false},
		{"ours",
			deployment(contract.GitOpsNamespace, contract.OperatorDeployment, "quay.io/argoprojlabs/argocd-operator:v0.18.0", ourLabels, corev1.EnvVar{Name: "WATCH_NAMESPACE"}), true, true},
		{"our label on another name is not ours",
			deployment(contract.GitOpsNamespace, "copy", "quay.io/argoprojlabs/argocd-operator:v0.18.0", ourLabels), true, false},
		{"an unrelated Deployment",
			deployment("default", "web", "nginx:1", nil), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, ok := operatorOf(tc.d)
			assert.Equal(t, tc.operator, ok)
			assert.Equal(t, tc.ours, op.Ours)
			if tc.operator {
				sliced, err := slimDeployment(tc.d)
				assert.NoError(t, err)
				again, okAgain := operatorOf(sliced.(*appsv1.Deployment))
				assert.Equal(t, ok, okAgain, "the cache's slim copy must decide the same")
				assert.Equal(t, op, again)
			}
		})
	}
}

func TestOLMObjects(t *testing.T) {
	sub := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "openshift-gitops-operator", "name": "openshift-gitops-operator"},
		"spec":     map[string]any{"name": "openshift-gitops-operator", "channel": "latest"},
		"status":   map[string]any{"installedCSV": "openshift-gitops-operator.v1.16.0"},
	}}
	o, ok := subscriptionOf(sub)
	assert.True(t, ok)
	assert.Equal(t, OLMOperator{Kind: "Subscription", Namespace: "openshift-gitops-operator", Name: "openshift-gitops-operator",
		Package: "openshift-gitops-operator", Version: "v1.16.0"}, o)

	other := sub.DeepCopy()
	_ = unstructured.SetNestedField(other.Object, "cert-manager", "spec", "name")
	_, ok = subscriptionOf(other)
	assert.False(t, ok)

	csv := &metav1.ObjectMeta{Namespace: "openshift-gitops-operator", Name: "openshift-gitops-operator.v1.16.0"}
	o, ok = csvOf(csv)
	assert.True(t, ok)
	assert.Equal(t, "v1.16.0", o.Version)
	copied := &metav1.ObjectMeta{Namespace: "team-a", Name: "openshift-gitops-operator.v1.16.0", Labels: map[string]string{labelOLMCopiedFrom: "openshift-gitops-operator"}}
	_, ok = csvOf(copied)
	assert.False(t, ok, "OLM's copies of a CSV in watched namespaces are one operator")
}
