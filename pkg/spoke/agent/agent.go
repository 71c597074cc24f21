// Package agent wires the spoke side of gitops-addon: a controller-runtime manager on the
// managed cluster with the CRD installer and the Route API guard, a client to the hub built from the credential
// OCM issued to the addon, the addon lease that makes the addon Available, and probes.
package agent

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"open-cluster-management.io/addon-framework/pkg/lease"
	"open-cluster-management.io/addon-framework/pkg/utils"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/compat"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/comparisonretry"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/existingargocd"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/repocreds"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/resourcesummary"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeguard"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/schemes"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/treereport"
)

// Options configures the spoke agent.
type Options struct {
	// HubKubeconfig is the kubeconfig file of the mounted gitops-addon-hub-kubeconfig
	// secret; it refers to tls.crt and tls.key beside it.
	HubKubeconfig string
	// ClusterName is the managed cluster's name on the hub; empty reads the secret's
	// cluster-name file beside HubKubeconfig.
	ClusterName string
	// AddonNamespace is the agent's namespace on the spoke (lease, leader election).
	AddonNamespace string
	// SpokeKubeconfig is the spoke's kubeconfig; empty uses the in-cluster config.
	SpokeKubeconfig string

	// DisableAdmissionGuard: see routeguard.Options.
	DisableAdmissionGuard bool
	// OpenShift is the hub's flavour decision: see crdinstall.Options.
	OpenShift bool
	// Stack is what the hub shipped beside the agent (the chart's stack value):
	// StackFull, StackAgentOnly or StackUseExisting. The features that work in the GitOps
	// namespace run only where the agent has its roles there (not agentOnly).
	Stack string
	// ArgoCDAgentCertificateSecret, set in Argo CD Agent mode, is the Secret of the
	// agent's namespace in which OCM keeps argocd-agent's client certificate; the agent
	// hands it to argocd-agent (pkg/spoke/argocdagent). Empty: not in Argo CD Agent mode.
	ArgoCDAgentCertificateSecret string
	// ArgoCDAgentHealthURL is argocd-agent's health endpoint, asked in Argo CD Agent mode for
	// whether it is connected to the principal; empty: the operator's healthz Service.
	ArgoCDAgentHealthURL string
	// ArgoCDAgentHealthInterval is how often it is asked; zero: argocdagent.DefaultHealthInterval.
	ArgoCDAgentHealthInterval time.Duration

	// ArgoCDRedisAddress is Argo CD's redis, where the resource trees are read (pkg/spoke/treereport);
	// empty: the GitOps operator's redis Service of the ArgoCD gitops-addon ships.
	ArgoCDRedisAddress string
	// ArgoCDRedisPasswordSecret is the Secret of the GitOps namespace with redis's password
	// (key RedisPasswordKey); empty: none.
	ArgoCDRedisPasswordSecret string
	// DisableResourceTree turns the tree reports off.
	DisableResourceTree bool

	MetricsBindAddress     string
	HealthProbeBindAddress string
	LeaderElection         bool
}

// Validate checks the options, naming the flag to fix.
func (o *Options) Validate() error {
	if o.HubKubeconfig == "" {
		return fmt.Errorf("--hub-kubeconfig is required: the kubeconfig file of the %s secret", contract.HubKubeconfigSecret)
	}
	if _, err := os.Stat(o.HubKubeconfig); err != nil {
		return fmt.Errorf("--hub-kubeconfig: %w", err)
	}
	if o.AddonNamespace == "" {
		return fmt.Errorf("--addon-namespace is required (or set POD_NAMESPACE)")
	}
	switch o.Stack {
	case "":
		o.Stack = StackFull
	case StackFull, StackAgentOnly, StackUseExisting:
	default:
		return fmt.Errorf("--stack=%q: want %s, %s or %s", o.Stack, StackFull, StackAgentOnly, StackUseExisting)
	}
	if o.ClusterName == "" {
		name, err := os.ReadFile(filepath.Join(filepath.Dir(o.HubKubeconfig), "cluster-name"))
		if err != nil {
			return fmt.Errorf("--cluster-name is empty and the hub secret has no cluster-name file: %w", err)
		}
		o.ClusterName = strings.TrimSpace(string(name))
	}
	return nil
}

