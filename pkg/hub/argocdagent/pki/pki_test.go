package pki

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServingRenewalIsDecidedByTrustNamesAndAge: a serving certificate is kept while a
// CA of the set signed it, it names what is asked (in any order, IP addresses in any
// form) and it is before 80 % of its lifetime; otherwise the reason says which.
func TestServingRenewalIsDecidedByTrustNamesAndAge(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	cas, err := NewCASet(now)
	require.NoError(t, err)
	names := []string{"principal.example.com", "10.0.0.1"}
	pair, err := cas.IssueServing("argocd-agent-principal", names, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1", "principal.example.com"}, pair.Names())

	assert.Empty(t, cas.NeedsRenewal(pair, []string{"principal.example.com", "::ffff:10.0.0.1"}, now.Add(24*time.Hour)))
	assert.Contains(t, cas.NeedsRenewal(pair, []string{"principal.example.org"}, now), "its names")
	assert.Contains(t, cas.NeedsRenewal(pair, names, now.Add(300*24*time.Hour)), "80%")
	other, err := NewCASet(now)
	require.NoError(t, err)
	assert.Contains(t, other.NeedsRenewal(pair, names, now), "not signed by a CA of argocd-agent-ca")
}

// TestCASecretDataRoundTrips: the CA set written as a Secret's data and read back is the
// same set, the CA waiting to sign included; the bundle holds certificates only.
func TestCASecretDataRoundTrips(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	cas, err := NewCASet(now)
	require.NoError(t, err)
	why, err := cas.Advance(now.Add(time.Duration(float64(CALifetime) * 0.81)))
	require.NoError(t, err)
	require.Contains(t, why, "joined the bundle")

	read, err := LoadCASet(cas.Data())
	require.NoError(t, err)
	assert.True(t, read.CanSign())
	assert.Equal(t, cas.Bundle(), read.Bundle())
	assert.Equal(t, cas.NextSignsFrom(), read.NextSignsFrom())
	assert.Equal(t, cas.NotAfter(), read.NotAfter())
	assert.NotContains(t, string(read.Bundle()), "PRIVATE KEY")

	_, err = LoadCASet(map[string][]byte{certKey: cas.Bundle(), keyKey: cas.signer.keyPEM, NextCAKey: []byte("not a key")})
	require.ErrorContains(t, err, NextCAKey)
}

// TestClientCertificateIsKeptUntilDue: a hub client certificate is current for its own
// name, signed by the signing CA, before 80 % of its lifetime.
func TestClientCertificateIsKeptUntilDue(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	cas, err := NewCASet(now)
	require.NoError(t, err)
	pair, err := cas.IssueClient("c1", now)
	require.NoError(t, err)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, pair.Certificate().ExtKeyUsage)
	assert.True(t, cas.ClientCurrent(pair, "c1", now.Add(200*24*time.Hour)))
	assert.False(t, cas.ClientCurrent(pair, "c2", now), "another argocd-agent's name")
	assert.False(t, cas.ClientCurrent(pair, "c1", now.Add(300*24*time.Hour)), "past 80 % of its lifetime")
	other, err := NewCASet(now)
	require.NoError(t, err)
	assert.False(t, other.ClientCurrent(pair, "c1", now), "signed by another CA")
}
