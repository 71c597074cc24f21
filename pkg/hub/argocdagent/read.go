package argocdagent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
)

// Read says where the trust Secrets of a namespace stand, writing nothing: the trust
// controller alone keeps them (Ensure), and the GitOpsClusters of the namespace read them
// here to sign their clusters' client certificates and to report the expiry dates.
// Missing names the Secrets not issued yet (the trust controller issues them); a Trust
// read without its CA cannot sign (FormatClusterSecret fails). An error is a Secret that
// is there but unusable, with the fix.
func (k *Keeper) Read(ctx context.Context, ns string) (st Trust, err error) {
	var missing []string
	ca, err := k.get(ctx, ns, pki.CASecret)
	if err != nil {
		return st, err
	}
	if ca == nil {
		missing = append(missing, pki.CASecret)
	} else if err := readCA(&st, ns, ca); err != nil {
		return st, err
	}
	for _, s := range []struct {
		name string
		into *Certificate
	}{{pki.PrincipalSecret, &st.PrincipalCertificate}, {pki.ResourceProxySecret, &st.ResourceProxyCertificate}} {
		due, err := k.readServing(ctx, ns, s.name, s.into)
		if err != nil {
			return st, err
		}
		if due.IsZero() {
			missing = append(missing, s.name)
			continue
		}
		st.dueBy(due)
	}
	jwt, err := k.get(ctx, ns, pki.JWTSecret)
	if err != nil {
		return st, err
	}
	if jwt == nil {
		missing = append(missing, pki.JWTSecret)
	}
	st.Missing = missing
	return st, nil
}

// readCA fills the CA part of st from the namespace's CA Secret, as Ensure would use it.
func readCA(st *Trust, ns string, secret *corev1.Secret) error {
	cas, err := loadSigningCA(ns, secret)
	if err != nil {
		return err
	}
	st.useCA(cas, !ours(secret))
	if !st.UserCA {
		st.RenewAt = cas.DueAt()
	}
	return nil
}

// readServing reads a serving certificate's Secret into c and says when it is due for
// renewal; zero when there is none (or it is unreadable: the trust controller issues it
// again).
func (k *Keeper) readServing(ctx context.Context, ns, name string, c *Certificate) (time.Time, error) {
	secret, err := k.get(ctx, ns, name)
	if err != nil || secret == nil {
		return time.Time{}, err
	}
	if !ours(secret) {
		return time.Time{}, notOurs(ns, name)
	}
	pair, err := pki.ParsePair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return time.Time{}, nil
	}
	*c = Certificate{Secret: name, NotAfter: pair.Certificate().NotAfter, Names: pair.Names()}
	return pair.RenewAt(), nil
}
