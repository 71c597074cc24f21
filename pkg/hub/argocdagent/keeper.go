package argocdagent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
)

// Keeper keeps the trust Secrets of the Argo CD namespaces (pki's CASecret,
// PrincipalSecret, ResourceProxySecret and JWTSecret): the trust controller issues and
// renews them (Ensure), the GitOpsClusters and the signer read them (Read, ReadCA).
// Certificates are issued once and issued again only when their names change or after
// 80 % of their lifetime, never on every reconcile; a user's CA is used as is.
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
	// PrincipalNames are the principal's DNS names and IP addresses as argocd-agents reach it.
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
func (k *Keeper) Ensure(ctx context.Context, req Request) (Trust, error) {
	st := Trust{Issued: map[string]string{}}
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
		{pki.PrincipalSecret, "argocd-agent-principal", req.PrincipalNames, &st.PrincipalCertificate},
		{pki.ResourceProxySecret, "argocd-agent-resource-proxy", ResourceProxyNames(req.Namespace, req.ResourceProxyService), &st.ResourceProxyCertificate},
	} {
		pair, err := k.ensureServing(ctx, req.Namespace, s.name, s.commonName, s.names, cas, now, st.Issued)
		if err != nil {
			return st, err
		}
		*s.into = Certificate{Secret: s.name, NotAfter: pair.Certificate().NotAfter, Names: pair.Names()}
		st.dueBy(pair.RenewAt())
	}
	if !st.UserCA {
		st.dueBy(cas.DueAt())
	}
	return st, k.ensureJWTKey(ctx, req.Namespace, st.Issued)
}

// ensureCA returns the namespace's CAs: ours (issued when missing, rotated in stages, see
// pki.CASet), or the user's, used as is when it has its key.
func (k *Keeper) ensureCA(ctx context.Context, ns string, now time.Time, issued map[string]string) (*pki.CASet, bool, error) {
	secret, err := k.get(ctx, ns, pki.CASecret)
	if err != nil {
		return nil, false, err
	}
	if secret == nil {
		cas, err := pki.NewCASet(now)
		if err != nil {
			return nil, false, err
		}
		issued[pki.CASecret] = "missing"
		return cas, false, k.write(ctx, nil, caSecret(ns, cas))
	}
	cas, err := loadSigningCA(ns, secret)
	if err != nil {
		return nil, false, err
	}
	if !ours(secret) {
		return cas, true, nil
	}
	why, err := cas.Advance(now)
	if err != nil || why == "" {
		return cas, false, err
	}
	issued[pki.CASecret] = why
	return cas, false, k.write(ctx, secret, caSecret(ns, cas))
}

func (k *Keeper) ensureServing(
	ctx context.Context,
	ns, name, commonName string,
	names []string,
	cas *pki.CASet,
	now time.Time,
	issued map[string]string,
) (*pki.Pair, error) {
	secret, err := k.get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	why := "missing"
	if secret != nil {
		if !ours(secret) {
			return nil, notOurs(ns, name)
		}
		current, err := pki.ParsePair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			why = err.Error()
		} else if why = cas.NeedsRenewal(current, names, now); why == "" {
			return current, nil
		}
	}
	pair, err := cas.IssueServing(commonName, names, now)
	if err != nil {
		return nil, err
	}
	issued[name] = why
	return pair, k.write(ctx, secret, tlsSecret(ns, name, pair))
}

func (k *Keeper) ensureJWTKey(ctx context.Context, ns string, issued map[string]string) error {
	secret, err := k.get(ctx, ns, pki.JWTSecret)
	if err != nil || secret != nil {
		return err
	}
	key, err := pki.NewJWTKey()
	if err != nil {
		return err
	}
	issued[pki.JWTSecret] = "missing"
	return k.write(ctx, nil, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.JWTSecret, Labels: trustLabels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{pki.JWTKey: key},
	})
}

// ReadCA reads the argocd-agent-ca Secret of an Argo CD namespace (ours from the cache,
// a user's uncached); nil when there is none.
func (k *Keeper) ReadCA(ctx context.Context, namespace string) (*corev1.Secret, error) {
	return k.get(ctx, namespace, pki.CASecret)
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

func tlsSecret(ns, name string, pair *pki.Pair) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: trustLabels()},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: pair.CertPEM(), corev1.TLSPrivateKeyKey: pair.KeyPEM()},
	}
}

// caSecret is the CA Secret holding cas (a kubernetes.io/tls Secret with, during a
// rotation, the next CA's key too).
func caSecret(ns string, cas *pki.CASet) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.CASecret, Labels: trustLabels()},
		Type:       corev1.SecretTypeTLS,
		Data:       cas.Data(),
	}
}

// trustLabels mark the trust Secrets as gitops-addon's, shared by the GitOpsClusters of the
// namespace (the manager's cache sees them by this label).
func trustLabels() map[string]string {
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

// loadSigningCA reads a namespace's CA Secret, which must hold a CA that can sign.
func loadSigningCA(ns string, secret *corev1.Secret) (*pki.CASet, error) {
	cas, err := pki.LoadCASet(secret.Data)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w; fix it or delete it to let gitops-addon issue a CA", ns, pki.CASecret, err)
	}
	if !cas.CanSign() {
		return nil, fmt.Errorf("secret %s/%s must hold a CA certificate and its key (tls.crt, tls.key) to sign the principal's certificates", ns, pki.CASecret)
	}
	return cas, nil
}

// notOurs is the error of a serving certificate's Secret another tool created.
func notOurs(ns, name string) error {
	return fmt.Errorf("secret %s/%s exists and was not created by gitops-addon; it is left unchanged: delete it to let gitops-addon issue it", ns, name)
}
