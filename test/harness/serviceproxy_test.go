package harness

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Service's name reaches its process through the proxy; any other name is refused.
func TestServiceProxyTakesServiceNamesToLoopback(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "resource proxy at "+r.Host)
	}))
	defer backend.Close()
	p, err := StartServiceProxy(map[string]string{"argocd-agent-resource-proxy.argocd.svc:9090": strings.TrimPrefix(backend.URL, "https://")})
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	proxy, err := url.Parse(p.URL)
	require.NoError(t, err)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // httptest's certificate

	resp, err := c.Get("https://argocd-agent-resource-proxy.argocd.svc:9090/api")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "resource proxy at argocd-agent-resource-proxy.argocd.svc:9090", string(body))

	_, err = c.Get("https://example.com/")
	require.Error(t, err, "a name that is not the fleet's is refused")
	assert.Contains(t, err.Error(), "Forbidden")
}
