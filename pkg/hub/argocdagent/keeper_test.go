package argocdagent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
	testpki "github.com/gitops-addon/gitops-addon/test/pki"
)

const ns = "openshift-gitops"

func newKeeper(t *testing.T, now *time.Time, objs ...client.Object) (*Keeper, client.Client) {
	c := fixtures.FakeHub(t, objs...).Build()
	return &Keeper{Client: c, APIReader: c, Now: func() time.Time { return *now }}, c
}

// certOf is the certificate of the trust Secret name in the Argo CD namespace argoNS.
func certOf(t *testing.T, c client.Client, argoNS, name string) *x509.Certificate {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: argoNS, Name: name}, s))
	pair, err := pki.ParsePair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	return pair.Certificate()
}

// bundled counts the certificates of a PEM bundle after the first.
func bundled(t *testing.T, bundle []byte) int {
	t.Helper()
	n := 0
	for block, rest := pem.Decode(bundle); block != nil; block, rest = pem.Decode(rest) {
		n++
	}
	require.Positive(t, n)
	return n - 1
}

func TestEnsureIssuesOnceAndRenewsOnlyWhenDue(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	k, c := newKeeper(t, &now)
	req := Request{Namespace: ns, PrincipalNames: []string{"principal.example.com", "10.0.0.1"}}

	st, err := k.Ensure(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{pki.CASecret: "missing", pki.PrincipalSecret: "missing", pki.ResourceProxySecret: "missing", pki.JWTSecret: "missing"}, st.Issued)
	assert.False(t, st.UserCA)
	ca := certOf(t, c, ns, pki.CASecret)
	principal := certOf(t, c, ns, pki.PrincipalSecret)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = principal.Verify(x509.VerifyOptions{Roots: roots, DNSName: "principal.example.com", CurrentTime: now})
	require.NoError(t, err, "the principal's certificate verifies against argocd-agent-ca")
	assert.Equal(t, "10.0.0.1", principal.IPAddresses[0].String())
	_, err = certOf(t, c, ns, pki.ResourceProxySecret).Verify(x509.VerifyOptions{Roots: roots, DNSName: "argocd-agent-resource-proxy." + ns + ".svc", CurrentTime: now})
	require.NoError(t, err)
	assert.Equal(t, now.Add(pki.ServingLifetime).Truncate(time.Second), st.PrincipalCertificate.NotAfter.Truncate(time.Second))
	assert.Equal(t, principal.NotBefore.Add(time.Duration(float64(principal.NotAfter.Sub(principal.NotBefore))*0.8)), st.RenewAt)

	t.Run("nothing is written again while nothing is due", func(t *testing.T) {
		now = now.Add(30 * 24 * time.Hour)
		st, err := k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.Empty(t, st.Issued)
		assert.Equal(t, principal.SerialNumber, certOf(t, c, ns, pki.PrincipalSecret).SerialNumber)
	})
	t.Run("a new server address: only the principal's certificate is issued again", func(t *testing.T) {
		req.PrincipalNames = []string{"principal.example.org"}
		st, err := k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, []string{pki.PrincipalSecret}, keys(st.Issued))
		assert.Contains(t, st.Issued[pki.PrincipalSecret], "names")
		assert.Equal(t, []string{"principal.example.org"}, certOf(t, c, ns, pki.PrincipalSecret).DNSNames)
	})
	t.Run("past 80 % of their lifetime both serving certificates are renewed, the CA is not", func(t *testing.T) {
		now = now.Add(300 * 24 * time.Hour)
		st, err := k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{pki.PrincipalSecret, pki.ResourceProxySecret}, keys(st.Issued))
		assert.Contains(t, st.Issued[pki.ResourceProxySecret], "80%")
		assert.Equal(t, ca.SerialNumber, certOf(t, c, ns, pki.CASecret).SerialNumber)
	})
}

