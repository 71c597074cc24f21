package addon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// acmGitOpsAddonConfig reads the AddOnDeploymentConfig gitops-addon-config as Red Hat
// ACM's GitOpsCluster controller writes it (reconstructed from its code in the shared
// fixtures, beside the checkout; $GITOPS_ADDON_FIXTURES elsewhere).
func acmGitOpsAddonConfig(t *testing.T) *addonv1beta1.AddOnDeploymentConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "acm"), "derived", "gitops-addon-config-adc-and-mca.yaml"))
	require.NoError(t, err)
	adc := &addonv1beta1.AddOnDeploymentConfig{}
	require.NoError(t, yaml.Unmarshal([]byte(strings.SplitN(string(data), "\n---\n", 2)[0]), adc))
	require.Equal(t, "gitops-addon-config", adc.Name)
	adc.Namespace = "c1"
	return adc
}

// acmValue is the value of one of ACM's variables in adc.
func acmValue(adc *addonv1beta1.AddOnDeploymentConfig, name string) string {
	for _, v := range adc.Spec.CustomizedVariables {
		if v.Name == name {
			return v.Value
		}
	}
	return ""
}

// setVariable sets (or adds) a customizedVariable.
func setVariable(adc *addonv1beta1.AddOnDeploymentConfig, name, value string) {
	for i, v := range adc.Spec.CustomizedVariables {
		if v.Name == name {
			adc.Spec.CustomizedVariables[i].Value = value
			return
		}
	}
	adc.Spec.CustomizedVariables = append(adc.Spec.CustomizedVariables, addonv1beta1.CustomizedVariable{Name: name, Value: value})
}

