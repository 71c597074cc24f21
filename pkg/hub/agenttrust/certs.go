// Package agenttrust keeps the hub side of Argo CD Agent's mTLS trust in an Argo CD
// namespace: the CA (argocd-agent-ca, issued when missing, a user's used as is), the
// principal's and the resource proxy's serving certificates, and the JWT signing key.
// Certificates are issued once and issued again only when their names change or after
// 80 % of their lifetime, never on every reconcile.
package agenttrust

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// renewAt is the share of a certificate's lifetime after which it is issued again.
const renewAt = 0.8

// keyPair is a certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
	// certPEM and keyPEM are what the Secret holds.
	certPEM, keyPEM []byte
}

// newCA makes a self-signed CA valid for lifetime from now.
func newCA(commonName string, now time.Time, lifetime time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return sign(template, key, nil)
}

// newServing makes a serving certificate for names (DNS names or IP addresses), signed
// by ca, valid for lifetime from now.
func newServing(ca *keyPair, commonName string, names []string, now time.Time, lifetime time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of %s: %w", commonName, err)
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		NotBefore:   now.Add(-time.Minute),
		NotAfter:    now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, n)
		}
	}
	return sign(template, key, ca)
}

// randReader is the entropy of every key, serial and signature.
var randReader = rand.Reader

// serialNumber is a random 127-bit certificate serial number.
func serialNumber() (*big.Int, error) {
	serial, err := rand.Int(randReader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return serial, nil
}

// sign signs template with ca (self-signed when ca is nil) and encodes the pair.
func sign(template *x509.Certificate, key crypto.Signer, ca *keyPair) (*keyPair, error) {
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	parent, signer := template, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate of %s: %w", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the key of %s: %w", template.Subject.CommonName, err)
	}
	return &keyPair{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parsePair reads a certificate and its key from PEM; the key is optional (nil when
// keyPEM is empty).
func parsePair(certPEM, keyPEM []byte) (*keyPair, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("tls.crt holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing tls.crt: %w", err)
	}
	pair := &keyPair{cert: cert, certPEM: certPEM, keyPEM: keyPEM}
	if len(keyPEM) == 0 {
		return pair, nil
	}
	if pair.key, err = parseKey(keyPEM); err != nil {
		return nil, fmt.Errorf("tls.key: %w", err)
	}
	return pair, nil
}

// parseKey reads a private key from PEM (PKCS#8, EC or PKCS#1).
func parseKey(keyPEM []byte) (crypto.Signer, error) {
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("no PEM key")
	}
	var key any
	var err error
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing the key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T, which cannot sign", key)
	}
	return signer, nil
}

// needsRenewal says why a serving certificate must be issued again: not signed by a CA
// of the bundle that outlives it, other names, or past renewAt of its lifetime; "" when
// it is fine.
func needsRenewal(pair *keyPair, cas *caSet, names []string, now time.Time) string {
	if !cas.trusts(pair.cert) {
		return "not signed by a CA of argocd-agent-ca that outlives it"
	}
	var have []string
	have = append(have, pair.cert.DNSNames...)
	for _, ip := range pair.cert.IPAddresses {
		have = append(have, ip.String())
	}
	want := normalizedNames(names)
	if !slices.Equal(normalizedNames(have), want) {
		return fmt.Sprintf("its names %v are not %v", normalizedNames(have), want)
	}
	if now.After(renewalTime(pair.cert)) {
		return fmt.Sprintf("it is past %.0f%% of its lifetime (expires %s)", renewAt*100, pair.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// renewalTime is when a certificate reaches renewAt of its lifetime.
func renewalTime(cert *x509.Certificate) time.Time {
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(time.Duration(float64(lifetime) * renewAt))
}

func normalizedNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			n = ip.String()
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// newJWTKey is the RSA key the principal signs its agents' session tokens with.
func newJWTKey() ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating the JWT signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
