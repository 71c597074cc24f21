package argocd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
)

// AdminPassword is the e2e hub Argo CD's admin password (ensureConfig sets its hash).
const AdminPassword = "e2e-only-admin-password"

// Server is the hub's argocd-server.
type Server struct {
	Process *harness.Process
	// URL is where it serves its API and UI, plain HTTP on loopback.
	URL string
}

// StartServer runs the hub's argocd-server beside its other components, without TLS on a
// free loopback port, reading trees from the hub's redis as users run it. withUI is an Argo
// CD binary whose server embeds its web UI (ours is built without it: its index.html is
// served only from the binary); empty: ./bin's, the API only.
func StartServer(ctx context.Context, f *harness.Fleet, hub *Instance, withUI string) (*Server, error) {
	addr := harness.FreeAddress()
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"--insecure", "--address", host, "--port", port, "--metrics-port", freePort(),
		"--namespace", Namespace, "--redis", hub.RedisAddress, "--repo-server", hub.RepoServerAddress, "--repo-server-plaintext",
		"--dex-server", "http://127.0.0.1:1", "--logformat", "text"}
	binary := filepath.Join(f.BinDir(), "argocd")
	if withUI != "" {
		binary = withUI
	}
	p, err := componentOf(binary, f, hub.Cluster, "argocd-server", args, "KUBECONFIG="+hub.Cluster.Kubeconfig, "ARGOCD_FAKE_IN_CLUSTER=true")
	if err != nil {
		return nil, err
	}
	s := &Server{Process: p, URL: "http://" + addr}
	return s, waitListening(ctx, p, addr)
}

// Login is an admin session token, as the UI's login page gets one.
func (s *Server) Login(ctx context.Context) (string, error) {
	body, _ := json.Marshal(map[string]string{"username": "admin", "password": AdminPassword})
	var out struct{ Token string }
	if err := s.call(ctx, http.MethodPost, "/api/v1/session", "", bytes.NewReader(body), &out); err != nil {
		return "", fmt.Errorf("logging in to argocd-server: %w", err)
	}
	return out.Token, nil
}

// Get calls a GET endpoint of the API, as the UI does, into out.
func (s *Server) Get(ctx context.Context, token, path string, query url.Values, out any) error {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return s.call(ctx, http.MethodGet, path, token, nil, out)
}

func (s *Server) call(ctx context.Context, method, path, token string, body io.Reader, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &APIError{Status: resp.StatusCode, Path: path, Body: string(raw)}
	}
	return json.Unmarshal(raw, out)
}

// APIError is an answer of argocd-server other than 200.
type APIError struct {
	Status     int
	Path, Body string
}

func (e *APIError) Error() string { return fmt.Sprintf("%s: HTTP %d: %s", e.Path, e.Status, e.Body) }

// ShowTreesOnTheHub points each spoke's gitops-addon agent at its Argo CD's redis (a
// loopback port here, the operator's Service on a cluster; no password here) and the
// manager at the hub's (the chart's pullModel.resourceTree), restarting them as a rollout
// of those values would, and runs the hub's argocd-server (withUI: see StartServer).
func (a *Fleet) ShowTreesOnTheHub(ctx context.Context, f *harness.Fleet, p *install.Product, withUI string) (*Server, error) {
	// The manager first: with the hub's redis it renders the agents without
	// --disable-resource-tree, and the agents restart with their new arguments.
	if err := p.RestartManagerWith(ctx, map[string]string{"--argocd-redis-address": a.Hub.RedisAddress}); err != nil {
		return nil, err
	}
	for name, spoke := range a.Spokes {
		p.SetAgentFlags(name, map[string]string{"--argocd-redis-address": spoke.RedisAddress, "--argocd-redis-password-secret": ""})
		if err := p.RestartAgent(ctx, f.Spokes[name]); err != nil {
			return nil, err
		}
	}
	return StartServer(ctx, f, a.Hub, withUI)
}