// The values of --stack: what the hub shipped beside the agent.
const (
	// StackFull: the GitOps operator and gitops-addon's ArgoCD instance.
	StackFull = "full"
	// StackAgentOnly: the agent alone; it has no roles in the GitOps namespace.
	StackAgentOnly = "agentOnly"
	// StackUseExisting: the agent serves an existing Argo CD in the GitOps namespace.
	StackUseExisting = "useExisting"
)

// inGitOpsNamespace tells whether the agent has its roles in the GitOps namespace.
func (o Options) inGitOpsNamespace() bool { return o.Stack != StackAgentOnly }

// Setup is what an agent feature needs to register itself.
type Setup struct {
	Manager        manager.Manager
	SpokeConfig    *rest.Config
	HubClient      client.Client
	ClusterName    string
	AddonNamespace string
	Options        Options
	// Report collects every feature's conditions; the agent publishes them on its
	// ManagedClusterAddOn.
	Report *addonstatus.Report
}

// Feature registers controllers on the agent's manager.
type Feature func(Setup) error

// RouteGuard is the Route API guard.
func RouteGuard(s Setup) error {
	_, err := routeguard.SetupWithManager(s.Manager, routeguard.Options{Report: s.Report, DisableAdmissionGuard: s.Options.DisableAdmissionGuard})
	return err
}

// CRDInstaller installs the Argo CD CRDs, and the Routes CRD where the cluster has no
// Route API.
func CRDInstaller(s Setup) error {
	_, err := crdinstall.SetupWithManager(s.Manager, crdinstall.Options{Report: s.Report, OpenShift: s.Options.OpenShift})
	return err
}

// ExistingArgoCD finds an Argo CD or a GitOps operator gitops-addon did not create and
// keeps the record of the instance it did create (pkg/spoke/existingargocd).
func ExistingArgoCD(s Setup) error {
	_, err := existingargocd.SetupWithManager(s.Manager, s.SpokeConfig, existingargocd.Options{AddonNamespace: s.AddonNamespace, Report: s.Report})
	return err
}

// PulledApplications runs the agent's controllers of the Applications the hub pulled here,
// on one cache of them (pkg/spoke/pulledapps): the summary of their resources the hub
// shows (pkg/contract/appresources), and a comparison asked again as soon as Argo CD's
// repo-server can serve it (pkg/spoke/comparisonretry).
func PulledApplications(s Setup) error {
	if !s.Options.inGitOpsNamespace() {
		return nil
	}
	// Before Kubernetes 1.30 the chart renders no admission policy, so no Role that lets the
	// agent patch (or watch the AppProjects of) the Argo CD namespace: a controller whose
	// watch is forbidden would stop the agent.
	served, err := compat.ServesValidatingAdmissionPolicyV1(s.Manager.GetRESTMapper())
	if err != nil {
		return fmt.Errorf("asking the cluster whether it serves ValidatingAdmissionPolicy v1: %w", err)
	}
	if !served {
		ctrl.Log.WithName("agent").Info("this cluster serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes before " +
			compat.ValidatingAdmissionPolicyV1 + "): the hub shows its pulled Applications without their resources, and Argo CD compares again at its own pace")
		return nil
	}
	controllers := []pulledapps.Controller{resourcesummary.Controller(s.Report), comparisonretry.Controller(contract.GitOpsNamespace)}
	if !s.Options.DisableResourceTree {
		controllers = append(controllers, treereport.Controller(s.Options.treeReport(s.Manager.GetAPIReader(), s.Report)))
	}
	return pulledapps.SetupWithManager(s.Manager, contract.GitOpsNamespace, controllers...)
}

// DefaultRedisPasswordSecret and RedisPasswordKey are where the GitOps operator keeps the
// redis password of the ArgoCD gitops-addon ships.
const (
	DefaultRedisPasswordSecret = contract.ArgoCDName + "-redis-initial-password"
	RedisPasswordKey           = "admin.password"
)