func TestAUsersCAIsUsedAsIs(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	userCA, err := testpki.NewCA("corporate CA")
	require.NoError(t, err)
	userCACert, err := pki.ParsePair(userCA.CertPEM, nil)
	require.NoError(t, err)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.CASecret},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: userCA.CertPEM, corev1.TLSPrivateKeyKey: userCA.KeyPEM},
	}
	k, c := newKeeper(t, &now, secret)
	st, err := k.Ensure(ctx, Request{Namespace: ns, PrincipalNames: []string{"principal.example.com"}})
	require.NoError(t, err)
	assert.True(t, st.UserCA)
	assert.NotContains(t, st.Issued, pki.CASecret)
	require.NoError(t, certOf(t, c, ns, pki.PrincipalSecret).CheckSignatureFrom(userCACert.Certificate()), "signed by the user's CA")
	got := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(secret), got))
	assert.Empty(t, got.Labels, "the user's CA Secret is not touched")

	t.Run("without its key it cannot sign: a clear error", func(t *testing.T) {
		noKey := secret.DeepCopy()
		noKey.ResourceVersion = ""
		delete(noKey.Data, corev1.TLSPrivateKeyKey)
		k, _ := newKeeper(t, &now, noKey)
		_, err := k.Ensure(ctx, Request{Namespace: ns})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "must hold a CA certificate and its key")
	})
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestClientConfigIsKeptUntilDue: the resource proxy client certificate of an argocd-agent
// is signed by the CA for the argocd-agent's name and kept until 80 % of its lifetime.
func TestClientConfigIsKeptUntilDue(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	k, _ := newKeeper(t, &now)
	st, err := k.Ensure(context.Background(), Request{Namespace: ns})
	require.NoError(t, err)

	config, issued, err := clientConfigFor(st, "cluster1", nil, now)
	require.NoError(t, err)
	assert.True(t, issued)
	var parsed ClientConfig
	require.NoError(t, json.Unmarshal(config, &parsed))
	pair, err := pki.ParsePair(parsed.TLSClientConfig.CertData, parsed.TLSClientConfig.KeyData)
	require.NoError(t, err)
	assert.Equal(t, "cluster1", pair.Certificate().Subject.CommonName)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(parsed.TLSClientConfig.CAData))
	_, err = pair.Certificate().Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now})
	require.NoError(t, err)

	again, issued, err := clientConfigFor(st, "cluster1", config, now.Add(200*24*time.Hour))
	require.NoError(t, err)
	assert.False(t, issued, "kept while not due")
	assert.Equal(t, config, again)
	_, issued, err = clientConfigFor(st, "cluster2", config, now)
	require.NoError(t, err)
	assert.True(t, issued, "another argocd-agent's certificate is not reused")
	_, issued, err = clientConfigFor(st, "cluster1", config, now.Add(300*24*time.Hour))
	require.NoError(t, err)
	assert.True(t, issued, "renewed past 80 % of its lifetime")
}

