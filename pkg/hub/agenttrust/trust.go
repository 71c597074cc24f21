package agenttrust

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Names of the Secrets in the Argo CD namespace, as argocd-agent's principal reads them.
const (
	CASecret            = "argocd-agent-ca"                 //nolint:gosec // G101: a Secret's name, not a credential
	PrincipalSecret     = "argocd-agent-principal-tls"      //nolint:gosec // G101: a Secret's name, not a credential
	ResourceProxySecret = "argocd-agent-resource-proxy-tls" //nolint:gosec // G101: a Secret's name, not a credential
	JWTSecret           = "argocd-agent-jwt"                //nolint:gosec // G101: a Secret's name, not a credential
	// JWTKey is the key of the JWT signing key in JWTSecret.
	JWTKey = "jwt.key"
)

// Lifetimes of what gitops-addon issues. The CA outlives every certificate it signs many
// times over: replacing it means every agent must trust a new one.
const (
	CALifetime      = 10 * 365 * 24 * time.Hour
	ServingLifetime = 365 * 24 * time.Hour
)

// Keeper issues and renews the trust Secrets of one Argo CD namespace.
type Keeper struct {
	// Client reads the Secrets gitops-addon labelled (cached) and writes.
	Client client.Client
	// APIReader reads a CA Secret a user created, which the cache does not see.
	APIReader client.Reader
	// Now is time.Now; tests replace it.
	Now func() time.Time
}

// Request says what the trust of an Argo CD namespace must cover.
type Request struct {
	Namespace string
	// PrincipalNames are the principal's DNS names and IP addresses as agents reach it.
	PrincipalNames []string
	// ResourceProxyService is the resource proxy's Service, when not argocd-agent's own
	// install's (the GitOps operator's): its names join the certificate's.
	ResourceProxyService string
}

// Certificate is what the status says of one certificate.
type Certificate struct {
	Secret   string
	NotAfter time.Time
	// Names are its DNS names and IP addresses (serving certificates).
	Names []string
}

// State is the trust of a namespace after Ensure.
type State struct {
	CA     Certificate
	UserCA bool // the CA Secret is the user's: used as is, never replaced
	// PreviousCA is the CA before the last rotation, still trusted beside the current
	// one until it expires; nil when there is none.
	PreviousCA *Certificate
	// NextCASignsFrom is when the CA that joined the bundle starts signing; zero when no
	// CA waits.
	NextCASignsFrom time.Time
	Principal       Certificate
	ResourceProxy   Certificate
	// Issued says, per Secret written in this pass, why ("missing", or why it was renewed).
	Issued map[string]string
	// RenewAt is the earliest time something is due: a serving certificate at renewAt of
	// its lifetime, or (gitops-addon's CA) the next stage of its rotation.
	RenewAt time.Time

	// ca signs the agents' client certificates (ClientConfigFor).
	ca *keyPair
}

// CACertificatePEM is the bundle agents trust the principal by: the signing CA's
// certificate (never a key), then, during a rotation, the next and the previous CA's; nil
// before Ensure.
func (st State) CACertificatePEM() []byte {
	if st.ca == nil {
		return nil
	}
	return st.ca.certPEM
}

// ResourceProxyNames are the names of the principal's resource proxy Service in ns:
// argocd-agent's own install's, and service's (the GitOps operator's) when given.
func ResourceProxyNames(ns, service string) []string {
	names := []string{"argocd-agent-resource-proxy", "argocd-agent-resource-proxy." + ns + ".svc"}
	if service != "" && service != names[0] {
		names = append(names, service, service+"."+ns+".svc")
	}
	return names
}

// Ensure makes the trust Secrets of a namespace complete and current and says where they
// stand. It writes only what is missing or due.
func (k *Keeper) Ensure(ctx context.Context, req Request) (State, error) {
	st := State{Issued: map[string]string{}}
	now := k.now()
	cas, user, err := k.ensureCA(ctx, req.Namespace, now, st.Issued)
	if err != nil {
		return st, err
	}
	st.useCA(cas, user)
	for _, s := range []struct {
		name, commonName string
		names            []string
		into             *Certificate
	}{
		{PrincipalSecret, "argocd-agent-principal", req.PrincipalNames, &st.Principal},
		{ResourceProxySecret, "argocd-agent-resource-proxy", ResourceProxyNames(req.Namespace, req.ResourceProxyService), &st.ResourceProxy},
	} {
		pair, err := k.ensureServing(ctx, req.Namespace, s.name, s.commonName, s.names, cas, now, st.Issued)
		if err != nil {
			return st, err
		}
		*s.into = Certificate{Secret: s.name, NotAfter: pair.cert.NotAfter, Names: normalizedNames(s.names)}
		if at := renewalTime(pair.cert); st.RenewAt.IsZero() || at.Before(st.RenewAt) {
			st.RenewAt = at
		}
	}
	if !st.UserCA {
		st.RenewAt = earliest(st.RenewAt, cas.dueAt())
	}
	return st, k.ensureJWTKey(ctx, req.Namespace, st.Issued)
}

