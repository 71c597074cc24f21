package addon

import (
	"fmt"
	"strings"

	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
)

// Red Hat ACM's GitOpsCluster controller writes, per cluster, an AddOnDeploymentConfig
// gitops-addon-config whose customizedVariables carry images, proxy and Argo CD Agent
// settings in its own names. A hub moving from ACM keeps those ADCs, and a disconnected
// fleet depends on their images and proxy: they are read here, never dropped silently.

// acmImageVariables map ACM's image variables to ours.
var acmImageVariables = map[string]string{
	"GITOPS_OPERATOR_IMAGE": VarGitOpsOperatorImage,
	"ARGOCD_IMAGE":          VarArgoCDImage,
	"ARGOCD_REDIS_IMAGE":    VarRedisImage,
	"ARGOCD_AGENT_IMAGE":    VarArgoCDAgentImage,
}

// acmProxyVariables are ACM's proxy variables; they reach the spoke's operator and agent
// as the ADC's spec.proxyConfig would (which wins when set).
var acmProxyVariables = map[string]bool{"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true}

// acmComponentsNotDeployed are images of components ACM's stack may run and gitops-addon's
// does not: understood, and nothing to do with them.
var acmComponentsNotDeployed = map[string]string{
	"ARGOCD_REDIS_HA_IMAGE":       "Redis HA",
	"ARGOCD_REDIS_HA_PROXY_IMAGE": "the Redis HA proxy",
	"ARGOCD_DEX_IMAGE":            "Dex",
	"BACKEND_IMAGE":               "the OpenShift GitOps backend",
	"GITOPS_CONSOLE_PLUGIN_IMAGE": "the OpenShift console plugin",
	"ARGOCD_EXTENSION_IMAGE":      "Argo CD extensions",
	"ARGO_ROLLOUTS_IMAGE":         "Argo Rollouts",
	"ARGOCD_IMAGE_UPDATER_IMAGE":  "Argo CD Image Updater",
}

// acmCopiesOfGitOpsCluster are ACM's copies of its GitOpsCluster's Argo CD Agent fields;
// gitops-addon reads the GitOpsCluster itself.
var acmCopiesOfGitOpsCluster = map[string]bool{
	"ARGOCD_AGENT_ENABLED": true, "ARGOCD_AGENT_MODE": true, "ARGOCD_AGENT_SERVER_ADDRESS": true, "ARGOCD_AGENT_SERVER_PORT": true,
}

// acmOLMPrefix starts ACM's OLM subscription variables: ACM can install the operator
// through OLM; gitops-addon always deploys it itself.
const acmOLMPrefix = "OLM_SUBSCRIPTION_"

// acmTranslation is what ACM's variables of one ADC mean here.
type acmTranslation struct {
	// ours are ACM's image variables under our names.
	ours []addonv1beta1.CustomizedVariable
	// others are the variables that are not ACM's, unchanged.
	others []addonv1beta1.CustomizedVariable
	// proxy is HTTP_PROXY, HTTPS_PROXY and NO_PROXY when set.
	proxy map[string]string
	// warnings say what of ACM's settings gitops-addon does not carry out, and the fix.
	warnings []string
	// err is the first of ACM's variables that cannot be carried out, named as ACM names it.
	err error
}

// translateACMVariables reads ACM's variables among vars.
func translateACMVariables(vars []addonv1beta1.CustomizedVariable) acmTranslation {
	var t acmTranslation
	values := map[string]string{}
	for _, v := range vars {
		values[v.Name] = strings.TrimSpace(v.Value)
	}
	for _, v := range vars {
		value := values[v.Name]
		switch {
		case acmImageVariables[v.Name] != "":
			if strings.ContainsAny(value, whiteSpace) && t.err == nil {
				// Said here, under the name the administrator wrote, not ours.
				t.err = fmt.Errorf("customizedVariable %s=%q must not contain white space", v.Name, value)
			}
			if value != "" {
				t.ours = append(t.ours, addonv1beta1.CustomizedVariable{Name: acmImageVariables[v.Name], Value: value})
			}
		case acmProxyVariables[v.Name]:
			if value != "" {
				if t.proxy == nil {
					t.proxy = map[string]string{}
				}
				t.proxy[v.Name] = value
			}
		case v.Name == "ARGOCD_REPOSERVER_IMAGE":
			if value != "" && value != values["ARGOCD_IMAGE"] {
				t.warnings = append(t.warnings, fmt.Sprintf("ARGOCD_REPOSERVER_IMAGE differs from ARGOCD_IMAGE: gitops-addon runs every Argo CD component "+
					"from one image, ARGOCD_IMAGE (%s); set ARGOCD_IMAGE to the image you want", values["ARGOCD_IMAGE"]))
			}
		case acmComponentsNotDeployed[v.Name] != "", acmCopiesOfGitOpsCluster[v.Name]:
			// Understood: a component gitops-addon does not deploy, or a copy of the GitOpsCluster.
		case v.Name == acmOLMPrefix+"ENABLED":
			if value == "true" {
				t.warnings = append(t.warnings, "OLM_SUBSCRIPTION_ENABLED is true: gitops-addon deploys the GitOps operator itself, never through OLM; "+
					"set GITOPS_OPERATOR_IMAGE (or gitOpsOperatorImage) to the operator image to run")
			}
		case strings.HasPrefix(v.Name, acmOLMPrefix):
			// Only meaningful with OLM_SUBSCRIPTION_ENABLED, handled above.
		default:
			t.others = append(t.others, v)
		}
	}
	return t
}
