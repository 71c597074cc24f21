package liveresources

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func TestTheClusterSecretReadsThroughTheUserServer(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		name           string
		proxy          Proxy
		wantServer     string
		wantServerName string
	}{
		{name: "at its Service", proxy: Proxy{Namespace: "open-cluster-management-addon", CAData: ca},
			wantServer: "https://cluster-proxy-addon-user.open-cluster-management-addon.svc:9092/spoke-1"},
		{name: "through an address, checked for the Service's name", proxy: Proxy{Namespace: "ocm", CAData: ca, Address: "127.0.0.1:41234"},
			wantServer: "https://127.0.0.1:41234/spoke-1", wantServerName: "cluster-proxy-addon-user.ocm.svc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantServer, tc.proxy.Server("spoke-1"))
			raw, err := tc.proxy.ClusterConfig([]byte("the-token"))
			require.NoError(t, err)
			var cfg map[string]any
			require.NoError(t, json.Unmarshal(raw, &cfg))
			assert.Equal(t, "the-token", cfg["bearerToken"])
			tls := cfg["tlsClientConfig"].(map[string]any)
			assert.Equal(t, false, tls["insecure"], "the user server's certificate is checked")
			assert.Equal(t, base64.StdEncoding.EncodeToString(ca), tls["caData"])
			if tc.wantServerName == "" {
				assert.NotContains(t, tls, "serverName")
			} else {
				assert.Equal(t, tc.wantServerName, tls["serverName"])
			}
			assert.Len(t, cfg, 2, "nothing else: no client certificate, no exec plugin")
		})
	}
}

func TestTheReaderIsTheTokensServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		token   []byte
		want    contract.ServiceAccountRef
		wantErr string
	}{
		{name: "managed-serviceaccount's agent namespace", token: fixtures.ServiceAccountToken(t, "system:serviceaccount:open-cluster-management-agent-addon:gitops-addon-live-resources"),
			want: contract.ServiceAccountRef{Namespace: "open-cluster-management-agent-addon", Name: ServiceAccountName}},
		{name: "another ServiceAccount", token: fixtures.ServiceAccountToken(t, "system:serviceaccount:kube-system:admin"), wantErr: "its subject is \"system:serviceaccount:kube-system:admin\""},
		{name: "a user", token: fixtures.ServiceAccountToken(t, "alice"), wantErr: "its subject is \"alice\""},
		{name: "no namespace", token: fixtures.ServiceAccountToken(t, "system:serviceaccount::gitops-addon-live-resources"), wantErr: "is not one of"},
		{name: "not a JWT", token: []byte("opaque"), wantErr: "not a JWT"},
		{name: "claims not base64url", token: []byte("a.%%%.c"), wantErr: "not base64url"},
		{name: "claims not JSON", token: []byte("a." + base64.RawURLEncoding.EncodeToString([]byte("nope")) + ".c"), wantErr: "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReaderOf(tc.token)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.True(t, got.IsZero())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTheManagedServiceAccountRotatesItsToken(t *testing.T) {
	msa := DesiredManagedServiceAccount("spoke-1")
	assert.Equal(t, ManagedServiceAccountGVK, msa.GroupVersionKind())
	assert.Equal(t, "spoke-1", msa.GetNamespace())
	assert.Equal(t, ServiceAccountName, msa.GetName())
	validity, _, _ := unstructured.NestedString(msa.Object, "spec", "rotation", "validity")
	assert.Equal(t, "168h0m0s", validity)
}

// fakeHub is a fake client that serves the kinds live resources read, unless left out.
func fakeHub(t *testing.T, served bool, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	if served {
		mapper.Add(ProxyConfigurationGVK, meta.RESTScopeRoot)
		mapper.Add(ManagedServiceAccountGVK, meta.RESTScopeNamespace)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).Build()
}

func proxyConfiguration(namespace string) *unstructured.Unstructured {
	mpc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"proxyServer": map[string]any{"namespace": namespace}}}}
	mpc.SetGroupVersionKind(ProxyConfigurationGVK)
	mpc.SetName(ProxyConfigurationName)
	return mpc
}

func secret(namespace, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}
}

func TestTheProxyIsReadFromClusterProxysConfiguration(t *testing.T) {
	ca := secret("ocm-proxy", ProxyCASecretName, map[string][]byte{ProxyCAKey: []byte("pem")})
	for _, tc := range []struct {
		name     string
		served   bool
		objs     []client.Object
		want     Proxy
		notThere string
	}{
		{name: "installed", served: true, objs: []client.Object{proxyConfiguration("ocm-proxy"), ca},
			want: Proxy{Namespace: "ocm-proxy", CAData: []byte("pem"), Address: "127.0.0.1:1"}},
		{name: "its API not served", notThere: "cluster-proxy is not installed"},
		{name: "no configuration", served: true, objs: []client.Object{ca}, notThere: "cluster-proxy is not installed"},
		{name: "no namespace", served: true, objs: []client.Object{proxyConfiguration(""), ca}, notThere: "names no namespace"},
		{name: "no CA yet", served: true, objs: []client.Object{proxyConfiguration("ocm-proxy")}, notThere: "has no ca.crt"},
		{name: "an empty CA", served: true, objs: []client.Object{proxyConfiguration("ocm-proxy"), secret("ocm-proxy", ProxyCASecretName, nil)},
			notThere: "has no ca.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeHub(t, tc.served, tc.objs...)
			src := &Source{Tokens: c, ProxyCA: c, Reader: c, Address: "127.0.0.1:1"}
			got, err := src.Proxy(context.Background())
			if tc.notThere != "" {
				var missing *ErrNotInstalled
				require.ErrorAs(t, err, &missing)
				assert.Equal(t, "cluster-proxy", missing.Addon)
				assert.Contains(t, missing.Error(), tc.notThere)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestATokenIsReadOncePresent(t *testing.T) {
	good := fixtures.ServiceAccountToken(t, "system:serviceaccount:agent-ns:"+ServiceAccountName)
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		wantOK  bool
		wantErr string
	}{
		{name: "not issued yet"},
		{name: "issued", objs: []client.Object{secret("spoke-1", ServiceAccountName, map[string][]byte{TokenKey: good, "ca.crt": []byte("x")})}, wantOK: true},
		{name: "no token in it yet", objs: []client.Object{secret("spoke-1", ServiceAccountName, map[string][]byte{"ca.crt": []byte("x")})}},
		{name: "another ServiceAccount's", objs: []client.Object{secret("spoke-1", ServiceAccountName,
			map[string][]byte{TokenKey: fixtures.ServiceAccountToken(t, "system:serviceaccount:kube-system:default")})}, wantErr: "the token Secret spoke-1/gitops-addon-live-resources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeHub(t, true, tc.objs...)
			src := &Source{Tokens: c, ProxyCA: c, Reader: c}
			got, ok, err := src.TokenOf(context.Background(), "spoke-1")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantOK, ok)
			if ok {
				assert.Equal(t, good, got.Token)
				assert.Equal(t, contract.ServiceAccountRef{Namespace: "agent-ns", Name: ServiceAccountName}, got.Reader)
			}
		})
	}
}
