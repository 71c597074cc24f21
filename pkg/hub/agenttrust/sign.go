package agenttrust

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ReadCA reads the argocd-agent-ca Secret of an Argo CD namespace (ours from the cache,
// a user's uncached); nil when there is none.
func (k *Keeper) ReadCA(ctx context.Context, namespace string) (*corev1.Secret, error) {
	return k.get(ctx, namespace, CASecret)
}

// SignClientRequest signs a certificate request with the CA of caSecret: a client
// certificate (client authentication only) for the request's subject and public key,
// valid for lifetime from now but never past the CA's own expiry. The request's own
// signature is checked first: it proves the requester holds the key.
func SignClientRequest(caSecret *corev1.Secret, req *x509.CertificateRequest, now time.Time, lifetime time.Duration) ([]byte, error) {
	ca, err := parsePair(caSecret.Data[corev1.TLSCertKey], caSecret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", caSecret.Namespace, caSecret.Name, err)
	}
	if ca.key == nil || !ca.cert.IsCA {
		return nil, fmt.Errorf("secret %s/%s must hold a CA certificate and its key (tls.crt, tls.key) to sign agent certificates", caSecret.Namespace, caSecret.Name)
	}
	if !now.Before(ca.cert.NotAfter) {
		return nil, fmt.Errorf("the CA of Secret %s/%s expired on %s", caSecret.Namespace, caSecret.Name, ca.cert.NotAfter.Format(time.RFC3339))
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the certificate request's signature: %w", err)
	}
	notAfter := now.Add(lifetime)
	if ca.cert.NotAfter.Before(notAfter) {
		notAfter = ca.cert.NotAfter
	}
	template := &x509.Certificate{
		Subject:     req.Subject,
		NotBefore:   now.Add(-time.Minute),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	der, err := x509.CreateCertificate(randReader, template, ca.cert, req.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate of %s: %w", req.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
