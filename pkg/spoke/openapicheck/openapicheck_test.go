package openapicheck

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// fakeAPIServer serves /openapi/v2 (with ETag) and /openapi/v3 as a kube-apiserver does.
type fakeAPIServer struct {
	mu          sync.Mutex
	v2Status    int
	v2Paths     []string
	v3GVs       []string
	etag        string
	v2Fetches   int
	v2NotModded int
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/openapi/v2":
		f.v2Fetches++
		if f.v2Status != http.StatusOK {
			w.WriteHeader(f.v2Status) // empty body, like the apiserver's 503
			return
		}
		if r.Header.Get("If-None-Match") == f.etag {
			f.v2NotModded++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		paths := map[string]any{}
		for _, p := range f.v2Paths {
			paths[p] = map[string]any{}
		}
		w.Header().Set("ETag", f.etag)
		_ = json.NewEncoder(w).Encode(map[string]any{"swagger": "2.0", "paths": paths})
	case "/openapi/v3":
		paths := map[string]any{"api/v1": map[string]any{}}
		for _, gv := range f.v3GVs {
			paths["apis/"+gv] = map[string]any{"serverRelativeURL": "/openapi/v3/apis/" + gv}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"paths": paths})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAPIServer) set(fn func(*fakeAPIServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func newChecker(t *testing.T, f *fakeAPIServer) *Checker {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	return c
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		server      *fakeAPIServer
		served      []string
		wantStatus  int
		wantMissing []string
		wantHealthy bool
		wantText    string
	}{
		"healthy": {
			server: &fakeAPIServer{v2Status: 200, etag: `"a"`, v2Paths: []string{"/apis/argoproj.io/v1alpha1/applications"},
				v3GVs: []string{"argoproj.io/v1alpha1"}},
			served: []string{"argoproj.io/v1alpha1"}, wantStatus: 200, wantHealthy: true, wantText: "answers 200",
		},
		"503 with an empty body": {
			server: &fakeAPIServer{v2Status: 503}, served: []string{"argoproj.io/v1alpha1"},
			wantStatus: 503, wantText: "HTTP 503",
		},
		"frozen: a CRD in v3 but not in v2": {
			server: &fakeAPIServer{v2Status: 200, etag: `"a"`, v2Paths: []string{"/apis/argoproj.io/v1alpha1/applications"},
				v3GVs: []string{"argoproj.io/v1alpha1", "canary.example.com/v1"}},
			served: []string{"argoproj.io/v1alpha1", "canary.example.com/v1"}, wantStatus: 200,
			wantMissing: []string{"canary.example.com/v1"}, wantText: "frozen: canary.example.com/v1 is in /openapi/v3",
		},
		"a CRD not yet in v3 is not called missing": {
			server: &fakeAPIServer{v2Status: 200, etag: `"a"`, v3GVs: []string{}},
			served: []string{"canary.example.com/v1"}, wantStatus: 200, wantHealthy: true,
		},
		"a discovery path alone does not count as published": {
			server: &fakeAPIServer{v2Status: 200, etag: `"a"`, v2Paths: []string{"/apis/canary.example.com/"},
				v3GVs: []string{"canary.example.com/v1"}},
			served: []string{"canary.example.com/v1"}, wantStatus: 200, wantMissing: []string{"canary.example.com/v1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := newChecker(t, tc.server).Check(context.Background(), tc.served)
			require.NoError(t, err)
			assert.Equal(t, tc.wantStatus, res.StatusCode)
			assert.Equal(t, tc.wantMissing, res.MissingFromV2)
			assert.Equal(t, tc.wantHealthy, res.Healthy())
			assert.Contains(t, res.Describe(), tc.wantText)
		})
	}
}

func TestCheckRevalidatesWithETag(t *testing.T) {
	f := &fakeAPIServer{v2Status: 200, etag: `"1"`, v2Paths: []string{"/apis/a.example.com/v1/things"}, v3GVs: []string{"a.example.com/v1"}}
	c := newChecker(t, f)
	ctx := context.Background()
	for range 3 {
		res, err := c.Check(ctx, []string{"a.example.com/v1"})
		require.NoError(t, err)
		assert.True(t, res.Healthy())
	}
	assert.Equal(t, 3, f.v2Fetches)
	assert.Equal(t, 2, f.v2NotModded, "unchanged documents are revalidated, not downloaded")

	// A new CRD appears in v3; the old v2 document (cached via 304) does not have it.
	f.set(func(f *fakeAPIServer) { f.v3GVs = append(f.v3GVs, "b.example.com/v1") })
	res, err := c.Check(ctx, []string{"a.example.com/v1", "b.example.com/v1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b.example.com/v1"}, res.MissingFromV2)

	// The document changes: a new ETag, a full download.
	f.set(func(f *fakeAPIServer) { f.etag, f.v2Paths = `"2"`, append(f.v2Paths, "/apis/b.example.com/v1/things") })
	res, err = c.Check(ctx, []string{"a.example.com/v1", "b.example.com/v1"})
	require.NoError(t, err)
	assert.True(t, res.Healthy())

	// A 503 forgets the cached document, so the next 200 is read in full.
	f.set(func(f *fakeAPIServer) { f.v2Status = 503 })
	res, err = c.Check(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 503, res.StatusCode)
	assert.Empty(t, c.etag)
}

func TestCheckFailsWhenUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c, err := New(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	_, err = c.Check(context.Background(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GET /openapi/v2")
}
