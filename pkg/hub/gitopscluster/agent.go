package gitopscluster

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/agenttrust"
)

// agentResult is what keeping the Argo CD Agent trust found.
type agentResult struct {
	enabled bool
	state   agenttrust.State
	// principal is where agents connect (serverAddress, or the principal's LoadBalancer).
	principal principal
}

// principalNames are the names the principal's certificate holds: its Service in the Argo
// CD namespace (the operator's, when found) and the address agents reach it at.
func principalNames(gc *appsv1beta1.GitOpsCluster, p principal) []string {
	ns := gc.ArgoNamespace()
	names := []string{"argocd-agent-principal", "argocd-agent-principal." + ns + ".svc"}
	if p.service != "" && p.service != names[0] {
		names = append(names, p.service, p.service+"."+ns+".svc")
	}
	if p.address != "" {
		names = append(names, p.address)
	}
	return names
}

// sharedPrincipalNames are the names the principal's certificate must hold for every
// agent-mode GitOpsCluster of gc's Argo CD namespace: one principal serves them all, and
// a certificate naming only the one reconciled last would be issued again by each in
// turn when their serverAddresses differ.
func (r *Reconciler) sharedPrincipalNames(ctx context.Context, gc *appsv1beta1.GitOpsCluster, own principal) ([]string, error) {
	names := principalNames(gc, own)
	sharing, err := r.sharingPrincipal(ctx, gc.ArgoNamespace())
	if err != nil {
		return nil, err
	}
	discovered := own.address != "" && gc.Spec.GitOpsAddon.ArgoCDAgent.ServerAddress == ""
	for _, other := range sharing {
		if other.UID == gc.UID || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if address := other.Spec.GitOpsAddon.ArgoCDAgent.ServerAddress; address != "" {
			names = append(names, address)
			continue
		}
		if discovered {
			continue // the namespace's principal is discovered the same for every GitOpsCluster
		}
		discovered = true
		p, err := r.findPrincipal(ctx, other)
		if err != nil {
			return nil, err
		}
		names = append(names, principalNames(other, p)...)
	}
	return names, nil
}

