package agenttrust

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// caCommonName names the CA gitops-addon issues.
const caCommonName = "gitops-addon argocd-agent CA"

// NextCAKey is the key, in the CA Secret, of the private key of the CA that joined the
// bundle and does not sign yet. argocd-agent reads only tls.crt and ca.crt of that Secret.
const NextCAKey = "next-ca.key"

// CAHandover is how long a new CA is trusted before it signs: the time to restart the
// principal (it loads argocd-agent-ca only when it starts) and for every argocd-agent to
// restart onto the bundle (it does on each daily client certificate renewal).
const CAHandover = 30 * 24 * time.Hour

// CA rotation, in stages so that no party meets a certificate from a CA it does not trust
// yet. tls.crt holds the signing CA first, then the others; tls.key is the signing CA's.
//  1. Past renewAt of the signing CA's lifetime a new CA joins the bundle, its key kept in
//     NextCAKey: the principal (after its restart, which the Event asks for) and the agents
//     (the same bundle is their ca.crt) trust it; nothing is signed by it yet.
//  2. CAHandover later it becomes the signing CA; the previous one stays in the bundle until
//     it expires, so the certificates it signed (OCM renews the agents' within a day; the
//     principal's is issued again when due, a year at most) keep verifying.
//  3. Once expired, the previous CA leaves the bundle.
type caSet struct {
	signer *keyPair
	// next joined the bundle and signs from next.cert.NotBefore + CAHandover on; nil when none.
	next *keyPair
	// previous are older CAs, trusted until they expire.
	previous []*x509.Certificate
}

// loadCASet reads a CA Secret gitops-addon wrote (or a user's, which has no next CA).
func loadCASet(secret *corev1.Secret) (*caSet, error) {
	signer, err := parsePair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	set := &caSet{signer: signer}
	var nextKey crypto.Signer
	if keyPEM := secret.Data[NextCAKey]; len(keyPEM) > 0 {
		if nextKey, err = parseKey(keyPEM); err != nil {
			return nil, fmt.Errorf("%s: %w", NextCAKey, err)
		}
	}
	for _, cert := range signer.bundled() {
		if nextKey != nil && set.next == nil && sameKey(cert, nextKey) {
			set.next = &keyPair{cert: cert, key: nextKey, keyPEM: secret.Data[NextCAKey], certPEM: encodeCert(cert)}
			continue
		}
		set.previous = append(set.previous, cert)
	}
	set.signer.certPEM = set.bundle()
	return set, nil
}

// advance moves the rotation on at now and says why something changed ("" when nothing did).
func (s *caSet) advance(now time.Time) (string, error) {
	var why string
	var promoted *x509.Certificate
	switch {
	case s.next == nil && now.After(caDue(s.signer)):
		next, err := newCA(caCommonName, now, CALifetime)
		if err != nil {
			return "", err
		}
		s.next = next
		why = fmt.Sprintf("a new CA joined the bundle, as the current one is past %.0f%% of its lifetime; it signs from %s on: "+
			"restart the principal before then so that it trusts it", renewAt*100, handover(next).UTC().Format(time.RFC3339))
	case s.next != nil && !now.Before(handover(s.next)):
		promoted = s.signer.cert
		s.previous = append([]*x509.Certificate{promoted}, s.previous...)
		s.signer, s.next = s.next, nil
	}
	valid := s.previous[:0]
	for _, cert := range s.previous {
		if now.Before(cert.NotAfter) {
			valid = append(valid, cert)
		}
	}
	switch {
	case promoted != nil && len(valid) > 0 && valid[0] == promoted:
		why = fmt.Sprintf("rotated: the new CA signs from now on; the previous one is trusted until it expires (%s)", promoted.NotAfter.UTC().Format(time.RFC3339))
	case promoted != nil:
		why = "rotated: the new CA signs from now on; the previous one had expired and left the bundle"
	case len(valid) < len(s.previous) && why == "":
		why = "an expired previous CA left the bundle"
	}
	s.previous = valid
	s.signer.certPEM = s.bundle()
	return why, nil
}

// bundle is tls.crt: the signing CA, the next one, the previous ones.
func (s *caSet) bundle() []byte {
	out := encodeCert(s.signer.cert)
	if s.next != nil {
		out = append(out, encodeCert(s.next.cert)...)
	}
	for _, cert := range s.previous {
		out = append(out, encodeCert(cert)...)
	}
	return out
}

// data is the CA Secret's content.
func (s *caSet) data() map[string][]byte {
	d := map[string][]byte{corev1.TLSCertKey: s.bundle(), corev1.TLSPrivateKeyKey: s.signer.keyPEM}
	if s.next != nil {
		d[NextCAKey] = s.next.keyPEM
	}
	return d
}

// trusts tells whether cert was signed by a CA of the bundle that outlives it.
func (s *caSet) trusts(cert *x509.Certificate) bool {
	for _, ca := range s.cas() {
		if cert.CheckSignatureFrom(ca) == nil && !ca.NotAfter.Before(cert.NotAfter) {
			return true
		}
	}
	return false
}

func (s *caSet) cas() []*x509.Certificate {
	out := []*x509.Certificate{s.signer.cert}
	if s.next != nil {
		out = append(out, s.next.cert)
	}
	return append(out, s.previous...)
}

// dueAt is when the rotation next moves on.
func (s *caSet) dueAt() time.Time {
	at := caDue(s.signer)
	if s.next != nil {
		at = handover(s.next)
	}
	for _, cert := range s.previous {
		at = earliest(at, cert.NotAfter)
	}
	return at
}

// caDue is when a CA is replaced.
func caDue(ca *keyPair) time.Time { return renewalTime(ca.cert) }

// handover is when the next CA starts signing.
func handover(next *keyPair) time.Time { return next.cert.NotBefore.Add(CAHandover) }

// bundled are the certificates after the first in tls.crt.
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

// sameKey tells whether cert certifies key.
func sameKey(cert *x509.Certificate, key crypto.Signer) bool {
	type equaler interface{ Equal(x crypto.PublicKey) bool }
	pub, ok := key.Public().(equaler)
	return ok && pub.Equal(cert.PublicKey)
}

func encodeCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
