// Package liveresources lets the hub's Argo CD read pulled Applications' live resources
// (manifests, events, pod logs) on the spokes in the basic pull model, through OCM's own
// addons: managed-serviceaccount issues, per cluster, the token of a spoke ServiceAccount
// that the agent chart binds to the read-only ClusterRole gitops-addon:live-resources,
// and cluster-proxy's user server carries the hub's requests to the spoke's apiserver.
// This package holds what those addons name, and the Argo CD cluster Secret's server and
// config made of them; the GitOpsCluster controller writes them.
package liveresources

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// What managed-serviceaccount (v0.6 to v0.9) names.
var (
	// ManagedServiceAccountGVK is the kind a ManagedServiceAccount is created as, in the
	// cluster's namespace on the hub.
	ManagedServiceAccountGVK = schema.GroupVersionKind{Group: "authentication.open-cluster-management.io", Version: "v1beta1", Kind: "ManagedServiceAccount"}
)

// What cluster-proxy (v0.4 to v0.10) names.
var (
	// ProxyConfigurationGVK is cluster-proxy's ManagedProxyConfiguration: it says which hub
	// namespace its proxy server, its user server and their CA are in.
	ProxyConfigurationGVK = schema.GroupVersionKind{Group: "proxy.open-cluster-management.io", Version: "v1alpha1", Kind: "ManagedProxyConfiguration"}
)

const (
	// ServiceAccountName names the ManagedServiceAccount on the hub, its token Secret in
	// the cluster's namespace, and the ServiceAccount managed-serviceaccount's agent makes
	// on the spoke.
	ServiceAccountName = "gitops-addon-live-resources"
	// TokenKey and the MSA's CA key are the keys of the token Secret.
	TokenKey = "token"
	// ProxyConfigurationName is the ManagedProxyConfiguration cluster-proxy's chart creates.
	ProxyConfigurationName = "cluster-proxy"
	// ProxyCASecretName holds, in the proxy's namespace, the certificate (ca.crt) of the
	// CA that signed the user server's serving certificate; never its key.
	ProxyCASecretName = "proxy-server-ca"
	// ProxyCAKey is its key.
	ProxyCAKey = "ca.crt"
	// userServerService and userServerPort: where cluster-proxy's user server listens in
	// the hub (the address its own ClusterProfile controller writes).
	userServerService = "cluster-proxy-addon-user"
	userServerPort    = 9092
	// TokenValidity is how long an issued token is valid; managed-serviceaccount renews
	// it before it expires, and the controller writes the new one into the cluster Secret.
	TokenValidity = 7 * 24 * time.Hour
)

// DesiredManagedServiceAccount is the ManagedServiceAccount gitops-addon creates in a
// cluster's namespace on the hub; its creator adds its owner's labels.
func DesiredManagedServiceAccount(cluster string) *unstructured.Unstructured {
	msa := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"rotation": map[string]any{"enabled": true, "validity": TokenValidity.String()}},
	}}
	msa.SetGroupVersionKind(ManagedServiceAccountGVK)
	msa.SetNamespace(cluster)
	msa.SetName(ServiceAccountName)
	return msa
}

// Proxy is where the hub's Argo CD reaches cluster-proxy's user server.
type Proxy struct {
	// Namespace is the proxy's namespace on the hub (the ManagedProxyConfiguration's
	// spec.proxyServer.namespace).
	Namespace string
	// CAData is the PEM of the CA that signed the user server's certificate.
	CAData []byte
	// Address, when set, is host:port the hub's Argo CD reaches the user server at in
	// place of its Service (an Argo CD outside the hub cluster, through a port-forward);
	// the certificate is still checked for the Service's name.
	Address string
}

// ServiceHost is the user server's Service name in the cluster's DNS, which its serving
// certificate is for.
func (p Proxy) ServiceHost() string {
	return userServerService + "." + p.Namespace + ".svc"
}

// Server is the URL of one cluster's apiserver through the user server: the server of
// its Argo CD cluster Secret.
func (p Proxy) Server(cluster string) string {
	address := p.Address
	if address == "" {
		address = net.JoinHostPort(p.ServiceHost(), strconv.Itoa(userServerPort))
	}
	return "https://" + address + "/" + cluster
}

// clusterConfig is the part of Argo CD's cluster config (the cluster Secret's config key)
// this package writes.
type clusterConfig struct {
	BearerToken     string          `json:"bearerToken"`
	TLSClientConfig tlsClientConfig `json:"tlsClientConfig"`
}

type tlsClientConfig struct {
	Insecure   bool   `json:"insecure"`
	ServerName string `json:"serverName,omitempty"`
	CAData     string `json:"caData"`
}

// ClusterConfig is the Argo CD cluster config that reads a cluster as token's
// ServiceAccount through the proxy, checking the user server's certificate.
func (p Proxy) ClusterConfig(token []byte) ([]byte, error) {
	cfg := clusterConfig{
		BearerToken:     string(token),
		TLSClientConfig: tlsClientConfig{CAData: base64.StdEncoding.EncodeToString(p.CAData)},
	}
	if p.Address != "" {
		cfg.TLSClientConfig.ServerName = p.ServiceHost()
	}
	return json.Marshal(cfg) //nolint:gosec // G117: the token is this config's purpose: Argo CD reads it from the cluster Secret
}

// ReaderOf is the spoke ServiceAccount a managed-serviceaccount token authenticates as,
// read from its "sub" claim (system:serviceaccount:<namespace>:<name>): the ServiceAccount
// is in managed-serviceaccount's agent namespace on the spoke, which the hub does not
// otherwise know. The token's signature is not checked: it only names whom the spoke
// binds the read-only role to, and the spoke's apiserver checks the token itself.
func ReaderOf(token []byte) (contract.ServiceAccountRef, error) {
	parts := strings.Split(string(token), ".")
	if len(parts) != 3 {
		return contract.ServiceAccountRef{}, fmt.Errorf("the token is not a JWT (%d parts)", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return contract.ServiceAccountRef{}, fmt.Errorf("the token's claims are not base64url: %w", err)
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return contract.ServiceAccountRef{}, fmt.Errorf("the token's claims are not JSON: %w", err)
	}
	rest, ok := strings.CutPrefix(claims.Subject, "system:serviceaccount:")
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name != ServiceAccountName {
		return contract.ServiceAccountRef{}, fmt.Errorf("the token is not one of ServiceAccount %s (its subject is %q)", ServiceAccountName, claims.Subject)
	}
	return contract.ServiceAccountRef{Namespace: ns, Name: name}, nil
}