// ensureCA returns the namespace's CAs: ours (issued when missing, rotated in stages, see
// caSet), or the user's, used as is when it has its key.
func (k *Keeper) ensureCA(ctx context.Context, ns string, now time.Time, issued map[string]string) (*caSet, bool, error) {
	secret, err := k.get(ctx, ns, CASecret)
	if err != nil {
		return nil, false, err
	}
	if secret == nil {
		ca, err := newCA(caCommonName, now, CALifetime)
		if err != nil {
			return nil, false, err
		}
		issued[CASecret] = "missing"
		return &caSet{signer: ca}, false, k.write(ctx, nil, tlsSecret(ns, CASecret, ca))
	}
	cas, err := loadSigningCA(ns, secret)
	if err != nil {
		return nil, false, err
	}
	if !ours(secret) {
		return cas, true, nil
	}
	why, err := cas.advance(now)
	if err != nil || why == "" {
		return cas, false, err
	}
	issued[CASecret] = why
	desired := tlsSecret(ns, CASecret, cas.signer)
	desired.Data = cas.data()
	return cas, false, k.write(ctx, secret, desired)
}

func (k *Keeper) ensureServing(
	ctx context.Context,
	ns, name, commonName string,
	names []string,
	cas *caSet,
	now time.Time,
	issued map[string]string,
) (*keyPair, error) {
	secret, err := k.get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	why := "missing"
	if secret != nil {
		if !ours(secret) {
			return nil, notOurs(ns, name)
		}
		current, err := parsePair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			why = err.Error()
		} else if why = needsRenewal(current, cas, names, now); why == "" {
			return current, nil
		}
	}
	pair, err := newServing(cas.signer, commonName, names, now, ServingLifetime)
	if err != nil {
		return nil, err
	}
	issued[name] = why
	return pair, k.write(ctx, secret, tlsSecret(ns, name, pair))
}

func (k *Keeper) ensureJWTKey(ctx context.Context, ns string, issued map[string]string) error {
	secret, err := k.get(ctx, ns, JWTSecret)
	if err != nil || secret != nil {
		return err
	}
	key, err := newJWTKey()
	if err != nil {
		return err
	}
	issued[JWTSecret] = "missing"
	return k.write(ctx, nil, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: JWTSecret, Labels: labels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{JWTKey: key},
	})
}

// get reads a Secret from the cache, then, for one that is not ours, uncached; nil when
// there is none.
func (k *Keeper) get(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		err = k.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	return secret, nil
}

// write creates desired, or replaces current's data with it.
func (k *Keeper) write(ctx context.Context, current, desired *corev1.Secret) error {
	if current == nil {
		if err := k.Client.Create(ctx, desired); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		return nil
	}
	current.Data = desired.Data
	if err := k.Client.Update(ctx, current); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", current.Namespace, current.Name, err)
	}
	return nil
}

func tlsSecret(ns, name string, pair *keyPair) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels()},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: pair.certPEM, corev1.TLSPrivateKeyKey: pair.keyPEM},
	}
}

// labels mark the trust Secrets as gitops-addon's, shared by the GitOpsClusters of the
// namespace (the manager's cache sees them by this label).
func labels() map[string]string {
	return map[string]string{contract.LabelManagedBy: contract.ManagedByValue}
}

func ours(s *corev1.Secret) bool {
	return s.Labels[contract.LabelManagedBy] == contract.ManagedByValue
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// useCA fills the CA part of st from the namespace's CAs: the one that signs, the one a
// rotation keeps trusted beside it, the one waiting to sign; user says it is the user's.
func (st *State) useCA(cas *caSet, user bool) {
	st.UserCA, st.ca = user, cas.signer
	st.CA = Certificate{Secret: CASecret, NotAfter: cas.signer.cert.NotAfter}
	if !user && len(cas.previous) > 0 {
		st.PreviousCA = &Certificate{Secret: CASecret, NotAfter: cas.previous[0].NotAfter}
	}
	if cas.next != nil {
		st.NextCASignsFrom = handover(cas.next)
	}
}

// loadSigningCA reads a namespace's CA Secret, which must hold a CA that can sign.
func loadSigningCA(ns string, secret *corev1.Secret) (*caSet, error) {
	cas, err := loadCASet(secret)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w; fix it or delete it to let gitops-addon issue a CA", ns, CASecret, err)
	}
	if cas.signer.key == nil || !cas.signer.cert.IsCA {
		return nil, fmt.Errorf("secret %s/%s must hold a CA certificate and its key (tls.crt, tls.key) to sign the principal's certificates", ns, CASecret)
	}
	return cas, nil
}

// notOurs is the error of a serving certificate's Secret another tool created.
func notOurs(ns, name string) error {
	return fmt.Errorf("secret %s/%s exists and was not created by gitops-addon; it is left unchanged: delete it to let gitops-addon issue it", ns, name)
}
