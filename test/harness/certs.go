package harness

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-addon/gitops-addon/test/pki"
)

// authority is a certificate authority kept in memory and on disk (the control-plane
// processes read CertFile, and kube-controller-manager signs CSRs with KeyFile).
type authority struct {
	*pki.CA
	CertFile, KeyFile string
}

// keyPair is an issued certificate, as PEM and as files.
type keyPair struct {
	pki.KeyPair
	CertFile, KeyFile string
}

// newAuthority creates a self-signed CA and writes dir/name.crt and dir/name.key.
func newAuthority(dir, name string) (*authority, error) {
	ca, err := pki.NewCA(name)
	if err != nil {
		return nil, err
	}
	certFile, keyFile, err := ca.Write(dir, name)
	if err != nil {
		return nil, err
	}
	return &authority{CA: ca, CertFile: certFile, KeyFile: keyFile}, nil
}

// serving issues a TLS server certificate for 127.0.0.1 and localhost, plus extra DNS
// names, and writes it as dir/name.crt and dir/name.key.
func (a *authority) serving(dir, name string, dnsNames ...string) (*keyPair, error) {
	p, err := a.Serving(name, dnsNames...)
	if err != nil {
		return nil, err
	}
	return writeKeyPair(dir, name, p)
}

// client issues a client certificate for user in groups and writes it as dir/name.crt
// and dir/name.key.
func (a *authority) client(dir, name, user string, groups ...string) (*keyPair, error) {
	p, err := a.Client(user, groups...)
	if err != nil {
		return nil, err
	}
	return writeKeyPair(dir, name, p)
}

func writeKeyPair(dir, name string, p pki.KeyPair) (*keyPair, error) {
	certFile, keyFile, err := p.Write(dir, name)
	if err != nil {
		return nil, err
	}
	return &keyPair{KeyPair: p, CertFile: certFile, KeyFile: keyFile}, nil
}

// writeServiceAccountKey writes the key kube-apiserver signs service-account tokens
// with (and kube-controller-manager signs legacy token secrets with), and its public half.
func writeServiceAccountKey(dir string) (publicFile, privateFile string, err error) {
	publicPEM, privatePEM, err := pki.NewServiceAccountKey()
	if err != nil {
		return "", "", err
	}
	publicFile, privateFile = filepath.Join(dir, "sa.pub"), filepath.Join(dir, "sa.key")
	if err := os.WriteFile(publicFile, publicPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing the service-account public key: %w", err)
	}
	if err := os.WriteFile(privateFile, privatePEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing the service-account key: %w", err)
	}
	return publicFile, privateFile, nil
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
