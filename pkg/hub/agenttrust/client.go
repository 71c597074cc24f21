package agenttrust

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"time"
)

// ClientConfig is the config of an Argo CD cluster Secret in agent format: the hub's Argo
// CD reaches the cluster through the principal's resource proxy with a client certificate
// for the agent's name, signed by argocd-agent-ca.
type ClientConfig struct {
	TLSClientConfig TLSClientConfig `json:"tlsClientConfig"`
}

// TLSClientConfig is Argo CD's cluster TLS configuration; []byte fields are base64 in JSON,
// as Argo CD reads them.
type TLSClientConfig struct {
	Insecure bool   `json:"insecure"`
	CertData []byte `json:"certData,omitempty"`
	KeyData  []byte `json:"keyData,omitempty"`
	CAData   []byte `json:"caData,omitempty"`
}

// ResourceProxyURL is the server of an agent cluster's Argo CD cluster Secret: the
// principal's resource proxy Service (service, port) in namespace.
func ResourceProxyURL(namespace, service, port, agent string) string {
	return fmt.Sprintf("https://%s.%s.svc:%s?agentName=%s", service, namespace, port, agent)
}

// ClientConfigFor returns the config JSON for agent: the one in current when its
// certificate is still good (signed by the CA, for agent, before renewAt of its life),
// else one with a new certificate; issued tells which.
func (st State) ClientConfigFor(agent string, current []byte, now time.Time) (config []byte, issued bool, err error) {
	if st.ca == nil {
		return nil, false, fmt.Errorf("the Argo CD Agent CA is not loaded")
	}
	var existing ClientConfig
	if len(current) > 0 && json.Unmarshal(current, &existing) == nil {
		if pair, err := parsePair(existing.TLSClientConfig.CertData, existing.TLSClientConfig.KeyData); err == nil &&
			pair.cert.Subject.CommonName == agent && pair.cert.CheckSignatureFrom(st.ca.cert) == nil &&
			now.Before(renewalTime(pair.cert)) && bytes.Equal(existing.TLSClientConfig.CAData, st.ca.certPEM) {
			return current, false, nil
		}
	}
	pair, err := newClient(st.ca, agent, now, ServingLifetime)
	if err != nil {
		return nil, false, err
	}
	config, err = json.Marshal(ClientConfig{TLSClientConfig: TLSClientConfig{
		CertData: pair.certPEM, KeyData: pair.keyPEM, CAData: st.ca.certPEM,
	}})
	return config, true, err
}

// newClient makes a client certificate for commonName signed by ca.
func newClient(ca *keyPair, commonName string, now time.Time, lifetime time.Duration) (*keyPair, error) {
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
