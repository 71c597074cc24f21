package pki

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"
)

// SignClientRequest signs a certificate request with ca, a CA with its key (CanSign) that
// has not expired: a client certificate (client authentication only) for the request's
// subject and public key, valid for lifetime from now but never past the CA's own expiry.
// The request's own signature is checked first: it proves the requester holds the key.
func SignClientRequest(ca *Pair, req *x509.CertificateRequest, now time.Time, lifetime time.Duration) ([]byte, error) {
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
