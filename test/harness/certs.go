package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// certLifetime outlives any test or demo; nothing here rotates certificates.
const certLifetime = 365 * 24 * time.Hour

// authority is a certificate authority kept in memory and on disk (the control-plane
// processes read CertFile, and kube-controller-manager signs CSRs with KeyFile).
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertPEM is the CA certificate, for caBundles and kubeconfigs.
	CertPEM           []byte
	CertFile, KeyFile string
}

// keyPair is an issued certificate, as PEM and as files.
type keyPair struct {
	CertPEM, KeyPEM   []byte
	CertFile, KeyFile string
}

// newAuthority creates a self-signed CA and writes dir/name.crt and dir/name.key.
func newAuthority(dir, name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of CA %s: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(certLifetime),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA %s: %w", name, err)
	}
	pair, err := writeKeyPair(dir, name, encodePEM("CERTIFICATE", der), key)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, CertPEM: pair.CertPEM, CertFile: pair.CertFile, KeyFile: pair.KeyFile}, nil
}

// serving issues a TLS server certificate for 127.0.0.1 and localhost, plus extra DNS
// names, and writes it as dir/name.crt and dir/name.key.
func (a *authority) serving(dir, name string, dnsNames ...string) (*keyPair, error) {
	tmpl := a.template(name, nil)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = append([]string{"localhost"}, dnsNames...)
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	return a.issue(dir, name, tmpl)
}

// client issues a client certificate: kube-apiserver takes the common name as the user
// name and the organizations as the groups.
func (a *authority) client(dir, name, user string, groups ...string) (*keyPair, error) {
	tmpl := a.template(user, groups)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return a.issue(dir, name, tmpl)
}

func (a *authority) template(commonName string, orgs []string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serialNumber(), Subject: pkix.Name{CommonName: commonName, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(certLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
}

func (a *authority) issue(dir, name string, tmpl *x509.Certificate) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of %s: %w", name, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("issuing certificate %s: %w", name, err)
	}
	return writeKeyPair(dir, name, encodePEM("CERTIFICATE", der), key)
}

func writeKeyPair(dir, name string, certPEM []byte, key *ecdsa.PrivateKey) (*keyPair, error) {
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	p := &keyPair{CertPEM: certPEM, KeyPEM: keyPEM,
		CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(p.CertFile, certPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing certificate: %w", err)
	}
	if err := os.WriteFile(p.KeyFile, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing key: %w", err)
	}
	return p, nil
}

// writeServiceAccountKey writes the key kube-apiserver signs service-account tokens
// with (and kube-controller-manager signs legacy token secrets with), and its public half.
func writeServiceAccountKey(dir string) (publicFile, privateFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("generating the service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("encoding the service-account public key: %w", err)
	}
	privPEM, err := encodeKey(key)
	if err != nil {
		return "", "", err
	}
	publicFile, privateFile = filepath.Join(dir, "sa.pub"), filepath.Join(dir, "sa.key")
	if err := os.WriteFile(publicFile, encodePEM("PUBLIC KEY", pubDER), 0o600); err != nil {
		return "", "", fmt.Errorf("writing the service-account public key: %w", err)
	}
	if err := os.WriteFile(privateFile, privPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing the service-account key: %w", err)
	}
	return publicFile, privateFile, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a private key: %w", err)
	}
	return encodePEM("EC PRIVATE KEY", der), nil
}

func encodePEM(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func serialNumber() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err))
	}
	return n
}

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded, so the file
// can be copied or turned into a Secret) for a client certificate.
func writeKubeconfig(file, server string, caPEM []byte, user *keyPair) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: user.CertPEM, ClientKeyData: user.KeyPEM}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	kc.CurrentContext = "default"
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", file, err)
	}
	return nil
}
