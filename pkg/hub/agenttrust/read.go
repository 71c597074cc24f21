package agenttrust

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Read says where the trust Secrets of a namespace stand, writing nothing: the trust
// controller alone keeps them (Ensure), and the GitOpsClusters of the namespace read them
// here to sign their clusters' client certificates and to report the expiry dates.
// missing names the Secrets not issued yet (the trust controller issues them); a State
// read without its CA cannot sign (ClientConfigFor fails). An error is a Secret that is
// there but unusable, with the fix.
func (k *Keeper) Read(ctx context.Context, ns string) (st State, missing []string, err error) {
	ca, err := k.get(ctx, ns, CASecret)
	if err != nil {
		return st, nil, err
	}
	if ca == nil {
		missing = append(missing, CASecret)
	} else if err := st.readCA(ns, ca); err != nil {
		return st, nil, err
	}
	for _, s := range []struct {
		name string
		into *Certificate
	}{{PrincipalSecret, &st.Principal}, {ResourceProxySecret, &st.ResourceProxy}} {
		due, err := k.readServing(ctx, ns, s.name, s.into)
		if err != nil {
			return st, nil, err
		}
		if due.IsZero() {
			missing = append(missing, s.name)
			continue
		}
		st.RenewAt = earliest(st.RenewAt, due)
	}
	jwt, err := k.get(ctx, ns, JWTSecret)
	if err != nil {
		return st, nil, err
	}
	if jwt == nil {
		missing = append(missing, JWTSecret)
	}
	return st, missing, nil
}

// readCA fills the CA part of st from the namespace's CA Secret, as Ensure would use it.
func (st *State) readCA(ns string, secret *corev1.Secret) error {
	cas, err := loadSigningCA(ns, secret)
	if err != nil {
		return err
	}
	st.useCA(cas, !ours(secret))
	if !st.UserCA {
		st.RenewAt = cas.dueAt()
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
	pair, err := parsePair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return time.Time{}, nil
	}
	names := slices.Clone(pair.cert.DNSNames)
	for _, ip := range pair.cert.IPAddresses {
		names = append(names, ip.String())
	}
	*c = Certificate{Secret: name, NotAfter: pair.cert.NotAfter, Names: normalizedNames(names)}
	return renewalTime(pair.cert), nil
}
