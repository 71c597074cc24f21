package agenttrust

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"
)

// caCommonName names the CA gitops-addon issues.
const caCommonName = "gitops-addon argocd-agent CA"

// CA rotation. A new CA is issued past renewAt of the current one's lifetime, years before
// it expires. The Secret's tls.crt then holds the new CA's certificate first (the one that
// signs from now on, with tls.key) and the previous one after it until that expires. The
// principal reads every certificate in tls.crt, and the agents get the same bundle as
// argocd-agent-ca's ca.crt, so both sides trust either CA during the change: client
// certificates the previous CA signed keep working until OCM renews them (within a day),
// and the principal's certificate, signed again by the new CA at once, verifies on every
// agent that has the bundle. The principal reads its Secrets only when it starts, so the
// Event of the rotation asks for its restart.

// rotateCA returns the CA to use from now on and why it changed ("" when it did not):
// a new one when ca is due, or ca without bundled certificates that have expired.
func rotateCA(ca *keyPair, now time.Time) (*keyPair, string, error) {
	if now.After(caDue(ca)) {
		next, err := newCA(caCommonName, now, CALifetime)
		if err != nil {
			return nil, "", err
		}
		if now.Before(ca.cert.NotAfter) {
			next.certPEM = append(next.certPEM, firstPEM(ca.certPEM)...)
		}
		return next, fmt.Sprintf("rotated: the previous CA is past %.0f%% of its lifetime (expires %s) and is trusted beside the new one until then",
			renewAt*100, ca.cert.NotAfter.UTC().Format(time.RFC3339)), nil
	}
	previous := ca.bundled()
	kept := firstPEM(ca.certPEM)
	for _, cert := range previous {
		if now.Before(cert.NotAfter) {
			kept = append(kept, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
		}
	}
	if bytes.Equal(kept, ca.certPEM) {
		return ca, "", nil
	}
	pruned := *ca
	pruned.certPEM = kept
	return &pruned, "the previous CA expired and is no longer trusted", nil
}

// caDue is when the CA is rotated.
func caDue(ca *keyPair) time.Time { return renewalTime(ca.cert) }

// bundled are the certificates after the first in the CA's tls.crt: previous CAs.
func (p *keyPair) bundled() []*x509.Certificate {
	var out []*x509.Certificate
	rest := p.certPEM
	for first := true; ; first = false {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out
		}
		if first || block.Type != "CERTIFICATE" {
			continue
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, cert)
		}
	}
}

// firstPEM is the first PEM block of data, encoded.
func firstPEM(data []byte) []byte {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil
	}
	return pem.EncodeToMemory(block)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