// treeReport configures the resource tree reports: Argo CD's redis and its password.
func (o Options) treeReport(reader client.Reader, report *addonstatus.Report) treereport.Options {
	address := o.ArgoCDRedisAddress
	if address == "" {
		address = fmt.Sprintf("%s-redis.%s.svc:6379", contract.ArgoCDName, contract.GitOpsNamespace)
	}
	t := treereport.Options{Namespace: contract.GitOpsNamespace, Redis: argocdcache.Options{Address: address}, Report: report}
	if o.ArgoCDRedisPasswordSecret != "" {
		t.RedisPassword = treereport.SecretPassword(reader, contract.GitOpsNamespace, o.ArgoCDRedisPasswordSecret, RedisPasswordKey)
	}
	return t
}

// RepositoryCredentials keeps in the Argo CD namespace the hub's repository credentials
// that the Applications pulled here use, from the copies their ManifestWorks stage.
func RepositoryCredentials(s Setup) error {
	if !s.Options.inGitOpsNamespace() {
		return nil
	}
	return repocreds.SetupWithManager(s.Manager, repocreds.Options{Namespace: contract.GitOpsNamespace, Report: s.Report})
}

// ArgoCDAgentCertificate hands argocd-agent the client certificate OCM keeps for it and
// restarts it on every renewal. Outside Argo CD Agent mode it removes what it kept there
// when the cluster was in Argo CD Agent mode (argocdagent.Retirement).
func ArgoCDAgentCertificate(s Setup) error {
	if s.Options.Stack != StackFull {
		return nil // no ArgoCD of ours, and no certificate of ours to keep or retire
	}
	o, on := s.Options.argoCDAgentCertificate(s.Report)
	if !on {
		// Uncached: the Secret is read once, by name, which is all the RBAC allows.
		direct, err := client.New(s.SpokeConfig, client.Options{Scheme: s.Manager.GetScheme()})
		if err != nil {
			return fmt.Errorf("creating the spoke client: %w", err)
		}
		return s.Manager.Add(&argocdagent.Retirement{Client: direct, ArgoNamespace: o.ArgoNamespace, Report: s.Report})
	}
	certificates := &argocdagent.CertificateReconciler{Client: s.Manager.GetClient(), APIReader: s.Manager.GetAPIReader(), CertificateOptions: o}
	if err := certificates.SetupWithManager(s.Manager); err != nil {
		return fmt.Errorf("setting up the Argo CD Agent certificate controller: %w", err)
	}
	return nil
}

// ArgoCDAgentHealth reports, in Argo CD Agent mode, whether argocd-agent is connected to
// the principal.
func ArgoCDAgentHealth(s Setup) error {
	if _, on := s.Options.argoCDAgentCertificate(nil); !on || s.Options.Stack != StackFull {
		return nil
	}
	url := s.Options.ArgoCDAgentHealthURL
	if url == "" {
		url = argocdagent.HealthURL(contract.ArgoCDName, contract.GitOpsNamespace)
	}
	return s.Manager.Add(&argocdagent.Prober{URL: url, Interval: s.Options.ArgoCDAgentHealthInterval, Report: s.Report})
}

// argoCDAgentCertificate is the configuration of the Argo CD Agent certificate controller,
// and whether it runs.
func (o Options) argoCDAgentCertificate(report *addonstatus.Report) (argocdagent.CertificateOptions, bool) {
	return argocdagent.CertificateOptions{
		SourceNamespace: o.AddonNamespace, SourceSecret: o.ArgoCDAgentCertificateSecret,
		ArgoNamespace: contract.GitOpsNamespace, Deployment: argocdagent.Deployment(contract.ArgoCDName),
		ArgoCD: contract.ArgoCDName, Report: report,
	}, o.ArgoCDAgentCertificateSecret != ""
}

