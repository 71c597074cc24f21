// Package crdowner names who installed a CustomResourceDefinition, from the labels
// installers leave on it, so that gitops-addon (the hub manager with its own CRDs, the
// spoke agent with Argo CD's) can leave another installer's CRD alone and say whose it is.
package crdowner

import (
	"fmt"
	"strings"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Other names the installer of a CRD that is not gitops-addon's, from its labels: OLM (an
// operator subscription), Red Hat ACM's MultiClusterHub installer, or whatever
// app.kubernetes.io/managed-by says. It returns "" when the labels name no installer or
// name gitops-addon.
func Other(labels map[string]string) string {
	switch managedBy := labels[contract.LabelManagedBy]; {
	case managedBy == contract.ManagedByValue:
		return ""
	case labels["olm.managed"] == "true" || hasKeyPrefix(labels, "operators.coreos.com/"):
		return "OLM (an operator subscription)"
	case labels["installer.name"] != "":
		return fmt.Sprintf("the installer %s (Red Hat ACM's MultiClusterHub)", labels["installer.name"])
	default:
		return managedBy
	}
}

func hasKeyPrefix(labels map[string]string, prefix string) bool {
	for key := range labels {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}