// ensureAgentTrust keeps the principal's trust Secrets in argoNamespace and records an
// Event for each one it issued.
func (r *Reconciler) ensureAgentTrust(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (agentResult, error) {
	res := agentResult{enabled: gc.ArgoCDAgentEnabled()}
	if !res.enabled {
		return res, nil
	}
	var err error
	if res.principal, err = r.findPrincipal(ctx, gc); err != nil {
		return res, err
	}
	if r.Trust == nil {
		return res, nil
	}
	sans, err := r.sharedPrincipalNames(ctx, gc, res.principal)
	if err != nil {
		return res, err
	}
	st, err := r.Trust.Ensure(ctx, agenttrust.Request{Namespace: gc.ArgoNamespace(), PrincipalNames: sans})
	if err != nil {
		return res, fmt.Errorf("keeping the Argo CD Agent certificates: %w", err)
	}
	names := make([]string, 0, len(st.Issued))
	for name := range st.Issued {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		why := st.Issued[name]
		if why != "missing" && name != agenttrust.JWTSecret {
			// argocd-agent's principal reads its certificates only when it starts.
			why += "; restart the principal to use it (kubectl -n " + gc.ArgoNamespace() + " rollout restart deployment " +
				cmp.Or(res.principal.service, "<the principal's Deployment>") + ")"
		}
		r.event(gc, corev1.EventTypeNormal, "AgentCertificateIssued", "Issued Secret %s/%s (%s)", gc.ArgoNamespace(), name, why)
	}
	res.state = st
	return res, nil
}

// agentTrustCondition says where the trust Secrets stand, with their expiry dates.
func agentTrustCondition(a agentResult) metav1.Condition {
	st := a.state
	owner := "issued by gitops-addon"
	if st.UserCA {
		owner = "yours, used as is"
	}
	day := func(t time.Time) string { return t.UTC().Format("2006-01-02") }
	if !st.NextCASignsFrom.IsZero() {
		owner += fmt.Sprintf("; a new CA is in the bundle and signs from %s on: restart the principal before then", day(st.NextCASignsFrom))
	}
	if st.PreviousCA != nil {
		owner += fmt.Sprintf("; rotated, the previous CA is trusted beside it until %s", day(st.PreviousCA.NotAfter))
	}
	c := metav1.Condition{
		Type: appsv1beta1.ConditionArgoCDAgentTrust, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonCertificatesCurrent,
		Message: fmt.Sprintf("CA %s (%s) expires %s; principal certificate %s for %s expires %s; resource proxy certificate %s expires %s; "+
			"renewed from %s on; JWT signing key in %s.",
			st.CA.Secret, owner, day(st.CA.NotAfter), st.Principal.Secret, strings.Join(st.Principal.Names, ", "), day(st.Principal.NotAfter),
			st.ResourceProxy.Secret, day(st.ResourceProxy.NotAfter), day(st.RenewAt), agenttrust.JWTSecret),
	}
	if a.principal.address == "" {
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonPrincipalAddressUnknown
		c.Message = a.principal.problem + " Meanwhile: " + c.Message
	}
	return c
}

// untilRenewal is how long until the next certificate is due, for the requeue.
func (a agentResult) untilRenewal(now time.Time) time.Duration {
	if !a.enabled || a.state.RenewAt.IsZero() {
		return 0
	}
	return max(a.state.RenewAt.Sub(now), time.Minute)
}

// Argo CD Agent's markers on a cluster Secret.
const (
	// labelAgentName maps the cluster Secret to the agent of that name on the principal.
	labelAgentName = "argocd-agent.argoproj-labs.io/agent-name"
	// annotationSkipReconcile makes the hub's application controller (Argo CD 3.4+) leave
	// the cluster's Applications to its agent.
	annotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"
)

// toAgentFormat turns a cluster Secret into Argo CD Agent's format: the server is the
// principal's resource proxy for this agent, reached with a client certificate for the
// agent's name signed by argocd-agent-ca, kept until it is due.
func (r *Reconciler) toAgentFormat(ctx context.Context, desired *corev1.Secret, cluster string, agent agentResult) error {
	current := &corev1.Secret{}
	var currentConfig []byte
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current); err == nil {
		currentConfig = current.Data["config"]
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Secret %s: %w", client.ObjectKeyFromObject(desired), err)
	}
	config, _, err := agent.state.ClientConfigFor(cluster, currentConfig, time.Now())
	if err != nil {
		return fmt.Errorf("issuing the resource proxy client certificate of %s: %w", cluster, err)
	}
	desired.Labels[labelAgentName] = cluster
	desired.Annotations[AnnotationWrittenLabels] = writtenLabels(desired.Labels)
	desired.Annotations[annotationSkipReconcile] = "true"
	desired.Data["server"] = []byte(agenttrust.ResourceProxyURL(desired.Namespace, cluster))
	desired.Data["config"] = config
	return nil
}

// addonSettings are what a cluster's ManagedClusterAddOn carries for the addon's
// rendering: the GitOpsCluster's images and, in agent mode, the mode, the principal's
// address and the CA to trust it by (unless propagation is off).
func addonSettings(gc *appsv1beta1.GitOpsCluster, mode string, agent agentResult) contract.AddonSettings {
	settings := contract.AddonSettings{Images: imageSettings(gc)}
	if mode == "" {
		return settings
	}
	settings.ArgoCDAgent = &contract.ArgoCDAgentSettings{Mode: mode, Principal: agent.principal.hostPort()}
	if ca := agent.state.CACertificatePEM(); len(ca) > 0 && propagatesHubCA(gc) {
		settings.ArgoCDAgent.PrincipalCA = string(ca)
	}
	return settings
}

// propagatesHubCA tells whether the principal's CA goes to the clusters: propagateHubCA
// (true unless set false), and not ACM's skip annotation.
func propagatesHubCA(gc *appsv1beta1.GitOpsCluster) bool {
	if gc.Annotations[appsv1beta1.AnnotationSkipHubCAPropagation] == "true" {
		return false
	}
	p := gc.Spec.GitOpsAddon.ArgoCDAgent.PropagateHubCA
	return p == nil || *p
}
