package argocd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

// AgentBinaryEnv names the environment variable with the path of an argocd-agent binary
// (github.com/argoproj-labs/argocd-agent, not served by the Go module proxy, so never
// built here): the interoperability test runs only when it is set.
const AgentBinaryEnv = "ARGOCD_AGENT_BIN"

// AgentBinary is the argocd-agent binary named by AgentBinaryEnv, or "" when unset; an
// error when it names no executable file.
func AgentBinary() (string, error) {
	bin := os.Getenv(AgentBinaryEnv)
	if bin == "" {
		return "", nil
	}
	info, err := os.Stat(bin)
	if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s=%s is not an executable argocd-agent binary (%v)", AgentBinaryEnv, bin, err)
	}
	return bin, nil
}

// PrincipalOptions run argocd-agent's principal on the hub.
type PrincipalOptions struct {
	// Binary is argocd-agent.
	Binary string
	// Address is the loopback host:port agents connect to.
	Address string
	// Redis is the hub Argo CD's redis.
	Redis string
	// Agents are the agents' names: the hub namespaces it serves.
	Agents []string
}

// The ports argocd-agent's principal serves its redis proxy and its resource proxy on, on
// every interface: fixed in its code (principal/server.go), no flag moves them.
const (
	PrincipalRedisProxyPort    = "6379"
	PrincipalResourceProxyPort = "9090"
)

// StartPrincipal runs the principal in the hub's Argo CD namespace as the hub's
// administrator, with the Secrets gitops-addon keeps there and the auth pattern `render
// principal` prints, as users run it: with its redis proxy (for the hub's argocd-server,
// which reads the agents' trees through it) and its resource proxy (live manifests,
// events and logs, with the certificate gitops-addon issues). Both listen on fixed ports
// of every interface, so one principal runs on the machine at a time.
func StartPrincipal(ctx context.Context, f *harness.Fleet, o PrincipalOptions) (*harness.Process, error) {
	host, port, err := net.SplitHostPort(o.Address)
	if err != nil {
		return nil, err
	}
	for _, fixed := range []string{PrincipalRedisProxyPort, PrincipalResourceProxyPort} {
		l, err := net.Listen("tcp", ":"+fixed)
		if err != nil {
			return nil, fmt.Errorf("the principal's redis and resource proxies need port %s, which is taken (a redis-server of the machine?): %w", fixed, err)
		}
		_ = l.Close()
	}
	p, err := f.StartProcess("hub-argocd-agent-principal", []string{o.Binary, "principal",
		"--kubeconfig", f.Hub.Kubeconfig, "--namespace", Namespace,
		"--listen-host", host, "--listen-port", port,
		"--allowed-namespaces", strings.Join(o.Agents, ","),
		"--auth", signer.PrincipalAuth,
		"--redis-server-address", o.Redis,
		"--metrics-port", FreeAgentPort(), "--healthz-port", FreeAgentPort(),
		"--log-level", "debug",
	})
	if err != nil {
		return nil, err
	}
	for _, addr := range []string{o.Address, net.JoinHostPort("127.0.0.1", PrincipalRedisProxyPort), net.JoinHostPort("127.0.0.1", PrincipalResourceProxyPort)} {
		if err := waitListening(ctx, p, addr); err != nil {
			return p, err
		}
	}
	return p, nil
}

// StartArgoCDAgent runs the argocd-agent the GitOps operator rendered on a spoke from the
// ArgoCD CR gitops-addon delivered: its Deployment's command and environment (principal
// address, mode, the TLS Secrets gitops-addon fills), as its ServiceAccount, with redis
// pointed at the spoke Argo CD's and health on healthPort (loopback is how it is asked).
func StartArgoCDAgent(ctx context.Context, f *harness.Fleet, s *harness.Spoke, binary, redis, healthPort string) (*harness.Process, error) {
	d := &appsv1.Deployment{}
	name := argocdagent.Deployment(contract.ArgoCDName)
	if err := waitGet(ctx, s.Client, client.ObjectKey{Namespace: Namespace, Name: name}, d, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("waiting for the operator to render argocd-agent on %s: %w", s.Name, err)
	}
	kubeconfig, err := s.ServiceAccountKubeconfig(ctx, Namespace, d.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	container := d.Spec.Template.Spec.Containers[0]
	env := literalEnv(container)
	args := append(append([]string{binary}, container.Args...),
		"--kubeconfig", kubeconfig, "--redis-addr", redis, "--healthz-port", healthPort, "--metrics-port", FreeAgentPort())
	return f.StartProcess(s.Name+"-argocd-agent", args, env...)
}

// FreeAgentPort is a free port for argocd-agent's metrics and health servers, which refuse
// ports from 32768 on (the kernel's ephemeral range, where free ports usually come from)
// and listen on every interface: a random port below it that is free there.
func FreeAgentPort() string {
	for {
		port := strconv.Itoa(20000 + rand.IntN(32768-20000))
		if l, err := net.Listen("tcp", ":"+port); err == nil {
			_ = l.Close()
			return port
		}
	}
}
