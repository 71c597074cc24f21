package argocdagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/agenttrust"
)

// ReasonTrustPending is the ArgoCDAgentTrust condition's reason (Unknown) while the trust
// controller has not issued every trust Secret of the Argo CD namespace yet.
const ReasonTrustPending = "TrustPending"

// Pending says, when some trust Secrets are not issued yet, what the GitOpsCluster waits
// for; "" when none is missing.
func (t Trust) Pending(argoNamespace string) string {
	if len(t.Missing) == 0 {
		return ""
	}
	return fmt.Sprintf("waiting for gitops-addon to issue %s in %s (its trust controller issues them once per namespace; "+
		"if this lasts, its Warning Events on this GitOpsCluster say why)", strings.Join(t.Missing, ", "), argoNamespace)
}

// Trust is what a GitOpsCluster in agent mode knows of its Argo CD namespace's trust: read
// from the Secrets the trust controller keeps, never written by the GitOpsCluster.
type Trust struct {
	Enabled bool
	State   agenttrust.State
	// Principal is where this GitOpsCluster's agents connect.
	Principal Principal
	// Missing are the trust Secrets not issued yet; until they are, nothing is signed.
	Missing []string
}

// TrustReader reads, for one GitOpsCluster, its namespace's trust and its principal.
type TrustReader struct {
	Finder Finder
	// Keeper reads the trust Secrets (Read: nothing is written).
	Keeper *agenttrust.Keeper
}

// Read reads gc's trust; a zero Trust outside agent mode. An error is a trust Secret that
// is there but unusable (with the fix), or a failed read.
func (r TrustReader) Read(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (Trust, error) {
	t := Trust{Enabled: gc.ArgoCDAgentEnabled()}
	if !t.Enabled {
		return t, nil
	}
	var err error
	if t.Principal, err = r.Finder.Find(ctx, gc); err != nil {
		return t, err
	}
	if r.Keeper == nil {
		return t, nil
	}
	t.State, t.Missing, err = r.Keeper.Read(ctx, gc.ArgoNamespace())
	if err != nil {
		return t, fmt.Errorf("reading the Argo CD Agent certificates: %w", err)
	}
	return t, nil
}

// PrincipalNames are the names the principal's certificate holds for one GitOpsCluster:
// the principal's Service in the Argo CD namespace (the operator's, when found) and the
// address agents reach it at.
func PrincipalNames(gc *appsv1beta1.GitOpsCluster, p Principal) []string {
	ns := gc.ArgoNamespace()
	names := []string{"argocd-agent-principal", "argocd-agent-principal." + ns + ".svc"}
	if p.Service != "" && p.Service != names[0] {
		names = append(names, p.Service, p.Service+"."+ns+".svc")
	}
	if p.Address != "" {
		names = append(names, p.Address)
	}
	return names
}

// Condition is the ArgoCDAgentTrust condition of a trust read complete: where the trust
// Secrets stand, with their expiry dates; False while the principal's address is unknown.
func (t Trust) Condition() metav1.Condition {
	st := t.State
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
	if t.Principal.Address == "" {
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonPrincipalAddressUnknown
		c.Message = t.Principal.Problem + " Meanwhile: " + c.Message
	}
	return c
}
