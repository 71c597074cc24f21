package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"
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

// CASet is the CAs of an Argo CD namespace, as its CA Secret holds them.
//
// CA rotation, in stages so that no party meets a certificate from a CA it does not trust
// yet. tls.crt holds the signing CA first, then the others; tls.key is the signing CA's.
//  1. Past renewAt of the signing CA's lifetime a new CA joins the bundle, its key kept in
//     NextCAKey: the principal (after its restart, which the Event asks for) and the
//     argocd-agents (the same bundle is their ca.crt) trust it; nothing is signed by it yet.
//  2. CAHandover later it becomes the signing CA; the previous one stays in the bundle until
//     it expires, so the certificates it signed (OCM renews the argocd-agents' within a day;
//     the principal's is issued again when due, a year at most) keep verifying.
//  3. Once expired, the previous CA leaves the bundle.
//
// A user's CA Secret has no next CA and is never rotated (Advance is not called on it).
type CASet struct {
	signer *Pair
	// next joined the bundle and signs from next.cert.NotBefore + CAHandover on; nil when none.
	next *Pair
	// previous are older CAs, trusted until they expire.
	previous []*x509.Certificate
}

// NewCASet is a new CA alone, valid for CALifetime from now.
func NewCASet(now time.Time) (*CASet, error) {
	ca, err := newCA(caCommonName, now, CALifetime)
	if err != nil {
		return nil, err
	}
	return &CASet{signer: ca}, nil
}

// LoadCASet reads the data of a CA Secret gitops-addon wrote (or a user's, which has no
// next CA).
func LoadCASet(data map[string][]byte) (*CASet, error) {
	signer, err := ParsePair(data[certKey], data[keyKey])
	if err != nil {
		return nil, err
	}
	set := &CASet{signer: signer}
	var nextKey crypto.Signer
	if keyPEM := data[NextCAKey]; len(keyPEM) > 0 {
		if nextKey, err = parseKey(keyPEM); err != nil {
			return nil, fmt.Errorf("%s: %w", NextCAKey, err)
		}
	}
	for _, cert := range signer.bundled() {
		if nextKey != nil && set.next == nil && sameKey(cert, nextKey) {
			set.next = &Pair{cert: cert, key: nextKey, keyPEM: data[NextCAKey], certPEM: encodeCert(cert)}
			continue
		}
		set.previous = append(set.previous, cert)
	}
	set.signer.certPEM = set.bundle()
	return set, nil
}

// Advance moves the rotation on at now and says why something changed ("" when nothing did).
func (s *CASet) Advance(now time.Time) (string, error) {
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

// Bundle is tls.crt, the CAs every party trusts: the signing CA, the next one, the
// previous ones (certificates only, never a key).
func (s *CASet) Bundle() []byte { return s.signer.certPEM }

// bundle encodes tls.crt: the signing CA, the next one, the previous ones.
func (s *CASet) bundle() []byte {
	out := encodeCert(s.signer.cert)
	if s.next != nil {
		out = append(out, encodeCert(s.next.cert)...)
	}
	for _, cert := range s.previous {
		out = append(out, encodeCert(cert)...)
	}
	return out
}

// Data is the CA Secret's content.
func (s *CASet) Data() map[string][]byte {
	d := map[string][]byte{certKey: s.bundle(), keyKey: s.signer.keyPEM}
	if s.next != nil {
		d[NextCAKey] = s.next.keyPEM
	}
	return d
}

// CanSign tells whether the signing CA is a CA with its key.
func (s *CASet) CanSign() bool { return s.signer.CanSign() }

// NotAfter is when the signing CA expires.
func (s *CASet) NotAfter() time.Time { return s.signer.cert.NotAfter }

// PreviousNotAfter is when the CA before the last rotation, still trusted beside the
// signing one, expires; zero when there is none.
func (s *CASet) PreviousNotAfter() time.Time {
	if len(s.previous) == 0 {
		return time.Time{}
	}
	return s.previous[0].NotAfter
}

// NextSignsFrom is when the CA that joined the bundle starts signing; zero when no CA
// waits.
func (s *CASet) NextSignsFrom() time.Time {
	if s.next == nil {
		return time.Time{}
	}
	return handover(s.next)
}

// trusts tells whether cert was signed by a CA of the bundle that outlives it.
func (s *CASet) trusts(cert *x509.Certificate) bool {
	for _, ca := range s.cas() {
		if cert.CheckSignatureFrom(ca) == nil && !ca.NotAfter.Before(cert.NotAfter) {
			return true
		}
	}
	return false
}

func (s *CASet) cas() []*x509.Certificate {
	out := []*x509.Certificate{s.signer.cert}
	if s.next != nil {
		out = append(out, s.next.cert)
	}
	return append(out, s.previous...)
}

// DueAt is when the rotation next moves on.
func (s *CASet) DueAt() time.Time {
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
func caDue(ca *Pair) time.Time { return renewalTime(ca.cert) }

// handover is when the next CA starts signing.
func handover(next *Pair) time.Time { return next.cert.NotBefore.Add(CAHandover) }

// bundled are the certificates after the first in tls.crt.
func (p *Pair) bundled() []*x509.Certificate {
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
