package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// sensitive are the capabilities a reviewer asks about first, in the words the
// explanation uses. Each is denied by default; extraAPIGroups can grant some of them.
var sensitive = []struct {
	words                  string
	group, resource, verb  string
	subresource, fixedName string
}{
	{words: "impersonate a ServiceAccount (and so act as any identity of the cluster)", resource: "serviceaccounts", verb: "impersonate"},
	{words: "request ServiceAccount tokens", resource: "serviceaccounts", subresource: "token", verb: "create"},
	{words: "exec into pods", resource: "pods", subresource: "exec", verb: "create"},
	{words: "create pods directly (workloads go through their controllers)", resource: "pods", verb: "create"},
	{words: "write RBAC (Roles, ClusterRoles and their bindings)", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", verb: "create"},
	{words: "escalate or bind roles", group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "escalate"},
	{words: "install or change CRDs", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", verb: "create"},
	{words: "write admission webhooks or policies", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", verb: "create"},
	{words: "change nodes", resource: "nodes", verb: "patch"},
	{words: "write PersistentVolumes", resource: "persistentvolumes", verb: "create"},
	{words: "approve certificate signing requests", group: "certificates.k8s.io", resource: "certificatesigningrequests", subresource: "approval", verb: "update"},
}

// ExplainRBAC writes, in words, what the spoke Argo CD application controller may manage
// with the rendered argocd-platform-extensions ClusterRole, and which sensitive
// capabilities it does and does not have. It reads the rules as RBAC grants them (the
// e2e and integration tests ask the real authorizer the same questions).
func ExplainRBAC(w io.Writer, objects []runtime.Object) error {
	role := findClusterRole(objects, contract.PlatformExtensionsClusterRole)
	if role == nil {
		return fmt.Errorf("no %s ClusterRole was rendered", contract.PlatformExtensionsClusterRole)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The spoke's Argo CD application controller (ServiceAccount %s/openshift-gitops-argocd-application-controller)\n", contract.GitOpsNamespace)
	fmt.Fprintf(&b, "may manage, in every namespace and cluster-wide (ClusterRole %s):\n", role.Name)
	for _, rule := range role.Rules {
		fmt.Fprintf(&b, "  - %s: %s (%s)\n", groupWords(rule.APIGroups), resourceWords(rule.Resources), strings.Join(rule.Verbs, ", "))
	}
	b.WriteString("Kinds outside this list are skipped by the controller (resource.respectRBAC), not failed;\n" +
		"add an API group with the AddOnDeploymentConfig's customizedVariable extraAPIGroups.\n")
	var can, cannot []string
	for _, s := range sensitive {
		if allows(role.Rules, s.group, s.resource, s.subresource, s.verb) {
			can = append(can, s.words)
		} else {
			cannot = append(cannot, s.words)
		}
	}
	if len(can) > 0 {
		b.WriteString("It MAY (granted through extraAPIGroups):\n")
		for _, words := range can {
			fmt.Fprintf(&b, "  - %s\n", words)
		}
	}
	b.WriteString("It may not:\n")
	for _, words := range cannot {
		fmt.Fprintf(&b, "  - %s\n", words)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func findClusterRole(objects []runtime.Object, name string) *rbacv1.ClusterRole {
	for _, obj := range objects {
		if r, ok := obj.(*rbacv1.ClusterRole); ok && r.Name == name {
			return r
		}
	}
	return nil
}

// allows tells whether any rule grants verb on group/resource[/subresource], as RBAC
// matches rules: exact names or "*".
func allows(rules []rbacv1.PolicyRule, group, resource, subresource, verb string) bool {
	full := resource
	if subresource != "" {
		full = resource + "/" + subresource
	}
	matches := func(values []string, want string) bool {
		return slices.Contains(values, want) || slices.Contains(values, "*")
	}
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || !matches(r.APIGroups, group) || !matches(r.Verbs, verb) {
			continue
		}
		if slices.Contains(r.Resources, full) || slices.Contains(r.Resources, "*") ||
			(subresource != "" && slices.Contains(r.Resources, resource+"/*")) {
			return true
		}
	}
	return false
}

func groupWords(groups []string) string {
	words := make([]string, 0, len(groups))
	for _, g := range groups {
		if g == "" {
			g = "core"
		}
		words = append(words, g)
	}
	return strings.Join(words, ", ")
}

func resourceWords(resources []string) string {
	if slices.Equal(resources, []string{"*"}) {
		return "every resource of the group"
	}
	return strings.Join(resources, ", ")
}
