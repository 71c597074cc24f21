package doctor

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
)

func TestRunCannotCheck(t *testing.T) {
	cases := map[string]http.Handler{
		"unreachable apiserver": nil,
		"forbidden": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
		}),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			if h == nil {
				srv.Close()
			} else {
				t.Cleanup(srv.Close)
			}
			var out bytes.Buffer
			code := Run(context.Background(), &rest.Config{Host: srv.URL}, &out)
			assert.Equal(t, CannotCheck, code, out.String())
			assert.Contains(t, out.String(), "Route API:              Unknown")
			assert.Contains(t, out.String(), "could not check")
		})
	}
}