// containerEnv is the environment of a Deployment's first container.
func containerEnv(d *appsv1.Deployment) map[string]string {
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

func TestACMGitOpsAddonConfigIsUnderstood(t *testing.T) {
	tests := []struct {
		name         string
		edit         func(adc *addonv1beta1.AddOnDeploymentConfig)
		wantOperator func(adc *addonv1beta1.AddOnDeploymentConfig) string
		wantProxy    map[string]string
		wantWarnings []string // none: the ADC warning is empty (everything understood)
		agentMode    bool     // the cluster is in Argo CD Agent mode: argocd-agent's image applies
	}{
		{
			name:         "as ACM writes it (agent mode): every image carried over, nothing to warn about",
			wantOperator: func(adc *addonv1beta1.AddOnDeploymentConfig) string { return acmValue(adc, "GITOPS_OPERATOR_IMAGE") },
			agentMode:    true,
		},
		{
			name: "ACM's proxy variables reach the operator and the agent",
			edit: func(adc *addonv1beta1.AddOnDeploymentConfig) {
				setVariable(adc, "HTTPS_PROXY", "http://proxy.example.com:3128")
				setVariable(adc, "NO_PROXY", ".cluster.local,.svc")
			},
			wantOperator: func(adc *addonv1beta1.AddOnDeploymentConfig) string { return acmValue(adc, "GITOPS_OPERATOR_IMAGE") },
			wantProxy:    map[string]string{"HTTPS_PROXY": "http://proxy.example.com:3128", "NO_PROXY": ".cluster.local,.svc"},
		},
		{
			name: "the ADC's spec.proxyConfig wins over ACM's variables",
			edit: func(adc *addonv1beta1.AddOnDeploymentConfig) {
				setVariable(adc, "HTTPS_PROXY", "http://acm-proxy.example.com:3128")
				adc.Spec.ProxyConfig = addonv1beta1.ProxyConfig{HTTPSProxy: "http://spec-proxy.example.com:3128"}
			},
			wantOperator: func(adc *addonv1beta1.AddOnDeploymentConfig) string { return acmValue(adc, "GITOPS_OPERATOR_IMAGE") },
			wantProxy:    map[string]string{"HTTPS_PROXY": "http://spec-proxy.example.com:3128"},
		},
		{
			name: "our own variable wins over ACM's",
			edit: func(adc *addonv1beta1.AddOnDeploymentConfig) {
				setVariable(adc, VarGitOpsOperatorImage, "mirror.example.com/gitops/operator:v1")
			},
			wantOperator: func(*addonv1beta1.AddOnDeploymentConfig) string { return "mirror.example.com/gitops/operator:v1" },
		},
		{
			name: "OLM mode and a separate repo-server image are named with the fix",
			edit: func(adc *addonv1beta1.AddOnDeploymentConfig) {
				setVariable(adc, "OLM_SUBSCRIPTION_ENABLED", "true")
				setVariable(adc, "ARGOCD_REPOSERVER_IMAGE", "registry.example.com/repo-server:v1")
				setVariable(adc, "ARGOCD_AGENT_IMAGE", "")
			},
			wantOperator: func(adc *addonv1beta1.AddOnDeploymentConfig) string { return acmValue(adc, "GITOPS_OPERATOR_IMAGE") },
			wantWarnings: []string{"ARGOCD_REPOSERVER_IMAGE differs from ARGOCD_IMAGE", "OLM_SUBSCRIPTION_ENABLED is true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adc := acmGitOpsAddonConfig(t)
			if tt.edit != nil {
				tt.edit(adc)
			}
			var warnings []string
			warn := func(_ *addonv1beta1.ManagedClusterAddOn, message string) { warnings = append(warnings, message) }
			var annotations map[string]string
			if tt.agentMode {
				annotations = agentModeSettings()
			}
			objects := render(t, Options{AgentImage: "a:1", ADCGetter: fakeADCGetter{"c1/gitops-addon-config": adc}, Warn: warn},
				vanilla(), mca("gitops-addon-config", annotations, ""))

			operator := find[*appsv1.Deployment](objects, contract.OperatorDeployment)
			require.NotNil(t, operator)
			assert.Equal(t, tt.wantOperator(adc), operator.Spec.Template.Spec.Containers[0].Image)
			argocd := find[*unstructured.Unstructured](objects, contract.ArgoCDName)
			require.NotNil(t, argocd)
			argoImage, _, _ := unstructured.NestedString(argocd.Object, "spec", "image")
			argoVersion, _, _ := unstructured.NestedString(argocd.Object, "spec", "version")
			assert.Contains(t, acmValue(adc, "ARGOCD_IMAGE"), argoImage, "ArgoCD spec.image from ARGOCD_IMAGE")
			assert.Contains(t, acmValue(adc, "ARGOCD_IMAGE"), argoVersion, "ArgoCD spec.version from ARGOCD_IMAGE")
			redisImage, _, _ := unstructured.NestedString(argocd.Object, "spec", "redis", "image")
			require.NotEmpty(t, argoImage)
			require.NotEmpty(t, argoVersion)
			require.NotEmpty(t, redisImage)
			assert.Contains(t, acmValue(adc, "ARGOCD_REDIS_IMAGE"), redisImage, "ArgoCD spec.redis.image from ARGOCD_REDIS_IMAGE")
			for _, name := range []string{contract.OperatorDeployment, contract.AgentDeployment} {
				env := containerEnv(find[*appsv1.Deployment](objects, name))
				for _, variable := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
					assert.Equal(t, tt.wantProxy[variable], env[variable], "%s of %s", variable, name)
				}
			}

			agentImage, _, _ := unstructured.NestedString(argocd.Object, "spec", "argoCDAgent", "agent", "image")
			if tt.agentMode {
				assert.Equal(t, acmValue(adc, "ARGOCD_AGENT_IMAGE"), agentImage, "argocd-agent's image from ARGOCD_AGENT_IMAGE")
			} else {
				assert.Empty(t, agentImage, "no argocd-agent outside agent mode")
			}
			require.Len(t, warnings, 1, "one message for the ADC")
			if len(tt.wantWarnings) == 0 {
				assert.Empty(t, warnings[0], "every one of ACM's variables understood and carried out")
			}
			assert.NotContains(t, warnings[0], "ignored customizedVariables", "every one of ACM's variables is understood")
			for _, want := range tt.wantWarnings {
				assert.Contains(t, warnings[0], want)
			}
		})
	}
}

// TestArgoCDAgentImage: argocd-agent's image reaches the ArgoCD CR in agent mode, from the
// GitOpsCluster (annotation) over the AddOnDeploymentConfig, mirrored by its registries.
func TestArgoCDAgentImage(t *testing.T) {
	agentMode := agentModeSettings()
	withImage := contract.AddonSettings{Images: contract.Images{ArgoCDAgent: "registry.example.com/argocd-agent:v1"}}.Annotations()
	for k, v := range agentMode {
		withImage[k] = v
	}
	adc := func(variable string, mirrors ...addonv1beta1.ImageMirror) fakeADCGetter {
		spec := addonv1beta1.AddOnDeploymentConfigSpec{Registries: mirrors}
		if variable != "" {
			spec.CustomizedVariables = []addonv1beta1.CustomizedVariable{{Name: VarArgoCDAgentImage, Value: variable}}
		}
		return fakeADCGetter{"c1/cfg": {Spec: spec}}
	}
	tests := []struct {
		name        string
		annotations map[string]string
		adcs        fakeADCGetter
		want        string
	}{
		{name: "not set: the operator's default", annotations: agentMode, adcs: adc(""), want: ""},
		{name: "from the GitOpsCluster", annotations: withImage, adcs: adc(""), want: "registry.example.com/argocd-agent:v1"},
		{name: "from the AddOnDeploymentConfig", annotations: agentMode, adcs: adc("adc.example.com/argocd-agent:v2"), want: "adc.example.com/argocd-agent:v2"},
		{name: "the GitOpsCluster wins over the AddOnDeploymentConfig", annotations: withImage, adcs: adc("adc.example.com/argocd-agent:v2"),
			want: "registry.example.com/argocd-agent:v1"},
		{name: "mirrored by the registries", annotations: withImage,
			adcs: adc("", addonv1beta1.ImageMirror{Source: "registry.example.com", Mirror: "mirror.example.com/gitops"}),
			want: "mirror.example.com/gitops/argocd-agent:v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := render(t, Options{AgentImage: "a:1", ADCGetter: tt.adcs}, vanilla(), mca("cfg", tt.annotations, ""))
			argocd := find[*unstructured.Unstructured](objects, contract.ArgoCDName)
			require.NotNil(t, argocd)
			enabled, _, _ := unstructured.NestedBool(argocd.Object, "spec", "argoCDAgent", "agent", "enabled")
			require.True(t, enabled, "agent mode")
			image, _, _ := unstructured.NestedString(argocd.Object, "spec", "argoCDAgent", "agent", "image")
			assert.Equal(t, tt.want, image)
		})
	}
}

