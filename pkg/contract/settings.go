package contract

import (
	"maps"
	"net"
	"strings"
)

// The ManagedClusterAddOn annotations that carry AddonSettings. Only Settings and
// SettingsOf read or write them.
const (
	annotationOperatorImage    = "gitops-addon.open-cluster-management.io/gitops-operator-image"
	annotationArgoCDImage      = "gitops-addon.open-cluster-management.io/argocd-image"
	annotationRedisImage       = "gitops-addon.open-cluster-management.io/redis-image"
	annotationArgoCDAgentImage = "gitops-addon.open-cluster-management.io/argocd-agent-image"
	annotationPrincipal        = "gitops-addon.open-cluster-management.io/argocd-agent-principal"
	annotationPrincipalCA      = "gitops-addon.open-cluster-management.io/argocd-agent-ca"
	annotationLiveReader       = "gitops-addon.open-cluster-management.io/live-resources-reader"
)

// ArgoCDAgentMode, as a ManagedCluster label, sets that cluster's Argo CD Agent mode
// (managed or autonomous) over its GitOpsCluster's spec.gitopsAddon.argoCDAgent.mode, for
// a fleet that mixes both. As a ManagedClusterAddOn annotation (AddonSettings.ArgoCDAgent)
// it is the mode the cluster's agent runs in; absent when agent mode is off.
const ArgoCDAgentMode = "gitops-addon.open-cluster-management.io/argocd-agent-mode"

// AddonSettings are the per-cluster choices a GitOpsCluster (spec.gitopsAddon) makes for
// the stack shipped to a cluster. The hub's GitOpsCluster controller writes them on the
// cluster's ManagedClusterAddOn; the addon's values functions render the spoke's manifests
// from them and the Argo CD Agent signer issues certificates by them. The zero value means
// "the defaults": no image override, agent mode off.
type AddonSettings struct {
	Images Images
	// ArgoCDAgent is nil outside Argo CD Agent mode.
	ArgoCDAgent *ArgoCDAgentSettings
	// ExistingArgoCD is what to do where an Argo CD gitops-addon did not create already
	// runs (ExistingArgoCDSkip or ExistingArgoCDUse); "" means ExistingArgoCDSkip.
	ExistingArgoCD string
	// LiveResourcesReader is the spoke ServiceAccount the hub's Argo CD reads live
	// resources as in the basic pull model (spec.gitopsAddon.liveResources); zero: none.
	LiveResourcesReader ServiceAccountRef
}

// ServiceAccountRef names a ServiceAccount of a spoke.
type ServiceAccountRef struct {
	Namespace, Name string
}

// IsZero tells whether the reference names nothing.
func (r ServiceAccountRef) IsZero() bool { return r.Name == "" }

// String is "namespace/name", "" for the zero reference.
func (r ServiceAccountRef) String() string {
	if r.IsZero() {
		return ""
	}
	return r.Namespace + "/" + r.Name
}

// parseServiceAccountRef reads "namespace/name"; anything else is the zero reference.
func parseServiceAccountRef(s string) ServiceAccountRef {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return ServiceAccountRef{}
	}
	return ServiceAccountRef{Namespace: ns, Name: name}
}

// Images override the images the addon ships by default; "" keeps the default.
type Images struct {
	Operator    string // the GitOps operator
	ArgoCD      string // Argo CD (spec.gitopsAddon.gitOpsImage)
	Redis       string
	ArgoCDAgent string // argocd-agent, used only in agent mode
}

// ArgoCDAgentSettings are what an Argo CD Agent mode cluster's argocd-agent needs from the hub.
type ArgoCDAgentSettings struct {
	// Mode is managed or autonomous.
	Mode string
	// Principal is "host:port" of the hub's argocd-agent principal; "" while unknown.
	Principal string
	// PrincipalCA is the PEM certificate of argocd-agent-ca (never its key), which the
	// agent trusts the principal by; "" when the hub's CA is not propagated.
	PrincipalCA string
}

// PrincipalHostPort splits Principal; ok is false when it is unset or malformed.
func (a ArgoCDAgentSettings) PrincipalHostPort() (host, port string, ok bool) {
	host, port, err := net.SplitHostPort(a.Principal)
	return host, port, err == nil
}

// Annotations encodes the settings as the ManagedClusterAddOn annotations that carry
// them: only the set ones, so that an unset choice leaves no annotation.
func (s AddonSettings) Annotations() map[string]string {
	out := map[string]string{}
	set := func(key, value string) {
		if value != "" {
			out[key] = value
		}
	}
	set(annotationOperatorImage, s.Images.Operator)
	set(annotationArgoCDImage, s.Images.ArgoCD)
	set(annotationRedisImage, s.Images.Redis)
	set(annotationArgoCDAgentImage, s.Images.ArgoCDAgent)
	set(ExistingArgoCDPolicy, s.ExistingArgoCD)
	set(annotationLiveReader, s.LiveResourcesReader.String())
	if a := s.ArgoCDAgent; a != nil && a.Mode != "" {
		out[ArgoCDAgentMode] = a.Mode
		set(annotationPrincipal, a.Principal)
		set(annotationPrincipalCA, a.PrincipalCA)
	}
	return out
}

// SettingsOf decodes the settings from a ManagedClusterAddOn's annotations; other
// annotations are ignored, and agent mode is on only when its mode is set.
func SettingsOf(annotations map[string]string) AddonSettings {
	s := AddonSettings{Images: Images{
		Operator:    annotations[annotationOperatorImage],
		ArgoCD:      annotations[annotationArgoCDImage],
		Redis:       annotations[annotationRedisImage],
		ArgoCDAgent: annotations[annotationArgoCDAgentImage],
	}, ExistingArgoCD: annotations[ExistingArgoCDPolicy], LiveResourcesReader: parseServiceAccountRef(annotations[annotationLiveReader])}
	if mode := annotations[ArgoCDAgentMode]; mode != "" {
		s.ArgoCDAgent = &ArgoCDAgentSettings{
			Mode: mode, Principal: annotations[annotationPrincipal], PrincipalCA: annotations[annotationPrincipalCA],
		}
	}
	return s
}

// settingsKeys are every annotation AddonSettings owns: WithSettings replaces exactly
// these on a ManagedClusterAddOn (removing the ones no longer set) and leaves the
// annotations of OCM and users alone.
var settingsKeys = []string{
	annotationOperatorImage, annotationArgoCDImage, annotationRedisImage, annotationArgoCDAgentImage,
	ArgoCDAgentMode, annotationPrincipal, annotationPrincipalCA, ExistingArgoCDPolicy, annotationLiveReader,
}

// WithSettings returns annotations with the settings' keys replaced by s: the ones s
// sets written, the others removed; every other annotation kept. The input is not
// changed.
func WithSettings(annotations map[string]string, s AddonSettings) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	for _, key := range settingsKeys {
		delete(out, key)
	}
	maps.Copy(out, s.Annotations())
	return out
}
