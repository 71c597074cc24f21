// Package openapicheck tells whether a kube-apiserver's merged /openapi/v2 document is
// healthy: served (a duplicate API surface makes it answer 503 with an empty body after a
// restart) and current (on a running apiserver the same duplicate freezes it at its last
// good state, so CRDs created afterwards never appear in it while /openapi/v3 has them).
package openapicheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Result is one check of /openapi/v2.
type Result struct {
	// StatusCode is the HTTP status of GET /openapi/v2 (200 after a 304 revalidation).
	StatusCode int
	// MissingFromV2 lists served CRD group/versions present in /openapi/v3 and absent from
	// /openapi/v2: the v2 document is frozen.
	MissingFromV2 []string
}

// Healthy is true when /openapi/v2 answers 200 and misses no group/version.
func (r Result) Healthy() bool { return r.StatusCode == http.StatusOK && len(r.MissingFromV2) == 0 }

// Describe says what the result means, for conditions and doctor.
func (r Result) Describe() string {
	switch {
	case r.StatusCode != http.StatusOK:
		return fmt.Sprintf("GET /openapi/v2 answers HTTP %d: clients that load the OpenAPI schema (kubectl apply, Argo CD) fail.", r.StatusCode)
	case len(r.MissingFromV2) > 0:
		return fmt.Sprintf("/openapi/v2 is frozen: %s %s in /openapi/v3 but missing from /openapi/v2.",
			strings.Join(r.MissingFromV2, ", "), pluralIs(len(r.MissingFromV2)))
	default:
		return "GET /openapi/v2 answers 200 and lists every served CRD group/version."
	}
}

func pluralIs(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// Checker fetches /openapi/v2 conditionally on its ETag, so a check is cheap while the
// document does not change.
type Checker struct {
	client *http.Client
	host   string

	mu      sync.Mutex
	etag    string
	v2Paths map[string]bool
}

// New builds a Checker for the apiserver of cfg.
func New(cfg *rest.Config) (*Checker, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client for %s: %w", cfg.Host, err)
	}
	return &Checker{client: httpClient, host: strings.TrimSuffix(cfg.Host, "/")}, nil
}

// Check fetches /openapi/v2 and, when it answers 200, compares its paths with the served
// CRD group/versions ("group/version") that /openapi/v3 lists.
func (c *Checker) Check(ctx context.Context, servedCRDGroupVersions []string) (Result, error) {
	status, paths, err := c.fetchV2(ctx)
	if err != nil {
		return Result{}, err
	}
	if status != http.StatusOK {
		return Result{StatusCode: status}, nil
	}
	inV3, err := c.fetchV3GroupVersions(ctx)
	if err != nil {
		return Result{}, err
	}
	var missing []string
	for _, gv := range servedCRDGroupVersions {
		if inV3[gv] && !hasGroupVersionPath(paths, gv) {
			missing = append(missing, gv)
		}
	}
	sort.Strings(missing)
	return Result{StatusCode: http.StatusOK, MissingFromV2: missing}, nil
}

// fetchV2 returns the status and the path set of /openapi/v2, reusing the cached paths on
// 304 Not Modified.
func (c *Checker) fetchV2(ctx context.Context) (int, map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host+"/openapi/v2", nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	c.mu.Lock()
	if c.etag != "" && c.v2Paths != nil {
		req.Header.Set("If-None-Match", c.etag)
	}
	c.mu.Unlock()
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET /openapi/v2: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return http.StatusOK, c.v2Paths, nil
	case http.StatusOK:
		var doc struct {
			Paths map[string]json.RawMessage `json:"paths"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			return 0, nil, fmt.Errorf("decoding /openapi/v2: %w", err)
		}
		c.v2Paths = make(map[string]bool, len(doc.Paths))
		for p := range doc.Paths {
			c.v2Paths[p] = true
		}
		c.etag = resp.Header.Get("ETag")
		return http.StatusOK, c.v2Paths, nil
	default:
		_, _ = io.Copy(io.Discard, resp.Body)
		c.etag, c.v2Paths = "", nil
		return resp.StatusCode, nil, nil
	}
}

// fetchV3GroupVersions reads the /openapi/v3 discovery document: its keys are
// "apis/<group>/<version>" (and "api/v1").
func (c *Checker) fetchV3GroupVersions(ctx context.Context) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host+"/openapi/v3", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /openapi/v3: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /openapi/v3 answered HTTP %d", resp.StatusCode)
	}
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding /openapi/v3: %w", err)
	}
	out := map[string]bool{}
	for p := range doc.Paths {
		if gv, ok := strings.CutPrefix(p, "apis/"); ok {
			out[gv] = true
		}
	}
	return out, nil
}

func hasGroupVersionPath(paths map[string]bool, gv string) bool {
	prefix := "/apis/" + gv + "/"
	for p := range paths {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
