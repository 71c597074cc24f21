package argocdagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
)

// DefaultHealthInterval is how often argocd-agent's health endpoint is asked.
const DefaultHealthInterval = 30 * time.Second

// HealthURL is the health endpoint of the argocd-agent the GitOps operator deploys for
// the ArgoCD CR argoCD in namespace: its "<name>-agent-agent-healthz" Service, port 8002.
func HealthURL(argoCD, namespace string) string {
	return fmt.Sprintf("http://%s-agent-agent-healthz.%s.svc:8002/healthz", argoCD, namespace)
}

// Prober asks argocd-agent's health endpoint every Interval and sets
// contract.ConditionArgoCDAgentConnected on Report.
type Prober struct {
	// URL is argocd-agent's /healthz.
	URL      string
	Interval time.Duration
	Report   *addonstatus.Report
	// Client makes the requests; nil uses one with a 5 s timeout.
	Client *http.Client
}

// Start probes at once, then every Interval, until ctx is done.
func (p *Prober) Start(ctx context.Context) error {
	ctrl.Log.WithName("argocd-agent-health").Info("probing argocd-agent", "url", p.URL, "interval", p.interval())
	ticker := time.NewTicker(p.interval())
	defer ticker.Stop()
	for {
		p.Report.Set(p.Probe(ctx))
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// NeedLeaderElection: only the leading agent replica reports.
func (p *Prober) NeedLeaderElection() bool { return true }

// Probe asks once and says what the answer means. The message holds nothing that changes
// between two probes with the same answer, so a steady state writes nothing.
func (p *Prober) Probe(ctx context.Context) metav1.Condition {
	c := metav1.Condition{Type: contract.ConditionArgoCDAgentConnected}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		c.Status, c.Reason = metav1.ConditionUnknown, contract.ReasonHealthEndpointUnreachable
		c.Message = fmt.Sprintf("Cannot ask argocd-agent at %s: %v.", p.URL, err)
		return c
	}
	resp, err := p.client().Do(req)
	if err != nil {
		c.Status, c.Reason = metav1.ConditionFalse, contract.ReasonHealthEndpointUnreachable
		c.Message = fmt.Sprintf("argocd-agent's health endpoint %s does not answer (%s): argocd-agent is not running or not ready. "+
			"Check its Deployment and logs in the Argo CD namespace.", p.URL, errorKind(err))
		return c
	}
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, contract.ReasonConnected, "argocd-agent reports it is connected to the principal."
	case http.StatusServiceUnavailable:
		c.Status, c.Reason = metav1.ConditionFalse, contract.ReasonNotConnected
		c.Message = "argocd-agent runs but is not connected to the principal. Check that the principal runs on the hub, that its address " +
			"(the GitOpsCluster's spec.gitopsAddon.argoCDAgent.serverAddress/serverPort, or the discovered one) is reachable from this cluster, " +
			"that the principal's certificate names that address, and argocd-agent's log for the TLS or authentication error."
	default:
		c.Status, c.Reason = metav1.ConditionUnknown, contract.ReasonHealthEndpointUnreachable
		c.Message = fmt.Sprintf("argocd-agent's health endpoint %s answered %s, which does not say whether it is connected.", p.URL, resp.Status)
	}
	return c
}

// errorKind names a failed request without the parts that change every time (ports,
// addresses), so that the condition is stable while the failure is.
func errorKind(err error) string {
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "timed out"
	}
	return "connection failed"
}

func (p *Prober) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	// Never through a proxy: the cluster's HTTP_PROXY (from an AddOnDeploymentConfig) is
	// for leaving the cluster, and a NO_PROXY without .svc would send every probe there.
	// No keep-alive: one request per interval.
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
}

func (p *Prober) interval() time.Duration {
	if p.Interval > 0 {
		return p.Interval
	}
	return DefaultHealthInterval
}
