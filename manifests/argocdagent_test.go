package manifests_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/test/agentchart"
	"github.com/gitops-addon/gitops-addon/test/pki"
)

// argoCDAgentCertificateSecret is where OCM's registration agent keeps argocd-agent's
// client certificate; the chart's default must be exactly that name.
var argoCDAgentCertificateSecret = argocdagent.SourceSecretName(contract.AddonName, signer.SignerName)

// testCACertificate is a CA certificate (PEM), as the hub propagates it.
var testCACertificate = func() string {
	ca, err := pki.NewCA("argocd-agent-ca")
	if err != nil {
		panic(err)
	}
	return string(ca.CertPEM)
}()

func TestArgoCDAgentModeRendersTheAgentAndItsCertificateHandling(t *testing.T) {
	agentMode := map[string]any{"argoCDAgent": map[string]any{
		"mode": "autonomous", "principalAddress": "principal.example.com", "principalPort": "8443", "caCertificate": testCACertificate,
	}}
	tests := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, objects []*unstructured.Unstructured)
	}{
		{name: "off by default: nothing of it rendered", values: nil, check: func(t *testing.T, objects []*unstructured.Unstructured) {
			argocd := agentchart.MustFind(t, objects, "ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName)
			_, found, _ := unstructured.NestedMap(argocd.Object, "spec", "argoCDAgent")
			assert.False(t, found)
			_, found, _ = unstructured.NestedBool(argocd.Object, "spec", "server", "enabled")
			assert.False(t, found, "argocd-server runs outside agent mode")
			assert.Nil(t, agentchart.Find(objects, "Secret", contract.GitOpsNamespace, "argocd-agent-ca"))
			assert.Nil(t, agentchart.Find(objects, "Role", contract.GitOpsNamespace, "gitops-addon:agent:argocd-agent-certificate"))
			assert.False(t, slices.ContainsFunc(agentArgs(t, objects), func(a string) bool { return strings.HasPrefix(a, "--argocd-agent-certificate-secret") }))
		}},
		{name: "on: the ArgoCD CR's agent, the CA, the certificate secret and RBAC by name", values: agentMode, check: func(t *testing.T, objects []*unstructured.Unstructured) {
			argocd := agentchart.MustFind(t, objects, "ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName)
			agent, found, _ := unstructured.NestedMap(argocd.Object, "spec", "argoCDAgent", "agent")
			require.True(t, found)
			assert.Equal(t, true, agent["enabled"])
			assert.Equal(t, map[string]any{"principalServerAddress": "principal.example.com", "principalServerPort": "8443", "mode": "autonomous"}, agent["client"])
			assert.Equal(t, map[string]any{"secretName": argocdagent.ClientTLSSecret, "rootCASecretName": "argocd-agent-ca"}, agent["tls"])
			server, _, _ := unstructured.NestedMap(argocd.Object, "spec", "server")
			assert.Equal(t, map[string]any{"enabled": false, "route": map[string]any{"enabled": false}}, server, "no argocd-server on an agent cluster")

			ca := agentchart.MustFind(t, objects, "Secret", contract.GitOpsNamespace, "argocd-agent-ca")
			data, _, _ := unstructured.NestedStringMap(ca.Object, "data")
			assert.Equal(t, map[string]string{"ca.crt": base64.StdEncoding.EncodeToString([]byte(testCACertificate))}, data, "the certificate only, never a key")

			assert.Contains(t, agentArgs(t, objects), "--argocd-agent-certificate-secret="+argoCDAgentCertificateSecret)
			source := ruleOf(t, agentchart.MustFind(t, objects, "Role", agentchart.InstallNamespace, "gitops-addon:agent:argocd-agent-certificate"), "secrets")
			assert.Equal(t, []string{argoCDAgentCertificateSecret}, source.ResourceNames)
			deployments := ruleOf(t, agentchart.MustFind(t, objects, "Role", contract.GitOpsNamespace, "gitops-addon:agent:argocd-agent-certificate"), "deployments")
			assert.Equal(t, []string{argocdagent.Deployment(contract.ArgoCDName)}, deployments.ResourceNames, "the Deployment the operator renders for argocd-agent")
		}},
		{name: "managed, without the CA (propagateHubCA: false)", values: map[string]any{"argoCDAgent": map[string]any{"mode": "managed"}}, check: func(t *testing.T, objects []*unstructured.Unstructured) {
			argocd := agentchart.MustFind(t, objects, "ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName)
			mode, _, _ := unstructured.NestedString(argocd.Object, "spec", "argoCDAgent", "agent", "client", "mode")
			assert.Equal(t, "managed", mode)
			assert.Nil(t, agentchart.Find(objects, "Secret", contract.GitOpsNamespace, "argocd-agent-ca"))
			agentchart.MustFind(t, objects, "Role", contract.GitOpsNamespace, "gitops-addon:agent:argocd-agent-certificate")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, agentchart.MustRender(t, agentchart.WithValues(tt.values)))
		})
	}
}

func agentArgs(t *testing.T, objects []*unstructured.Unstructured) []string {
	t.Helper()
	return typedDeployment(t, objects, agentchart.InstallNamespace, contract.AgentDeployment).Spec.Template.Spec.Containers[0].Args
}

// ruleOf is the rule of a Role that grants resource.
func ruleOf(t *testing.T, role *unstructured.Unstructured, resource string) agentchart.PolicyRule {
	t.Helper()
	for _, r := range agentchart.RulesOf(t, role) {
		if slices.Contains(r.Resources, resource) && len(r.ResourceNames) > 0 {
			return r
		}
	}
	t.Fatalf("%s %s/%s grants no named %s", role.GetKind(), role.GetNamespace(), role.GetName(), resource)
	return agentchart.PolicyRule{}
}
