package argocdagent

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gitops-addon/gitops-addon/pkg/hub/agenttrust"
)

// Argo CD Agent's markers on a cluster Secret.
const (
	// LabelAgentName maps the cluster Secret to the agent of that name on the principal.
	LabelAgentName = "argocd-agent.argoproj-labs.io/agent-name"
	// AnnotationSkipReconcile makes the hub's application controller (Argo CD 3.4+) leave
	// the cluster's Applications to its agent.
	AnnotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"
)

// ToAgentFormat turns a desired cluster Secret into Argo CD Agent's format: the server is
// the principal's resource proxy for this agent, reached with a client certificate for
// the agent's name signed by argocd-agent-ca. currentConfig is the config of the Secret as
// it stands: its client certificate is kept until it is due.
func ToAgentFormat(desired *corev1.Secret, cluster string, currentConfig []byte, t Trust, now time.Time) error {
	config, _, err := t.State.ClientConfigFor(cluster, currentConfig, now)
	if err != nil {
		return fmt.Errorf("issuing the resource proxy client certificate of %s: %w", cluster, err)
	}
	desired.Labels[LabelAgentName] = cluster
	desired.Annotations[AnnotationSkipReconcile] = "true"
	proxy := t.Principal.ResourceProxy
	if proxy.Service == "" {
		proxy = defaultResourceProxy
	}
	desired.Data["server"] = []byte(agenttrust.ResourceProxyURL(desired.Namespace, proxy.Service, proxy.Port, cluster))
	desired.Data["config"] = config
	return nil
}
