package liveresources

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Source reads what a cluster's live resources need: cluster-proxy's configuration and
// CA, and each cluster's token. The two kinds of Secrets come from caches of their own,
// each of the Secrets of one name in every namespace (the manager's role grants those
// names only), so that a token issued or rotated wakes the GitOpsClusters at once.
type Source struct {
	// Tokens reads the Secrets named ServiceAccountName (managed-serviceaccount's token
	// Secrets, in the clusters' namespaces).
	Tokens client.Reader
	// ProxyCA reads the Secrets named ProxyCASecretName.
	ProxyCA client.Reader
	// Caches are the caches behind Tokens and ProxyCA, which the manager runs and the
	// controller watches.
	Caches []cache.Cache
	// Reader reads the ManagedProxyConfiguration (uncached: one small read per reconcile
	// of a GitOpsCluster with live resources on, and its kind may not be served).
	Reader client.Reader
	// Address, when set, is where the hub's Argo CD reaches cluster-proxy's user server
	// (Proxy.Address).
	Address string
}

// NewSource makes the Source's caches; they run once added to the manager.
func NewSource(cfg *rest.Config, scheme *runtime.Scheme, reader client.Reader, address string) (*Source, error) {
	tokens, err := namedSecrets(cfg, scheme, ServiceAccountName)
	if err != nil {
		return nil, err
	}
	proxyCA, err := namedSecrets(cfg, scheme, ProxyCASecretName)
	if err != nil {
		return nil, err
	}
	return &Source{Tokens: tokens, ProxyCA: proxyCA, Caches: []cache.Cache{tokens, proxyCA}, Reader: reader, Address: address}, nil
}

// namedSecrets is a cache of the Secrets of one name, in every namespace, holding only
// their data (no managed fields).
func namedSecrets(cfg *rest.Config, scheme *runtime.Scheme, name string) (cache.Cache, error) {
	return cache.New(cfg, cache.Options{
		Scheme:                      scheme,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ByObject:                    map[client.Object]cache.ByObject{&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", name)}},
		ReaderFailOnMissingInformer: false,
	})
}

// ErrNotInstalled says that an addon of OCM live resources need is not on the hub; its
// message names which and how to fix it.
type ErrNotInstalled struct {
	// Addon is cluster-proxy or managed-serviceaccount.
	Addon  string
	Detail string
}

func (e *ErrNotInstalled) Error() string { return e.Detail }

// Proxy reads cluster-proxy's namespace from its ManagedProxyConfiguration and the CA of
// its user server; an *ErrNotInstalled when cluster-proxy is not on the hub.
func (s *Source) Proxy(ctx context.Context) (Proxy, error) {
	mpc := &unstructured.Unstructured{}
	mpc.SetGroupVersionKind(ProxyConfigurationGVK)
	err := s.Reader.Get(ctx, client.ObjectKey{Name: ProxyConfigurationName}, mpc)
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return Proxy{}, &ErrNotInstalled{Addon: "cluster-proxy", Detail: fmt.Sprintf(
			"OCM's cluster-proxy is not installed on the hub: there is no ManagedProxyConfiguration %s (%s)",
			ProxyConfigurationName, ProxyConfigurationGVK.GroupVersion())}
	case err != nil:
		return Proxy{}, fmt.Errorf("reading ManagedProxyConfiguration %s: %w", ProxyConfigurationName, err)
	}
	ns, _, _ := unstructured.NestedString(mpc.Object, "spec", "proxyServer", "namespace")
	if ns == "" {
		return Proxy{}, &ErrNotInstalled{Addon: "cluster-proxy", Detail: fmt.Sprintf(
			"ManagedProxyConfiguration %s names no namespace (spec.proxyServer.namespace)", ProxyConfigurationName)}
	}
	ca := &corev1.Secret{}
	err = s.ProxyCA.Get(ctx, client.ObjectKey{Namespace: ns, Name: ProxyCASecretName}, ca)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && len(ca.Data[ProxyCAKey]) == 0):
		return Proxy{}, &ErrNotInstalled{Addon: "cluster-proxy", Detail: fmt.Sprintf(
			"cluster-proxy's CA is not there yet: Secret %s/%s has no %s", ns, ProxyCASecretName, ProxyCAKey)}
	case err != nil:
		return Proxy{}, fmt.Errorf("reading Secret %s/%s: %w", ns, ProxyCASecretName, err)
	}
	return Proxy{Namespace: ns, CAData: ca.Data[ProxyCAKey], Address: s.Address}, nil
}

// ErrForeignToken marks a token Secret whose token is not the ServiceAccount's: reported,
// not retried.
var ErrForeignToken = errors.New("not a token of ServiceAccount " + ServiceAccountName)

// Token is one cluster's token and the spoke ServiceAccount it authenticates as.
type Token struct {
	Token  []byte
	Reader contract.ServiceAccountRef
}

// TokenOf reads a cluster's token; ok is false while managed-serviceaccount has not
// reported one. A token that does not name ServiceAccountName is an error.
func (s *Source) TokenOf(ctx context.Context, cluster string) (Token, bool, error) {
	secret := &corev1.Secret{}
	err := s.Tokens.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ServiceAccountName}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return Token{}, false, nil
	case err != nil:
		return Token{}, false, fmt.Errorf("reading Secret %s/%s: %w", cluster, ServiceAccountName, err)
	}
	token := secret.Data[TokenKey]
	if len(token) == 0 {
		return Token{}, false, nil
	}
	reader, err := ReaderOf(token)
	if err != nil {
		return Token{}, false, fmt.Errorf("the token Secret %s/%s: %w (%w)", cluster, ServiceAccountName, err, ErrForeignToken)
	}
	return Token{Token: token, Reader: reader}, true, nil
}
