package render

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
)

// PrincipalOptions are the hub Argo CD instance a principal is set up in.
type PrincipalOptions struct {
	// Namespace is the GitOpsCluster's argoServer.argoNamespace, where gitops-addon keeps
	// the principal's certificates; Name is the ArgoCD CR there.
	Namespace, Name string
	// Clusters are the argocd-agents' names (the managed clusters in Argo CD Agent mode):
	// in managed mode the principal serves each argocd-agent the Applications of the hub
	// namespace of its name, which on an OCM hub is the cluster's own namespace.
	Clusters []string
}

// Principal prints the ArgoCD CR settings the hub's Argo CD needs to run the principal
// with the trust gitops-addon keeps: the auth pattern that reads the argocd-agent's name
// from the client certificates OCM issues, the Secrets gitops-addon writes, and the
// namespaces of the argocd-agents. It is meant to be merged into the user's own ArgoCD CR (kubectl apply
// --server-side, or by hand): gitops-addon never writes the hub's Argo CD itself.
func Principal(w io.Writer, o PrincipalOptions) error {
	if o.Namespace == "" || o.Name == "" {
		return errors.New("--namespace and --name (the hub's ArgoCD CR) are required")
	}
	for _, c := range o.Clusters {
		if errs := validation.IsDNS1123Label(c); len(errs) > 0 {
			return fmt.Errorf("--clusters: %q is not a cluster name: %v", c, errs)
		}
	}
	clusters := slices.Clone(o.Clusters)
	slices.Sort(clusters)
	allowed := make([]any, 0, len(clusters))
	for _, c := range slices.Compact(clusters) {
		allowed = append(allowed, c)
	}
	principal := map[string]any{
		"enabled": true,
		"auth":    signer.PrincipalAuth,
		"tls":     map[string]any{"secretName": pki.PrincipalSecret, "rootCASecretName": pki.CASecret},
		"resourceProxy": map[string]any{
			"secretName": pki.ResourceProxySecret, "caSecretName": pki.CASecret,
		},
		"jwt": map[string]any{"secretName": pki.JWTSecret},
	}
	if len(allowed) > 0 {
		principal["namespace"] = map[string]any{"allowedNamespaces": allowed}
	}
	out, err := yaml.Marshal(map[string]any{
		"apiVersion": "argoproj.io/v1beta1",
		"kind":       "ArgoCD",
		"metadata":   map[string]any{"name": o.Name, "namespace": o.Namespace},
		"spec":       map[string]any{"argoCDAgent": map[string]any{"principal": principal}},
	})
	if err != nil {
		return fmt.Errorf("encoding the ArgoCD settings: %w", err)
	}
	header := fmt.Sprintf("# The principal's settings for ArgoCD %s/%s, to merge into it (kubectl apply --server-side --field-manager=argocd-principal -f -).\n"+
		"# Secrets %s, %s, %s and %s are kept by gitops-addon in %s.\n",
		o.Namespace, o.Name, pki.CASecret, pki.PrincipalSecret, pki.ResourceProxySecret, pki.JWTSecret, o.Namespace)
	if len(allowed) == 0 {
		header += "# No --clusters given: add the argocd-agents' names (their cluster namespaces) to " +
			"spec.argoCDAgent.principal.namespace.allowedNamespaces for managed mode.\n"
	}
	_, err = fmt.Fprint(w, header+string(out))
	return err
}
