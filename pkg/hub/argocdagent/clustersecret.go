package argocdagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
)

// Argo CD Agent's markers on a cluster Secret.
const (
	// LabelAgentName (argocd-agent's "agent-name") maps the cluster Secret to the
	// argocd-agent of that name on the principal.
	LabelAgentName = "argocd-agent.argoproj-labs.io/agent-name"
	// AnnotationSkipReconcile makes the hub's application controller (Argo CD 3.4+) leave
	// the cluster's Applications to its argocd-agent.
	AnnotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"
)

// ClientConfig is the config of an Argo CD cluster Secret in argocd-agent's format: the
// hub's Argo CD reaches the cluster through the principal's resource proxy with a client
// certificate for the argocd-agent's name, signed by argocd-agent-ca.
type ClientConfig struct {
	TLSClientConfig TLSClientConfig `json:"tlsClientConfig"`
}

// TLSClientConfig is Argo CD's cluster TLS configuration; []byte fields are base64 in JSON,
// as Argo CD reads them.
type TLSClientConfig struct {
	Insecure bool   `json:"insecure"`
	CertData []byte `json:"certData,omitempty"`
	KeyData  []byte `json:"keyData,omitempty"`
	CAData   []byte `json:"caData,omitempty"`
}

// FormatClusterSecret turns a desired cluster Secret into argocd-agent's format: the
// server is the principal's resource proxy for the cluster's argocd-agent, reached with a
// client certificate for its name (the cluster's) signed by argocd-agent-ca.
// currentConfig is the config of the Secret as it stands: its client certificate is kept
// until it is due.
func FormatClusterSecret(desired *corev1.Secret, cluster string, currentConfig []byte, t Trust, now time.Time) error {
	config, _, err := clientConfigFor(t, cluster, currentConfig, now)
	if err != nil {
		return fmt.Errorf("issuing the resource proxy client certificate of %s: %w", cluster, err)
	}
	desired.Labels[LabelAgentName] = cluster
	desired.Annotations[AnnotationSkipReconcile] = "true"
	proxy := t.Principal.ResourceProxy
	if proxy.Service == "" {
		proxy = defaultResourceProxy
	}
	desired.Data["server"] = []byte(ResourceProxyURL(desired.Namespace, proxy.Service, proxy.Port, cluster))
	desired.Data["config"] = config
	return nil
}

// ResourceProxyURL is the server of an Argo CD Agent mode cluster's Argo CD cluster
// Secret: the principal's resource proxy Service (service, port) in namespace, for the
// argocd-agent of cluster.
func ResourceProxyURL(namespace, service, port, cluster string) string {
	return fmt.Sprintf("https://%s.%s.svc:%s?agentName=%s", service, namespace, port, cluster)
}

// clientConfigFor returns the config JSON for the argocd-agent of cluster: the one in
// current when its certificate is still good (signed by the CA, for cluster, before 80 %
// of its life), else one with a new certificate; issued tells which.
func clientConfigFor(t Trust, cluster string, current []byte, now time.Time) (config []byte, issued bool, err error) {
	if t.cas == nil {
		return nil, false, fmt.Errorf("the Argo CD Agent CA is not loaded")
	}
	bundle := t.cas.Bundle()
	var existing ClientConfig
	if len(current) > 0 && json.Unmarshal(current, &existing) == nil {
		if pair, err := pki.ParsePair(existing.TLSClientConfig.CertData, existing.TLSClientConfig.KeyData); err == nil &&
			t.cas.ClientCurrent(pair, cluster, now) && bytes.Equal(existing.TLSClientConfig.CAData, bundle) {
			return current, false, nil
		}
	}
	pair, err := t.cas.IssueClient(cluster, now)
	if err != nil {
		return nil, false, err
	}
	config, err = json.Marshal(ClientConfig{TLSClientConfig: TLSClientConfig{
		CertData: pair.CertPEM(), KeyData: pair.KeyPEM(), CAData: bundle,
	}})
	return config, true, err
}