// agentModeSettings are the ManagedClusterAddOn annotations of a managed-mode cluster
// whose principal is known.
func agentModeSettings() map[string]string {
	return contract.AddonSettings{ArgoCDAgent: &contract.ArgoCDAgentSettings{Mode: "managed", Principal: "principal.example.com:443"}}.Annotations()
}

// TestACMVariableRejectedUnderItsOwnName: a bad value in one of ACM's image variables is
// rejected under the name the administrator wrote (ARGOCD_IMAGE), not under ours
// (argoCDImage), which appears nowhere in their AddOnDeploymentConfig (a fuzz finding).
func TestACMVariableRejectedUnderItsOwnName(t *testing.T) {
	adc := acmGitOpsAddonConfig(t)
	setVariable(adc, "ARGOCD_IMAGE", "quay.io/argoproj/argocd v3.2.11")
	a, err := New(Options{AgentImage: "a:1", ADCGetter: fakeADCGetter{"c1/gitops-addon-config": adc},
		Warn: func(*addonv1beta1.ManagedClusterAddOn, string) {}})
	require.NoError(t, err)
	_, err = a.Manifests(context.Background(), vanilla(), mca("gitops-addon-config", nil, ""))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `customizedVariable ARGOCD_IMAGE="quay.io/argoproj/argocd v3.2.11" must not contain white space`)
	assert.NotContains(t, err.Error(), VarArgoCDImage)
}

// TestVariableThatIsNotText: a value that is not printable UTF-8 (a fuzz finding: "\xff"
// became "ÿ" in the operator's image) is rejected, under the name written.
func TestVariableThatIsNotText(t *testing.T) {
	for _, name := range []string{"GITOPS_OPERATOR_IMAGE", VarGitOpsOperatorImage, "HTTP_PROXY", "somethingElse"} {
		t.Run(name, func(t *testing.T) {
			adc := acmGitOpsAddonConfig(t)
			setVariable(adc, name, "quay.io/x/operator:\xff")
			a, err := New(Options{AgentImage: "a:1", ADCGetter: fakeADCGetter{"c1/gitops-addon-config": adc},
				Warn: func(*addonv1beta1.ManagedClusterAddOn, string) {}})
			require.NoError(t, err)
			_, err = a.Manifests(context.Background(), vanilla(), mca("gitops-addon-config", nil, ""))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "customizedVariable "+name+`="quay.io/x/operator:\xff" is not printable text`)
		})
	}
}

// A name given twice (which the apiserver's list-map validation refuses) is rejected,
// named, rather than resolved by order: found by FuzzCustomizedVariables with "0" then "".
func TestVariableSetTwice(t *testing.T) {
	for _, name := range []string{"GITOPS_OPERATOR_IMAGE", VarGitOpsOperatorImage, "somethingElse"} {
		t.Run(name, func(t *testing.T) {
			adc := acmGitOpsAddonConfig(t)
			adc.Spec.CustomizedVariables = append(adc.Spec.CustomizedVariables,
				addonv1beta1.CustomizedVariable{Name: name, Value: "quay.io/x/operator:1"},
				addonv1beta1.CustomizedVariable{Name: name, Value: ""})
			a, err := New(Options{AgentImage: "a:1", ADCGetter: fakeADCGetter{"c1/gitops-addon-config": adc},
				Warn: func(*addonv1beta1.ManagedClusterAddOn, string) {}})
			require.NoError(t, err)
			_, err = a.Manifests(context.Background(), vanilla(), mca("gitops-addon-config", nil, ""))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "AddOnDeploymentConfig c1/gitops-addon-config")
			assert.Contains(t, err.Error(), "customizedVariable "+name+" is set more than once")
		})
	}
}
