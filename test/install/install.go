// Package install puts gitops-addon onto a harness fleet as a user's `helm install` and
// OCM would: the manager chart's objects on the hub, the manager running as a process
// under the chart's ServiceAccount, and on each spoke the agent running as a process with
// the hub credential OCM's addon registration issued and the spoke ServiceAccount the
// ManifestWork created. Only Deployments are replaced by processes: the environment has
// no kubelet.
package install

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// Namespace is the release namespace of the manager chart.
const Namespace = "open-cluster-management-addon"

// managerName is the chart's Deployment and ServiceAccount name.
const managerName = "gitops-addon-manager"

// fieldOwner is the server-side apply manager of what this package applies.
const fieldOwner = client.FieldOwner("gitops-addon-install")

// Product is gitops-addon installed on a harness.
type Product struct {
	Fleet  *harness.Fleet
	Binary string
	// Manager is the running manager process (nil when stopped).
	Manager *harness.Process
	// ManagerMetrics is the manager's metrics address (127.0.0.1:port).
	ManagerMetrics string

	managerArgs []string
	mu          sync.Mutex
	agents      map[string]*harness.Process
	agentProbes map[string]string // each agent's health probe address
	// agentFlags are set on a spoke's agent beside its Deployment's arguments.
	agentFlags map[string]map[string]string
	hooks      map[string]bool // spokes whose pre-delete hook Jobs are run
	// agentArgs are the Deployment arguments each running agent was started from; a
	// change rolls the agent out again, as the kubelet would (followAgentDeployment).
	agentArgs map[string][]string
	// lifecycles serialize each spoke's agent starts, restarts and stops: the Deployment
	// follower and a test may both act on it, and two starts at once would leave a second,
	// untracked agent running (it removed the duplicate Routes CRD a test had just made).
	lifecycles sync.Map // spoke name -> *sync.Mutex
	// ctx ends with the fleet: what stands in for the kubelet runs as long.
	ctx context.Context
}

// BuildBinary builds cmd/gitops-addon into dir; go's build cache makes a rebuild cheap.
func BuildBinary(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "gitops-addon")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/gitops-addon")
	cmd.Dir = testenv.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building gitops-addon: %v: %s", err, b)
	}
	return out, nil
}

// OnHub installs the manager chart on the hub with the Helm SDK, as `helm install` does
// (its Deployment's pod never runs: StartManager runs the manager as a process, with the
// Deployment's arguments).
func OnHub(ctx context.Context, f *harness.Fleet, binary string) (*Product, error) {
	deployment, err := managerDeployment()
	if err != nil {
		return nil, err
	}
	if err := installRelease(ctx, f.Hub); err != nil {
		return nil, err
	}
	fleetCtx, cancel := context.WithCancel(context.Background())
	f.OnStop(cancel)
	return &Product{
		Fleet:       f,
		Binary:      binary,
		managerArgs: deployment.Spec.Template.Spec.Containers[0].Args,
		agents:      map[string]*harness.Process{},
		agentProbes: map[string]string{},
		agentFlags:  map[string]map[string]string{},
		hooks:       map[string]bool{},
		agentArgs:   map[string][]string{},
		ctx:         fleetCtx,
	}, nil
}

// RenderRelease is `helm template charts/gitops-addon -n open-cluster-management-addon
// --include-crds`, as a release: its manifest and its hooks.
func RenderRelease() (*release.Release, error) {
	chart, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"))
	if err != nil {
		return nil, fmt.Errorf("loading the manager chart: %w", err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.IncludeCRDs = true, true, true
	install.ReleaseName, install.Namespace = ReleaseName, Namespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	rel, err := install.Run(chart, map[string]any{})
	if err != nil {
		return nil, fmt.Errorf("rendering the manager chart: %w", err)
	}
	return rel, nil
}

// managerDeployment is the manager Deployment the chart renders.
func managerDeployment() (*appsv1.Deployment, error) {
	rel, err := RenderRelease()
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rel.Manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the manager chart renders no Deployment " + managerName)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the rendered chart: %w", err)
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("decoding the rendered chart: %w", err)
		}
		if u.GetKind() == "Deployment" && u.GetName() == managerName {
			deployment := &appsv1.Deployment{}
			if err := utilyaml.Unmarshal(doc, deployment); err != nil {
				return nil, fmt.Errorf("decoding the manager Deployment: %w", err)
			}
			return deployment, nil
		}
	}
}

func namespace(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	return u
}

