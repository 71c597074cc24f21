package pki

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block, "a PEM block")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

func TestIssuedCertificatesVerifyAgainstTheirCA(t *testing.T) {
	ca, err := NewCA("test-ca")
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CertPEM))
	other, err := NewCA("other-ca")
	require.NoError(t, err)
	otherRoots := x509.NewCertPool()
	require.True(t, otherRoots.AppendCertsFromPEM(other.CertPEM))

	serving, err := ca.Serving("apiserver", "kubernetes.default.svc")
	require.NoError(t, err)
	client, err := ca.Client("alice", "system:masters", "team")
	require.NoError(t, err)

	tests := []struct {
		name    string
		pair    KeyPair
		usage   x509.ExtKeyUsage
		dnsName string
	}{
		{name: "serving for an extra DNS name", pair: serving, usage: x509.ExtKeyUsageServerAuth, dnsName: "kubernetes.default.svc"},
		{name: "serving for localhost", pair: serving, usage: x509.ExtKeyUsageServerAuth, dnsName: "localhost"},
		{name: "serving for loopback", pair: serving, usage: x509.ExtKeyUsageServerAuth, dnsName: "127.0.0.1"},
		{name: "client", pair: client, usage: x509.ExtKeyUsageClientAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert := parse(t, tt.pair.CertPEM)
			opts := x509.VerifyOptions{Roots: roots, DNSName: tt.dnsName, KeyUsages: []x509.ExtKeyUsage{tt.usage}}
			_, err := cert.Verify(opts)
			require.NoError(t, err)
			opts.Roots = otherRoots
			_, err = cert.Verify(opts)
			assert.Error(t, err, "another CA does not vouch for it")
			_, err = tt.pair.TLS()
			assert.NoError(t, err, "certificate and key belong together")
		})
	}
	t.Run("a serving certificate is not valid for other names", func(t *testing.T) {
		_, err := parse(t, serving.CertPEM).Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"})
		assert.Error(t, err)
	})
	t.Run("the client's common name and organizations are kube-apiserver's user and groups", func(t *testing.T) {
		cert := parse(t, client.CertPEM)
		assert.Equal(t, "alice", cert.Subject.CommonName)
		assert.ElementsMatch(t, []string{"system:masters", "team"}, cert.Subject.Organization)
	})
}

func TestWriteIsOwnerOnly(t *testing.T) {
	ca, err := NewCA("test-ca")
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile, err := ca.Write(dir, "ca")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "ca.crt"), certFile)
	assert.Equal(t, filepath.Join(dir, "ca.key"), keyFile)
	for _, f := range []string{certFile, keyFile} {
		info, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}
	key, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	assert.Equal(t, ca.KeyPEM, key)
}

func TestServiceAccountKeyHalvesMatch(t *testing.T) {
	publicPEM, privatePEM, err := NewServiceAccountKey()
	require.NoError(t, err)
	pubBlock, _ := pem.Decode(publicPEM)
	require.NotNil(t, pubBlock)
	assert.Equal(t, "PUBLIC KEY", pubBlock.Type)
	pub, err := x509.ParsePKIXPublicKey(pubBlock.Bytes)
	require.NoError(t, err)
	privBlock, _ := pem.Decode(privatePEM)
	require.NotNil(t, privBlock)
	priv, err := x509.ParseECPrivateKey(privBlock.Bytes)
	require.NoError(t, err)
	assert.True(t, priv.PublicKey.Equal(pub))
}