// TestOurCAIsRotatedInStages: past 80 % of its lifetime gitops-addon's CA is joined by a
// new one, which every party gets in its bundle but which signs nothing for pki.CAHandover (the
// time to restart the principal onto the bundle); then it signs, the previous one trusted
// until it expires, when it leaves the bundle. Nothing is issued again only because of the
// rotation, and nothing is written when nothing is due.
func TestOurCAIsRotatedInStages(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	k, c := newKeeper(t, &now)
	req := Request{Namespace: ns, PrincipalNames: []string{"principal.example.com"}}
	_, err := k.Ensure(ctx, req)
	require.NoError(t, err)
	oldCA := certOf(t, c, ns, pki.CASecret)

	caSecret := func() *corev1.Secret {
		s := &corev1.Secret{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pki.CASecret}, s))
		return s
	}
	// argoCDAgentCertificate is what the manager signs for an argocd-agent's OCM request now.
	argoCDAgentCertificate := func(t *testing.T) *x509.Certificate {
		t.Helper()
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "cluster1"}}, key)
		require.NoError(t, err)
		csr, err := x509.ParseCertificateRequest(der)
		require.NoError(t, err)
		ca, err := pki.ParsePair(caSecret().Data[corev1.TLSCertKey], caSecret().Data[corev1.TLSPrivateKeyKey])
		require.NoError(t, err)
		signed, err := pki.SignClientRequest(ca, csr, now, 24*time.Hour)
		require.NoError(t, err)
		pair, err := pki.ParsePair(signed, nil)
		require.NoError(t, err)
		return pair.Certificate()
	}
	verifies := func(t *testing.T, cert *x509.Certificate, bundle []byte) error {
		t.Helper()
		roots := x509.NewCertPool()
		require.True(t, roots.AppendCertsFromPEM(bundle))
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, CurrentTime: now})
		return err
	}

	var before Trust
	var principal *x509.Certificate
	t.Run("before 80 % of its lifetime the CA stays alone", func(t *testing.T) {
		now = oldCA.NotBefore.Add(time.Duration(float64(pki.CALifetime) * 0.79))
		before, err = k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.NotContains(t, before.Issued, pki.CASecret)
		assert.True(t, before.NextCASignsFrom.IsZero(), "no CA waits")
		principal = certOf(t, c, ns, pki.PrincipalSecret)
	})
	var joined Trust
	t.Run("past 80 %: a new CA joins the bundle and signs nothing yet", func(t *testing.T) {
		now = oldCA.NotBefore.Add(time.Duration(float64(pki.CALifetime) * 0.81)) // 73 days later
		joined, err = k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.Contains(t, joined.Issued[pki.CASecret], "joined the bundle")
		assert.Contains(t, joined.Issued[pki.CASecret], "restart the principal")
		assert.NotContains(t, joined.Issued, pki.PrincipalSecret, "the principal's certificate is not issued again for the rotation")
		require.False(t, joined.NextCASignsFrom.IsZero(), "a CA waits")
		assert.Equal(t, now.Add(-time.Minute).Add(pki.CAHandover).Truncate(time.Second), joined.NextCASignsFrom.Truncate(time.Second))
		assert.Equal(t, oldCA.SerialNumber, certOf(t, c, ns, pki.CASecret).SerialNumber, "the old CA still signs")
		assert.NotEmpty(t, caSecret().Data[pki.NextCAKey])
		assert.Equal(t, 1, bundled(t, joined.CACertificatePEM()), "the bundle argocd-agents and the principal trust holds both")
		clientCert := argoCDAgentCertificate(t)
		assert.NoError(t, clientCert.CheckSignatureFrom(oldCA), "argocd-agents' certificates are still signed by the old CA")
		assert.NoError(t, verifies(t, clientCert, joined.CACertificatePEM()))
		assert.NoError(t, verifies(t, principal, joined.CACertificatePEM()))
	})
	t.Run("then nothing is written while nothing is due", func(t *testing.T) {
		now = now.Add(time.Hour)
		st, err := k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.Empty(t, st.Issued)
	})
	t.Run("CAHandover later the new CA signs; the old one stays trusted", func(t *testing.T) {
		now = joined.NextCASignsFrom.Add(time.Hour)
		st, err := k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.Contains(t, st.Issued[pki.CASecret], "rotated")
		assert.NotContains(t, st.Issued, pki.PrincipalSecret, "signed by the old CA, which outlives it: kept until due")
		newCA := certOf(t, c, ns, pki.CASecret)
		assert.NotEqual(t, oldCA.SerialNumber, newCA.SerialNumber, "tls.crt starts with the new CA")
		assert.Empty(t, caSecret().Data[pki.NextCAKey])
		require.NotNil(t, st.PreviousCA)
		assert.Equal(t, oldCA.NotAfter, st.PreviousCA.NotAfter)
		assert.NoError(t, argoCDAgentCertificate(t).CheckSignatureFrom(newCA), "argocd-agents' new certificates are signed by the new CA")
		assert.NoError(t, verifies(t, principal, st.CACertificatePEM()), "the principal's certificate still verifies")
		config, issued, err := clientConfigFor(st, "cluster1", nil, now)
		require.NoError(t, err)
		assert.True(t, issued)
		var parsed ClientConfig
		require.NoError(t, json.Unmarshal(config, &parsed))
		hubClient, err := pki.ParsePair(parsed.TLSClientConfig.CertData, nil)
		require.NoError(t, err)
		assert.NoError(t, hubClient.Certificate().CheckSignatureFrom(newCA))
	})
	t.Run("once the previous CA expired it leaves the bundle", func(t *testing.T) {
		now = oldCA.NotAfter.Add(time.Hour)
		st, err := k.Ensure(ctx, req)
		require.NoError(t, err)
		assert.Contains(t, st.Issued[pki.CASecret], "expired")
		assert.Nil(t, st.PreviousCA)
		assert.Zero(t, bundled(t, st.CACertificatePEM()))
	})
}
