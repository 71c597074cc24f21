package addon

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// fuzzedVariableNames are the names a fuzzed customizedVariable takes: ours, Red Hat
// ACM's, and one nobody knows.
var fuzzedVariableNames = []string{
	VarExtraAPIGroups, VarGitOpsOperatorImage, VarArgoCDImage, VarRedisImage, VarArgoCDAgentImage, VarAgentLogLevel,
	VarRouteCRDAdmissionGuard, VarPlatformExtensionsForExisting,
	"GITOPS_OPERATOR_IMAGE", "ARGOCD_IMAGE", "ARGOCD_REDIS_IMAGE", "ARGOCD_REPOSERVER_IMAGE", "HTTP_PROXY", "NO_PROXY",
	"OLM_SUBSCRIPTION_ENABLED", "somethingElse",
}

// FuzzCustomizedVariables feeds an AddOnDeploymentConfig's customizedVariables, the
// input a hub administrator (or Red Hat ACM's gitops-addon-config) writes, through the
// whole render of the spoke stack. No input may panic; a rejection names the
// AddOnDeploymentConfig and the variable; an accepted operator image reaches the
// operator's container exactly as given (no YAML or template injection into the chart).
func FuzzCustomizedVariables(f *testing.F) {
	f.Add(uint8(1), "quay.io/argoprojlabs/argocd-operator:v0.14.0", uint8(0), "cert-manager.io,external-secrets.io")
	f.Add(uint8(8), "registry.example.com/gitops-rhel9-operator@sha256:0123", uint8(12), "http://proxy.example.com:3128")
	f.Add(uint8(1), "a\"b: {c}", uint8(5), "debug")
	f.Add(uint8(2), "x:y:z", uint8(6), "off")
	f.Add(uint8(1), "{{ .Values.global }}", uint8(13), "a,b\nc: d")
	f.Fuzz(func(t *testing.T, name1 uint8, value1 string, name2 uint8, value2 string) {
		vars := []addonv1beta1.CustomizedVariable{
			{Name: fuzzedVariableNames[int(name1)%len(fuzzedVariableNames)], Value: value1},
			{Name: fuzzedVariableNames[int(name2)%len(fuzzedVariableNames)], Value: value2},
		}
		adcs := fakeADCGetter{"c1/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"},
			Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: vars}}}
		a, err := New(Options{AgentImage: "a:1", ADCGetter: adcs, Warn: func(*addonv1beta1.ManagedClusterAddOn, string) {}})
		if err != nil {
			t.Fatal(err)
		}
		objects, err := a.Manifests(context.Background(), vanilla(), mca("cfg", nil, ""))
		if err != nil {
			namesVariable := strings.Contains(err.Error(), vars[0].Name) || strings.Contains(err.Error(), vars[1].Name)
			if !strings.Contains(err.Error(), "AddOnDeploymentConfig c1/cfg") || !namesVariable {
				t.Fatalf("a rejection that names neither the AddOnDeploymentConfig nor the variable: %v (input %q)", err, vars)
			}
			return
		}
		// The operator image the render decided (ACM's when set, ours over it; a name given
		// twice was rejected above) reaches the container unchanged.
		want, ours, oursSet := "", "", false
		for _, v := range vars {
			switch value := strings.TrimSpace(v.Value); v.Name {
			case "GITOPS_OPERATOR_IMAGE":
				if value != "" {
					want = value
				}
			case VarGitOpsOperatorImage:
				ours, oursSet = value, true
			}
		}
		if oursSet {
			want = ours
		}
		if want == "" {
			return
		}
		operator := find[*appsv1.Deployment](objects, contract.OperatorDeployment)
		if operator == nil {
			t.Fatalf("no operator Deployment rendered for %q", vars)
		}
		if got := operator.Spec.Template.Spec.Containers[0].Image; got != want {
			t.Fatalf("operator image %q rendered as %q", want, got)
		}
	})
}
