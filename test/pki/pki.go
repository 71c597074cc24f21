// Package pki issues the throwaway certificates the test control planes and stand-in
// servers need: certificate authorities, serving certificates for loopback, and client
// certificates whose common name and organizations kube-apiserver reads as user and groups.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Lifetime outlives any test or demo; nothing here rotates certificates.
const Lifetime = 365 * 24 * time.Hour

// CA is a certificate authority kept in memory.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// KeyPair is the CA's own certificate and key: CertPEM goes into caBundles and
	// kubeconfigs, the files into --client-ca-file or --cluster-signing-key-file.
	KeyPair
}

// KeyPair is a PEM certificate and private key.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// NewCA creates a self-signed certificate authority.
func NewCA(commonName string) (*CA, error) {
	key, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("generating the key of CA %s: %w", commonName, err)
	}
	tmpl := template(commonName, nil)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA %s: %w", commonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, KeyPair: KeyPair{CertPEM: encodePEM("CERTIFICATE", der), KeyPEM: keyPEM}}, nil
}

// Serving issues a TLS server certificate for 127.0.0.1 and localhost plus names: each
// an IP address or a DNS name.
func (ca *CA) Serving(commonName string, names ...string) (KeyPair, error) {
	tmpl := template(commonName, nil)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = []string{"localhost"}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, name := range names {
		if ip := net.ParseIP(name); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, name)
		}
	}
	return ca.issue(tmpl)
}

// Client issues a client certificate: kube-apiserver takes the common name as the user
// name and the organizations as the groups.
func (ca *CA) Client(user string, groups ...string) (KeyPair, error) {
	tmpl := template(user, groups)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(tmpl)
}

func (ca *CA) issue(tmpl *x509.Certificate) (KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating the key of %s: %w", tmpl.Subject.CommonName, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("issuing the certificate of %s: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: encodePEM("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// TLS is the pair as a crypto/tls certificate, for a Go server.
func (p KeyPair) TLS() (tls.Certificate, error) {
	return tls.X509KeyPair(p.CertPEM, p.KeyPEM)
}

// Write writes the pair as dir/name.crt and dir/name.key, readable by the owner only,
// and returns the two paths.
func (p KeyPair) Write(dir, name string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, p.CertPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing certificate %s: %w", name, err)
	}
	if err := os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing key %s: %w", name, err)
	}
	return certFile, keyFile, nil
}

// newKey generates a P-256 private key.
func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// NewServiceAccountKey generates the key pair kube-apiserver signs service-account tokens
// with: the public half as a PEM PUBLIC KEY, the private half as PEM.
func NewServiceAccountKey() (publicPEM, privatePEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, fmt.Errorf("generating the service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the service-account public key: %w", err)
	}
	privatePEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodePEM("PUBLIC KEY", pubDER), privatePEM, nil
}

// encodeKey encodes an EC private key as PEM.
func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a private key: %w", err)
	}
	return encodePEM("EC PRIVATE KEY", der), nil
}

// encodePEM wraps DER bytes in a PEM block of the given type.
func encodePEM(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func template(commonName string, orgs []string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serialNumber(), Subject: pkix.Name{CommonName: commonName, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(Lifetime),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
}

// serialNumber is random, so that certificates of different runs never share one.
func serialNumber() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err))
	}
	return n
}
