package argocdagent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
)

// TestReadSaysWhatEnsureKeptAndWritesNothing: before Ensure every trust Secret is missing
// and nothing can be signed; after it, Read's Trust is Ensure's (certificates, expiry,
// renewal, the CA to sign with), and reading never writes.
func TestReadSaysWhatEnsureKeptAndWritesNothing(t *testing.T) {
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	ctx := context.Background()
	k, c := newKeeper(t, &now)

	st, err := k.Read(ctx, ns)
	require.NoError(t, err)
	assert.Equal(t, []string{pki.CASecret, pki.PrincipalSecret, pki.ResourceProxySecret, pki.JWTSecret}, st.Missing)
	_, _, err = clientConfigFor(st, "c1", nil, now)
	require.Error(t, err, "nothing to sign with before the CA is issued")
	secrets := &corev1.SecretList{}
	require.NoError(t, c.List(ctx, secrets))
	assert.Empty(t, secrets.Items, "Read writes nothing")

	kept, err := k.Ensure(ctx, Request{Namespace: ns, PrincipalNames: []string{"principal.example.com", "10.0.0.9"}})
	require.NoError(t, err)
	st, err = k.Read(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, st.Missing)
	assert.Equal(t, kept.CA, st.CA)
	assert.Equal(t, kept.PrincipalCertificate, st.PrincipalCertificate)
	assert.Equal(t, kept.ResourceProxyCertificate, st.ResourceProxyCertificate)
	assert.Equal(t, kept.RenewAt, st.RenewAt)
	assert.Equal(t, kept.CACertificatePEM(), st.CACertificatePEM())
	_, _, err = clientConfigFor(st, "c1", nil, now)
	require.NoError(t, err, "the CA read signs")
}

// TestReadNamesAnUnusableTrustSecret: a serving certificate's Secret another tool created,
// and a CA Secret without a key, are errors with the fix; an unreadable serving
// certificate of ours is missing (issued again).
func TestReadNamesAnUnusableTrustSecret(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.PrincipalSecret}}
	k, _ := newKeeper(t, &now, foreign)
	_, err := k.Read(ctx, ns)
	require.ErrorContains(t, err, "was not created by gitops-addon; it is left unchanged: delete it")

	keyless := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.CASecret}, Data: map[string][]byte{corev1.TLSCertKey: []byte("x")}}
	k, _ = newKeeper(t, &now, keyless)
	_, err = k.Read(ctx, ns)
	require.ErrorContains(t, err, "fix it or delete it to let gitops-addon issue a CA")

	k, c := newKeeper(t, &now)
	_, err = k.Ensure(ctx, Request{Namespace: ns, PrincipalNames: []string{"p.example.com"}})
	require.NoError(t, err)
	broken := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pki.ResourceProxySecret}, broken))
	broken.Data[corev1.TLSCertKey] = []byte("not a certificate")
	require.NoError(t, c.Update(ctx, broken))
	st, err := k.Read(ctx, ns)
	require.NoError(t, err)
	assert.Equal(t, []string{pki.ResourceProxySecret}, st.Missing)
}
