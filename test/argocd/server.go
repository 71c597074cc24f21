package argocd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
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

// ServerOptions change how the hub's argocd-server runs.
type ServerOptions struct {
	// UI is an Argo CD binary whose server embeds its web UI (ours is built without it:
	// its index.html is served only from the binary); empty: ./bin's, the API only.
	UI string
	// Redis is where it reads trees and caches; empty: the hub's redis. In Argo CD Agent
	// mode, the principal's redis proxy.
	Redis string
	// ApplicationNamespaces are the namespaces beside its own whose Applications it
	// serves (Argo CD Agent mode: one per agent).
	ApplicationNamespaces []string
	// HTTPSProxy is the HTTPS_PROXY it runs with (a harness.ServiceProxy, for the Service
	// names of cluster Secrets).
	HTTPSProxy string
	// Name tells a second argocd-server on the hub apart (its process and files); empty:
	// argocd-server.
	Name string
}

// StartServer runs the hub's argocd-server beside its other components, without TLS on a
// free loopback port, reading trees from the hub's redis as users run it (o says otherwise).
func StartServer(ctx context.Context, f *harness.Fleet, hub *Instance, o ServerOptions) (*Server, error) {
	addr := harness.FreeAddress()
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"--insecure", "--address", host, "--port", port, "--metrics-port", freePort(),
		"--namespace", Namespace, "--redis", cmp.Or(o.Redis, hub.RedisAddress), "--repo-server", hub.RepoServerAddress, "--repo-server-plaintext",
		"--dex-server", "http://127.0.0.1:1", "--logformat", "text"}
	if len(o.ApplicationNamespaces) > 0 {
		args = append(args, "--application-namespaces", strings.Join(o.ApplicationNamespaces, ","))
	}
	env := []string{"KUBECONFIG=" + hub.Cluster.Kubeconfig, "ARGOCD_FAKE_IN_CLUSTER=true"}
	if o.HTTPSProxy != "" {
		env = append(env, "HTTPS_PROXY="+o.HTTPSProxy)
	}
	p, err := namedComponentOf(cmp.Or(o.UI, filepath.Join(f.BinDir(), "argocd")), f, hub.Cluster, "argocd-server", cmp.Or(o.Name, "argocd-server"), args, env...)
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
	raw, err := s.call(ctx, http.MethodPost, "/api/v1/session", "", bytes.NewReader(body))
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil {
		return "", fmt.Errorf("logging in to argocd-server: %w", err)
	}
	return out.Token, nil
}

// Get calls a GET endpoint of the API, as the UI does, into out.
func (s *Server) Get(ctx context.Context, token, path string, query url.Values, out any) error {
	raw, err := s.call(ctx, http.MethodGet, withQuery(path, query), token, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// GetRaw is Get's answer as it came: the logs endpoint answers with a stream of JSON
// documents.
func (s *Server) GetRaw(ctx context.Context, token, path string, query url.Values) ([]byte, error) {
	return s.call(ctx, http.MethodGet, withQuery(path, query), token, nil)
}

// Delete calls a DELETE endpoint of the API, as the UI's delete does.
func (s *Server) Delete(ctx context.Context, token, path string, query url.Values) error {
	_, err := s.call(ctx, http.MethodDelete, withQuery(path, query), token, nil)
	return err
}

func withQuery(path string, query url.Values) string {
	if len(query) > 0 {
		return path + "?" + query.Encode()
	}
	return path
}

func (s *Server) call(ctx context.Context, method, path, token string, body io.Reader) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &APIError{Status: resp.StatusCode, Path: path, Body: string(raw)}
	}
	return raw, nil
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
	return StartServer(ctx, f, a.Hub, ServerOptions{UI: withUI})
}
