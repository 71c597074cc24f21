// Package pki is Argo CD Agent's public key infrastructure as pure functions, with no
// Kubernetes client: the names of the Secrets argocd-agent's principal reads it from and
// the CA Secret's content (the CA set and its staged rotation, as a data map), the key
// pairs gitops-addon issues (the CA, the principal's and the resource proxy's serving
// certificates, the hub's client certificates, the JWT signing key), the argocd-agents'
// certificate requests signed, and when each certificate is due: issued once, issued
// again only when its names change or after 80 % of its lifetime.
package pki

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

// Lifetimes of what gitops-addon issues. The CA outlives every certificate it signs many
// times over: replacing it means every argocd-agent must trust a new one.
const (
	CALifetime      = 10 * 365 * 24 * time.Hour
	ServingLifetime = 365 * 24 * time.Hour
)

// renewAt is the share of a certificate's lifetime after which it is issued again.
const renewAt = 0.8

// Names of the Secrets in the Argo CD namespace, as argocd-agent's principal reads them.
const (
	CASecret            = "argocd-agent-ca"                 //nolint:gosec // G101: a Secret's name, not a credential
	PrincipalSecret     = "argocd-agent-principal-tls"      //nolint:gosec // G101: a Secret's name, not a credential
	ResourceProxySecret = "argocd-agent-resource-proxy-tls" //nolint:gosec // G101: a Secret's name, not a credential
	JWTSecret           = "argocd-agent-jwt"                //nolint:gosec // G101: a Secret's name, not a credential
	// JWTKey is the key of the JWT signing key in JWTSecret.
	JWTKey = "jwt.key"
)

// The keys of a kubernetes.io/tls Secret's data (corev1.TLSCertKey, corev1.TLSPrivateKeyKey).
const (
	certKey = "tls.crt"
	keyKey  = "tls.key"
)

// Pair is a certificate with its private key.
type Pair struct {
	cert *x509.Certificate
	key  crypto.Signer
	// certPEM and keyPEM are what the Secret holds.
	certPEM, keyPEM []byte
}

// Certificate is the pair's certificate.
func (p *Pair) Certificate() *x509.Certificate { return p.cert }

// CertPEM is the certificate as a kubernetes.io/tls Secret holds it (tls.crt).
func (p *Pair) CertPEM() []byte { return p.certPEM }

// KeyPEM is the private key as a kubernetes.io/tls Secret holds it (tls.key); nil for a
// pair read without its key.
func (p *Pair) KeyPEM() []byte { return p.keyPEM }

// CanSign tells whether the pair is a CA with its key.
func (p *Pair) CanSign() bool { return p.key != nil && p.cert.IsCA }

// RenewAt is when the certificate reaches 80 % of its lifetime and is issued again.
func (p *Pair) RenewAt() time.Time { return renewalTime(p.cert) }

// Names are the certificate's DNS names and IP addresses, sorted, IP addresses in their
// canonical form.
func (p *Pair) Names() []string {
	names := slices.Clone(p.cert.DNSNames)
	for _, ip := range p.cert.IPAddresses {
		names = append(names, ip.String())
	}
	return normalizedNames(names)
}

// newCA makes a self-signed CA valid for lifetime from now.
func newCA(commonName string, now time.Time, lifetime time.Duration) (*Pair, error) {
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
func newServing(ca *Pair, commonName string, names []string, now time.Time, lifetime time.Duration) (*Pair, error) {
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

// newClient makes a client certificate for commonName signed by ca.
func newClient(ca *Pair, commonName string, now time.Time, lifetime time.Duration) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of %s: %w", commonName, err)
	}
	return sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		NotBefore:   now.Add(-time.Minute),
		NotAfter:    now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, key, ca)
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
func sign(template *x509.Certificate, key crypto.Signer, ca *Pair) (*Pair, error) {
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
	return &Pair{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// ParsePair reads a certificate and its key from PEM; the key is optional (nil when
// keyPEM is empty).
func ParsePair(certPEM, keyPEM []byte) (*Pair, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("tls.crt holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing tls.crt: %w", err)
	}
	pair := &Pair{cert: cert, certPEM: certPEM, keyPEM: keyPEM}
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

// IssueServing makes a serving certificate for names (DNS names or IP addresses), signed
// by the signing CA, valid for ServingLifetime from now.
func (s *CASet) IssueServing(commonName string, names []string, now time.Time) (*Pair, error) {
	return newServing(s.signer, commonName, names, now, ServingLifetime)
}

// IssueClient makes a client certificate for commonName, signed by the signing CA, valid
// for ServingLifetime from now.
func (s *CASet) IssueClient(commonName string, now time.Time) (*Pair, error) {
	return newClient(s.signer, commonName, now, ServingLifetime)
}

// ClientCurrent tells whether a client certificate is still good: for commonName, signed
// by the signing CA, before renewAt of its lifetime.
func (s *CASet) ClientCurrent(pair *Pair, commonName string, now time.Time) bool {
	return pair.cert.Subject.CommonName == commonName && pair.cert.CheckSignatureFrom(s.signer.cert) == nil && now.Before(renewalTime(pair.cert))
}

// NeedsRenewal says why a serving certificate must be issued again: not signed by a CA
// of the bundle that outlives it, other names, or past renewAt of its lifetime; "" when
// it is fine.
func (s *CASet) NeedsRenewal(pair *Pair, names []string, now time.Time) string {
	if !s.trusts(pair.cert) {
		return "not signed by a CA of argocd-agent-ca that outlives it"
	}
	want := normalizedNames(names)
	if have := pair.Names(); !slices.Equal(have, want) {
		return fmt.Sprintf("its names %v are not %v", have, want)
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

// NewJWTKey is the RSA key the principal signs its argocd-agents' session tokens with.
func NewJWTKey() ([]byte, error) {
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
