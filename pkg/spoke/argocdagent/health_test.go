package argocdagent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
)

func TestProbeReadsArgoCDAgentsHealth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int // 0: nothing listens
		want   metav1.ConditionStatus
		reason string
	}{
		{"200: connected", http.StatusOK, metav1.ConditionTrue, contract.ReasonConnected},
		{"503: running, not connected", http.StatusServiceUnavailable, metav1.ConditionFalse, contract.ReasonNotConnected},
		{"nothing listens: not running", 0, metav1.ConditionFalse, contract.ReasonHealthEndpointUnreachable},
		{"another answer says nothing", http.StatusNotFound, metav1.ConditionUnknown, contract.ReasonHealthEndpointUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := unusedURL(t)
			if tc.status != 0 {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					assert.Equal(t, "/healthz", r.URL.Path)
					w.WriteHeader(tc.status)
				}))
				t.Cleanup(srv.Close)
				url = srv.URL + "/healthz"
			}
			p := &Prober{URL: url}
			first, second := p.Probe(context.Background()), p.Probe(context.Background())
			assert.Equal(t, contract.ConditionArgoCDAgentConnected, first.Type)
			assert.Equal(t, tc.want, first.Status, first.Message)
			assert.Equal(t, tc.reason, first.Reason, first.Message)
			assert.Equal(t, first, second, "the same answer makes the same condition, so a steady state writes nothing")
		})
	}
}

// TestProberReportsChangesOnly: a connection made and lost reaches the report, and
// probes with the same answer do not signal a change.
func TestProberReportsChangesOnly(t *testing.T) {
	status := make(chan int, 1)
	status <- http.StatusServiceUnavailable
	current := http.StatusServiceUnavailable
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		probes.Add(1)
		select {
		case current = <-status:
		default:
		}
		w.WriteHeader(current)
	}))
	t.Cleanup(srv.Close)
	report := addonstatus.NewReport()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = (&Prober{URL: srv.URL, Interval: 20 * time.Millisecond, Report: report}).Start(ctx) }()

	waitFor := func(reason string) {
		t.Helper()
		require.Eventually(t, func() bool {
			c, ok := report.Condition(contract.ConditionArgoCDAgentConnected)
			return ok && c.Reason == reason
		}, 5*time.Second, 10*time.Millisecond)
	}
	waitFor(contract.ReasonNotConnected)
	<-report.Changed()
	// The positive control: ten more probes answered, with the same answer.
	answered := probes.Load()
	require.Eventually(t, func() bool { return probes.Load() >= answered+10 }, 5*time.Second, 10*time.Millisecond, "ten more probes")
	select {
	case <-report.Changed():
		t.Fatal("probes with an unchanged answer signalled a change")
	default:
	}
	status <- http.StatusOK
	waitFor(contract.ReasonConnected)
}

// unusedURL is a loopback URL nothing listens on.
func unusedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/healthz"
	srv.Close()
	return url
}