func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	obj = obj.DeepCopy()
	obj.SetManagedFields(nil)
	obj.SetResourceVersion("")
	if err := c.Patch(ctx, obj, client.Apply, fieldOwner, client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
		return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// StartManager runs `gitops-addon manager` with the chart Deployment's arguments, as the
// chart's ServiceAccount (so the chart's RBAC is what it gets), on loopback ports.
func (p *Product) StartManager(ctx context.Context) error {
	return p.StartManagerWith(ctx, nil)
}

// StartManagerWith starts the manager with extra flags (set replaces a flag's value or adds it).
func (p *Product) StartManagerWith(ctx context.Context, set map[string]string) error {
	if p.Manager != nil {
		return errors.New("the manager is already running")
	}
	proc, metrics, err := p.StartReplica(ctx, "hub-gitops-addon-manager", set)
	if err != nil {
		return err
	}
	p.Manager, p.ManagerMetrics = proc, metrics
	return nil
}

// StartReplica starts a replica of the manager, as the chart's replicas run pods: the
// Deployment's arguments (set replaces or adds flags), the chart's ServiceAccount, its own
// process named name and its own metrics address (returned). StartManagerWith tracks the
// one it starts as Manager; the caller stops any other.
func (p *Product) StartReplica(ctx context.Context, name string, set map[string]string) (*harness.Process, string, error) {
	kubeconfig, err := p.Fleet.Hub.ServiceAccountKubeconfig(ctx, Namespace, managerName)
	if err != nil {
		return nil, "", err
	}
	metrics, probes := harness.FreeAddress(), harness.FreeAddress()
	args := replaceFlags(p.managerArgs, map[string]string{
		"--metrics-bind-address":      metrics,
		"--health-probe-bind-address": probes,
		"--leader-election-namespace": Namespace,
		"--kubeconfig":                kubeconfig,
	})
	args = replaceFlags(args, set)
	proc, err := p.Fleet.StartProcess(name, append([]string{p.Binary}, args...), "POD_NAMESPACE="+Namespace)
	if err != nil {
		return nil, "", fmt.Errorf("starting the manager %s: %w", name, err)
	}
	return proc, metrics, nil
}

// KillManager kills the manager with SIGKILL, as an OOM kill or a node loss does.
func (p *Product) KillManager() error {
	if p.Manager == nil {
		return nil
	}
	err := p.Manager.Kill()
	p.Manager = nil
	return err
}

// StartAgent waits until OCM has delivered the agent to the spoke (its ManifestWork
// applied: ServiceAccount, RBAC, Deployment) and issued its hub credential (the
// gitops-addon-hub-kubeconfig secret), then runs `gitops-addon agent` with the
// Deployment's arguments, the secret copied to disk as the Deployment mounts it, and the
// agent ServiceAccount's token for the spoke.
func (p *Product) StartAgent(ctx context.Context, spoke *harness.Spoke) error {
	unlock := p.lockLifecycle(spoke.Name)
	defer unlock()
	return p.startAgent(ctx, spoke)
}

// lockLifecycle takes a spoke's agent lifecycle lock and returns its release.
func (p *Product) lockLifecycle(spoke string) func() {
	m, _ := p.lifecycles.LoadOrStore(spoke, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// stopAgent stops the spoke's tracked agent, if one runs; the lifecycle lock is held.
func (p *Product) stopAgent(spoke string) error {
	if agent := p.Agent(spoke); agent != nil && agent.Running() {
		if err := agent.Stop(); err != nil {
			return fmt.Errorf("stopping the agent on %s: %w", spoke, err)
		}
	}
	return nil
}

// StopAgent stops a spoke's agent; it stays stopped until a test starts it again.
func (p *Product) StopAgent(spoke string) error {
	unlock := p.lockLifecycle(spoke)
	defer unlock()
	return p.stopAgent(spoke)
}

// startAgent is StartAgent with the lifecycle lock held: an agent still running is stopped
// first, so that a spoke never has two.
func (p *Product) startAgent(ctx context.Context, spoke *harness.Spoke) error {
	if err := p.stopAgent(spoke.Name); err != nil {
		return err
	}
	deployment, err := waitAgentDeployment(ctx, spoke.Cluster)
	if err != nil {
		return err
	}
	ns := deployment.Namespace
	hubDir := filepath.Join(spoke.Dir, "gitops-addon-hub-kubeconfig")
	if err := copySecret(ctx, spoke.Cluster, ns, contract.HubKubeconfigSecret, hubDir); err != nil {
		return err
	}
	spokeKubeconfig, err := spoke.ServiceAccountKubeconfig(ctx, ns, deployment.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	probes := harness.FreeAddress()
	set := map[string]string{
		"--hub-kubeconfig":            filepath.Join(hubDir, "kubeconfig"),
		"--kubeconfig":                spokeKubeconfig,
		"--metrics-bind-address":      harness.FreeAddress(),
		"--health-probe-bind-address": probes,
	}
	p.mu.Lock()
	maps.Copy(set, p.agentFlags[spoke.Name])
	p.mu.Unlock()
	args := replaceFlags(deployment.Spec.Template.Spec.Containers[0].Args, set)
	proc, err := p.Fleet.StartProcess(spoke.Name+"-gitops-addon-agent", append([]string{p.Binary}, args...), "POD_NAMESPACE="+ns)
	if err != nil {
		return fmt.Errorf("starting the agent on %s: %w", spoke.Name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.agents[spoke.Name] = proc
	p.agentProbes[spoke.Name] = probes
	p.agentArgs[spoke.Name] = deployment.Spec.Template.Spec.Containers[0].Args
	if !p.hooks[spoke.Name] {
		p.hooks[spoke.Name] = true
		go p.runPreDeleteHooks(p.ctx, spoke)
		go p.followAgentDeployment(p.ctx, spoke)
	}
	return nil
}

// followAgentDeployment restarts a running agent with its Deployment's new arguments when
// the hub renders others (the stack it ships once the agent reported, a mode, a flag), as
// the kubelet rolls a Deployment out; an agent a test stopped stays stopped.
func (p *Product) followAgentDeployment(ctx context.Context, spoke *harness.Spoke) {
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(ctx context.Context) (bool, error) {
		p.mu.Lock()
		started, agent := p.agentArgs[spoke.Name], p.agents[spoke.Name]
		p.mu.Unlock()
		if agent == nil || !agent.Running() {
			return false, nil
		}
		list := &appsv1.DeploymentList{}
		if err := spoke.Client.List(ctx, list, client.MatchingFields{"metadata.name": contract.AgentDeployment}); err != nil || len(list.Items) != 1 {
			return false, nil
		}
		d := &list.Items[0]
		if slices.Equal(d.Spec.Template.Spec.Containers[0].Args, started) {
			return false, nil
		}
		unlock := p.lockLifecycle(spoke.Name)
		defer unlock()
		if p.Agent(spoke.Name) != agent || !agent.Running() {
			return false, nil // a test stopped or restarted it meanwhile
		}
		if err := p.startAgent(ctx, spoke); err != nil {
			p.Fleet.Logf("restarting the agent on %s with its Deployment's new arguments: %v", spoke.Name, err)
		}
		return false, nil
	})
}

// SetAgentFlags sets flags on a spoke's agent from its next start on, beside its
// Deployment's arguments: what a cluster would provide otherwise (argocd-agent's health
// endpoint is its Service there, a loopback port here).
func (p *Product) SetAgentFlags(spoke string, flags map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.agentFlags[spoke] = flags
}

// Agent returns the agent process of a spoke, or nil.
func (p *Product) Agent(spoke string) *harness.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.agents[spoke]
}

func waitAgentDeployment(ctx context.Context, c *harness.Cluster) (*appsv1.Deployment, error) {
	var found *appsv1.Deployment
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list := &appsv1.DeploymentList{}
		if err := c.Client.List(ctx, list, client.MatchingFields{"metadata.name": contract.AgentDeployment}); err != nil {
			return false, nil
		}
		for i := range list.Items {
			d := &list.Items[i]
			secret := &corev1.Secret{}
			if c.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: contract.HubKubeconfigSecret}, secret) == nil && len(secret.Data["kubeconfig"]) > 0 {
				found = d
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting on %s for the agent Deployment and its %s secret: %w", c.Name, contract.HubKubeconfigSecret, err)
	}
	return found, nil
}

// copySecret writes every key of a secret as a file, as a secret volume mount does.
func copySecret(ctx context.Context, c *harness.Cluster, ns, name, dir string) error {
	secret := &corev1.Secret{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		return fmt.Errorf("reading secret %s/%s on %s: %w", ns, name, c.Name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for key, value := range secret.Data {
		if err := os.WriteFile(filepath.Join(dir, key), value, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", key, err)
		}
	}
	return nil
}

// replaceFlags sets --name=value flags, replacing any given in args.
func replaceFlags(args []string, set map[string]string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := set[name]; !ok {
			out = append(out, a)
		}
	}
	for name, value := range set {
		out = append(out, name+"="+value)
	}
	return out
}

// RestartAgent stops a spoke's agent and starts it again with its Deployment as it is
// now, as a rollout after a Deployment change does.
func (p *Product) RestartAgent(ctx context.Context, spoke *harness.Spoke) error {
	unlock := p.lockLifecycle(spoke.Name)
	defer unlock()
	return p.startAgent(ctx, spoke)
}

// RestartManagerWith stops the manager gracefully (it releases its lease) and starts it
// again with extra flags, as a rollout of a changed chart value does.
func (p *Product) RestartManagerWith(ctx context.Context, set map[string]string) error {
	if p.Manager != nil {
		if err := p.Manager.Stop(); err != nil {
			return fmt.Errorf("stopping the manager: %w", err)
		}
		p.Manager = nil
	}
	return p.StartManagerWith(ctx, set)
}