// Run runs the agent until ctx is done.
func Run(ctx context.Context, o Options, features ...Feature) error {
	if err := o.Validate(); err != nil {
		return err
	}
	spokeCfg, err := spokeConfig(o.SpokeKubeconfig)
	if err != nil {
		return err
	}
	hubCfg, err := clientcmd.BuildConfigFromFlags("", o.HubKubeconfig)
	if err != nil {
		return fmt.Errorf("loading the hub kubeconfig %s: %w", o.HubKubeconfig, err)
	}
	mgr, err := newManager(spokeCfg, o)
	if err != nil {
		return err
	}
	hubScheme, err := schemes.Hub()
	if err != nil {
		return err
	}
	// client-go reloads the client certificate files when OCM rotates them, so this
	// client keeps working; the config checker below restarts a pod in addition.
	hubClient, err := client.New(hubCfg, client.Options{Scheme: hubScheme})
	if err != nil {
		return fmt.Errorf("creating the hub client: %w", err)
	}
	if err := addLease(mgr, spokeCfg, hubCfg, o); err != nil {
		return err
	}
	if err := addProbes(mgr, o.HubKubeconfig); err != nil {
		return err
	}
	setup := Setup{Manager: mgr, SpokeConfig: spokeCfg, HubClient: hubClient, ClusterName: o.ClusterName, AddonNamespace: o.AddonNamespace, Options: o,
		Report: addonstatus.NewReport()}
	for _, feature := range features {
		if err := feature(setup); err != nil {
			return err
		}
	}
	if err := mgr.Add(&addonstatus.Publisher{Hub: hubClient, ClusterName: o.ClusterName, AddonName: contract.AddonName, Report: setup.Report}); err != nil {
		return fmt.Errorf("adding the status publisher: %w", err)
	}
	ctrl.Log.WithName("agent").Info("starting", "cluster", o.ClusterName, "namespace", o.AddonNamespace)
	return mgr.Start(ctx)
}

func spokeConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and not running in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the spoke kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

func newManager(spokeCfg *rest.Config, o Options) (manager.Manager, error) {
	scheme, err := schemes.Spoke()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(spokeCfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              contract.AgentDeployment,
		LeaderElectionNamespace:       o.AddonNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cache.Options{ByObject: cacheByObject(o)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the spoke controller manager: %w", err)
	}
	return mgr, nil
}

// cacheByObject narrows the cache for the features that run: the agent may read only
// the objects its RBAC names.
func cacheByObject(o Options) map[client.Object]cache.ByObject {
	byObject := routeguard.CacheByObject()
	if certs, on := o.argoCDAgentCertificate(nil); on && o.Stack == StackFull {
		maps.Copy(byObject, certs.CacheByObject())
	}
	return byObject
}

// addLease keeps the addon lease on the spoke (falling back to the hub when the spoke has
// no Lease API): OCM's registration agent marks the addon Available from it.
func addLease(mgr manager.Manager, spokeCfg, hubCfg *rest.Config, o Options) error {
	spokeKube, err := kubernetes.NewForConfig(spokeCfg)
	if err != nil {
		return fmt.Errorf("creating the spoke kube client: %w", err)
	}
	updater := lease.NewLeaseUpdater(spokeKube, contract.AddonName, o.AddonNamespace).WithHubLeaseConfig(hubCfg, o.ClusterName)
	return mgr.Add(leaseRunnable{updater: updater})
}

// leaseRunnable runs on every replica: the lease says the agent is alive, not that it leads.
type leaseRunnable struct{ updater lease.LeaseUpdater }

func (l leaseRunnable) Start(ctx context.Context) error { l.updater.Start(ctx); return nil }
func (l leaseRunnable) NeedLeaderElection() bool        { return false }

// addProbes adds liveness and readiness checks. The hub credential check fails once after
// OCM rotates the certificate, so that the kubelet restarts the agent with the new one.
func addProbes(mgr manager.Manager, hubKubeconfig string) error {
	dir := filepath.Dir(hubKubeconfig)
	checker, err := utils.NewConfigChecker("hub-kubeconfig", hubKubeconfig, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return fmt.Errorf("watching the hub credential: %w", err)
	}
	checker.SetReload(true)
	if err := mgr.AddHealthzCheck("hub-kubeconfig", checker.Check); err != nil {
		return fmt.Errorf("adding the hub credential check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return nil
}
