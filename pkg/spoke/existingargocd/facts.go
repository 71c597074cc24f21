package existingargocd

import (
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// gitopsPackages are the OLM packages of GitOps operators: Red Hat OpenShift GitOps and
// the community Argo CD operator.
var gitopsPackages = []string{"openshift-gitops-operator", "argocd-operator"}

// operatorImage matches the images of GitOps operators: argocd-operator (upstream and
// ours), openshift-gitops-operator and Red Hat's gitops-rhel*-operator builds.
var operatorImage = regexp.MustCompile(`(argocd-operator|gitops-operator|gitops-rhel[0-9]*-operator)`)

// labelOLMCopiedFrom marks the copies of a ClusterServiceVersion OLM writes into every
// namespace an operator watches: one operator, many copies; only the original counts.
const labelOLMCopiedFrom = "olm.copiedFrom"

// instanceOf reads an ArgoCD's metadata.
func instanceOf(m metav1.Object) Instance {
	return Instance{
		Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(), Created: m.GetCreationTimestamp().Time,
		LabelledOurs: m.GetLabels()[contract.LabelManagedBy] == contract.ManagedByValue,
	}
}

// subscriptionOf reads an OLM Subscription of a GitOps operator; ok is false for the
// Subscriptions of other operators.
func subscriptionOf(u *unstructured.Unstructured) (OLMOperator, bool) {
	pkg, _, _ := unstructured.NestedString(u.Object, "spec", "name")
	if !slices.Contains(gitopsPackages, pkg) {
		return OLMOperator{}, false
	}
	csv, _, _ := unstructured.NestedString(u.Object, "status", "installedCSV")
	return OLMOperator{Kind: "Subscription", Namespace: u.GetNamespace(), Name: u.GetName(), Package: pkg, Version: csvVersion(csv)}, true
}

// csvOf reads a ClusterServiceVersion of a GitOps operator by its name (OLM names a CSV
// <package>.v<version>); copies OLM spreads over watched namespaces do not count.
func csvOf(m metav1.Object) (OLMOperator, bool) {
	if _, copied := m.GetLabels()[labelOLMCopiedFrom]; copied {
		return OLMOperator{}, false
	}
	for _, pkg := range gitopsPackages {
		if strings.HasPrefix(m.GetName(), pkg+".") {
			return OLMOperator{Kind: "ClusterServiceVersion", Namespace: m.GetNamespace(), Name: m.GetName(), Package: pkg, Version: csvVersion(m.GetName())}, true
		}
	}
	return OLMOperator{}, false
}

// csvVersion is the version part of a CSV name, "" when it has none.
func csvVersion(csv string) string {
	if _, v, ok := strings.Cut(csv, "."); ok {
		return v
	}
	return ""
}

// operatorOf reads a Deployment that runs a GitOps operator watching the GitOps namespace;
// ok is false for any other Deployment. An operator watches every namespace when its
// WATCH_NAMESPACE is empty or unset, and a namespace it lists; a WATCH_NAMESPACE taken from
// elsewhere (valueFrom, as OLM sets it from the OperatorGroup) may include it, so counts.
func operatorOf(d *appsv1.Deployment) (Operator, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if !operatorImage.MatchString(c.Image) {
			continue
		}
		if !watches(c.Env, contract.GitOpsNamespace) {
			continue
		}
		ours := d.Namespace == contract.GitOpsNamespace && d.Name == contract.OperatorDeployment &&
			d.Labels[contract.LabelManagedBy] == contract.ManagedByValue
		return Operator{Namespace: d.Namespace, Name: d.Name, Ours: ours}, true
	}
	return Operator{}, false
}

func watches(env []corev1.EnvVar, namespace string) bool {
	for _, e := range env {
		if e.Name != "WATCH_NAMESPACE" {
			continue
		}
		if e.ValueFrom != nil || strings.TrimSpace(e.Value) == "" {
			return true
		}
		for _, ns := range strings.Split(e.Value, ",") {
			if strings.TrimSpace(ns) == namespace {
				return true
			}
		}
		return false
	}
	return true
}
