package argocdagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
)

// Trust is the Argo CD Agent trust of an Argo CD namespace: where its trust Secrets stand
// and the CA that signs. The trust controller keeps it (Keeper.Ensure, which says what it
// Issued); a GitOpsCluster in Argo CD Agent mode only reads it (TrustReader: Keeper.Read,
// which says what is Missing, and where the GitOpsCluster's argocd-agents reach the
// Principal).
type Trust struct {
	// Enabled: the GitOpsCluster is in Argo CD Agent mode (TrustReader); a GitOpsCluster
	// outside it reads a zero Trust.
	Enabled bool
	// Principal is where this GitOpsCluster's argocd-agents connect (TrustReader).
	Principal Principal
	// Missing are the trust Secrets not issued yet (Read); until they are, nothing is signed.
	Missing []string

	CA     Certificate
	UserCA bool // the CA Secret is the user's: used as is, never replaced
	// PreviousCA is the CA before the last rotation, still trusted beside the current
	// one until it expires; nil when there is none.
	PreviousCA *Certificate
	// NextCASignsFrom is when the CA that joined the bundle starts signing; zero when no
	// CA waits.
	NextCASignsFrom          time.Time
	PrincipalCertificate     Certificate
	ResourceProxyCertificate Certificate
	// Issued says, per Secret written by Ensure, why ("missing", or why it was renewed).
	Issued map[string]string
	// RenewAt is the earliest time something is due: a serving certificate at 80 % of
	// its lifetime, or (gitops-addon's CA) the next stage of its rotation.
	RenewAt time.Time

	// cas signs the hub's client certificates (FormatClusterSecret); nil before the CA
	// is read.
	cas *pki.CASet
}

// TrustReader reads, for one GitOpsCluster, its namespace's trust and its principal.
type TrustReader struct {
	Finder Finder
	// Keeper reads the trust Secrets (Read: nothing is written).
	Keeper *Keeper
}

// Read reads gc's trust; a zero Trust outside Argo CD Agent mode. An error is a trust
// Secret that is there but unusable (with the fix), or a failed read.
func (r TrustReader) Read(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (Trust, error) {
	if !gc.ArgoCDAgentEnabled() {
		return Trust{}, nil
	}
	principal, err := r.Finder.Find(ctx, gc)
	if err != nil || r.Keeper == nil {
		return Trust{Enabled: true, Principal: principal}, err
	}
	t, err := r.Keeper.Read(ctx, gc.ArgoNamespace())
	t.Enabled, t.Principal = true, principal
	if err != nil {
		return t, fmt.Errorf("reading the Argo CD Agent certificates: %w", err)
	}
	return t, nil
}

// CACertificatePEM is the bundle argocd-agents trust the principal by: the signing CA's
// certificate (never a key), then, during a rotation, the next and the previous CA's; nil
// before the CA is read.
func (t Trust) CACertificatePEM() []byte {
	if t.cas == nil {
		return nil
	}
	return t.cas.Bundle()
}

// Pending says, when some trust Secrets are not issued yet, what the GitOpsCluster waits
// for; "" when none is missing.
func (t Trust) Pending(argoNamespace string) string {
	if len(t.Missing) == 0 {
		return ""
	}
	return fmt.Sprintf("waiting for gitops-addon to issue %s in %s (its trust controller issues them once per namespace; "+
		"if this lasts, its Warning Events on this GitOpsCluster say why)", strings.Join(t.Missing, ", "), argoNamespace)
}

// Condition is the ArgoCDAgentTrust condition of a trust read complete: where the trust
// Secrets stand, with their expiry dates; False while the principal's address is unknown.
func (t Trust) Condition() metav1.Condition {
	owner := "issued by gitops-addon"
	if t.UserCA {
		owner = "yours, used as is"
	}
	day := func(at time.Time) string { return at.UTC().Format("2006-01-02") }
	if !t.NextCASignsFrom.IsZero() {
		owner += fmt.Sprintf("; a new CA is in the bundle and signs from %s on: restart the principal before then", day(t.NextCASignsFrom))
	}
	if t.PreviousCA != nil {
		owner += fmt.Sprintf("; rotated, the previous CA is trusted beside it until %s", day(t.PreviousCA.NotAfter))
	}
	c := metav1.Condition{
		Type: appsv1beta1.ConditionArgoCDAgentTrust, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonCertificatesCurrent,
		Message: fmt.Sprintf("CA %s (%s) expires %s; principal certificate %s for %s expires %s; resource proxy certificate %s expires %s; "+
			"renewed from %s on; JWT signing key in %s.",
			t.CA.Secret, owner, day(t.CA.NotAfter), t.PrincipalCertificate.Secret, strings.Join(t.PrincipalCertificate.Names, ", "),
			day(t.PrincipalCertificate.NotAfter), t.ResourceProxyCertificate.Secret, day(t.ResourceProxyCertificate.NotAfter), day(t.RenewAt),
			pki.JWTSecret),
	}
	if t.Principal.Address == "" {
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonPrincipalAddressUnknown
		c.Message = t.Principal.Problem + " Meanwhile: " + c.Message
	}
	return c
}

// UntilRenewal is how long until the next trust certificate of t is due: when its
// GitOpsCluster looks again at its clusters' client certificates; 0 outside Argo CD
// Agent mode.
func (t Trust) UntilRenewal(now time.Time) time.Duration {
	if !t.Enabled {
		return 0
	}
	return t.untilDue(now)
}

// untilDue is how long until the next certificate is due, for the requeue; 0 when
// nothing is.
func (t Trust) untilDue(now time.Time) time.Duration {
	if t.RenewAt.IsZero() {
		return 0
	}
	return max(t.RenewAt.Sub(now), time.Minute)
}

// useCA fills the CA part of t from the namespace's CAs: the one that signs, the one a
// rotation keeps trusted beside it, the one waiting to sign; user says it is the user's.
func (t *Trust) useCA(cas *pki.CASet, user bool) {
	t.UserCA, t.cas = user, cas
	t.CA = Certificate{Secret: pki.CASecret, NotAfter: cas.NotAfter()}
	if previous := cas.PreviousNotAfter(); !user && !previous.IsZero() {
		t.PreviousCA = &Certificate{Secret: pki.CASecret, NotAfter: previous}
	}
	t.NextCASignsFrom = cas.NextSignsFrom()
}

// dueBy makes at the time something is due when it comes before the current one.
func (t *Trust) dueBy(at time.Time) {
	if t.RenewAt.IsZero() || at.Before(t.RenewAt) {
		t.RenewAt = at
	}
}
