// Package manager wires the hub side of gitops-addon: a controller-runtime manager with
// the GitOpsCluster and ApplicationSet access controllers, metrics, health probes and
// leader election, and addon-framework's addon manager, started only once this replica
// is the leader.
package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"open-cluster-management.io/addon-framework/pkg/utils"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/hub/appsetaccess"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/hub/crdupgrade"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
	"github.com/gitops-addon/gitops-addon/pkg/hub/liveresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
	"github.com/gitops-addon/gitops-addon/pkg/hub/schemes"
	"github.com/gitops-addon/gitops-addon/pkg/hub/stackstatus"
	"github.com/gitops-addon/gitops-addon/pkg/hub/treecache"
)

// LeaderElectionID is the Lease that elects the active manager replica.
const LeaderElectionID = "gitops-addon-manager"

// Options configures the hub manager.
type Options struct {
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof when set; empty or "0" disables it.
	PprofBindAddress        string
	LeaderElection          bool
	LeaderElectionNamespace string
	AgentImage              string
	OperatorImage           string
	// PullModel runs the pull model (hub Applications -> ManifestWorks) once Argo CD's
	// CRDs exist on the hub; false is the kill switch, which leaves ManifestWorks as they are.
	PullModel bool
	// HubOnly leaves the addon to another installation (Red Hat ACM's AddOnTemplate
	// gitops-addon on a hub being moved from ACM): no addon-framework manager runs and no
	// ManagedClusterAddOn is created, changed or removed; cluster registration, the
	// placement ConfigMap and the pull model work as usual.
	HubOnly bool
	// PullWorkers is how many Applications the pull model propagates concurrently.
	PullWorkers int
	// PullApplyTimeout is how long a pull ManifestWork may stay unapplied before the hub
	// Application says so (pullmodel.DefaultApplyTimeout when zero).
	PullApplyTimeout time.Duration
	// PullStatusStaleAfter is the age from which a pulled Application's status on the hub
	// counts as stale in the metrics (pullmodel.DefaultStatusStaleAfter when zero).
	PullStatusStaleAfter time.Duration
	// ArgoCDRedis is the hub Argo CD's redis, where the pulled Applications' resource trees
	// are written for argocd-server (pkg/hub/treecache); an empty address: no trees.
	ArgoCDRedis argocdcache.Options
	// ArgoCDNamespace is the hub Argo CD's own namespace (cache names of Applications).
	ArgoCDNamespace string
	// UpgradeCRDs brings the hub's CRDs to this manager's schema before it starts
	// (pkg/hub/crdupgrade): Helm never upgrades a chart's crds/.
	UpgradeCRDs bool
	// ArgoNamespaces are the namespaces GitOpsClusters may name as their argoNamespace: the
	// only ones whose Secrets and ConfigMaps the manager reads and writes (the chart's
	// Roles grant them there). Empty means any namespace (and a ClusterRole for both kinds).
	ArgoNamespaces []string
	// ArgoCDAgentCertificateLifetime is how long the Argo CD Agent client certificates it
	// signs are valid (OCM renews them before); 0 means signer.DefaultLifetime.
	ArgoCDAgentCertificateLifetime time.Duration
	// LiveResources lets GitOpsClusters with spec.gitopsAddon.liveResources read their
	// clusters' live resources through cluster-proxy (pkg/hub/liveresources): it caches the
	// Secrets of two names in every namespace, which the chart's ClusterRole grants.
	LiveResources bool
	// ClusterProxyAddress is host:port where the hub's Argo CD reaches cluster-proxy's user
	// server, when not at its Service (an Argo CD outside the hub cluster).
	ClusterProxyAddress string
	// SkipControllerNameValidation lets tests run several managers in one process.
	SkipControllerNameValidation bool
}

// treeWriter writes the resource trees into the hub Argo CD's redis, when one is given.
func (o Options) treeWriter() *treecache.Writer {
	if o.ArgoCDRedis.Address == "" {
		return nil
	}
	return &treecache.Writer{Store: argocdcache.New(o.ArgoCDRedis), ArgoNamespace: o.ArgoCDNamespace}
}

// NewScheme registers every kind the hub manager reads or writes (pkg/hub/schemes, which
// the tests' fake hubs share).
func NewScheme() (*runtime.Scheme, error) { return schemes.Hub() }

// Run runs the hub manager until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := New(cfg, o)
	if err != nil {
		return err
	}
	if o.UpgradeCRDs {
		if err := upgradeCRDs(ctx, cfg, mgr); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// upgradeCRDs applies the embedded CRDs before any controller starts, so that they run on
// this manager's schema. Every replica does it (server-side apply of the same content is
// a no-op): a new replica of a rolling update must not wait for the leader.
func upgradeCRDs(ctx context.Context, cfg *rest.Config, mgr manager.Manager) error {
	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("creating the CRD client: %w", err)
	}
	if _, err := crdupgrade.Ensure(ctx, c, mgr.GetEventRecorder("gitops-addon-manager")); err != nil {
		return fmt.Errorf("bringing the hub's CRDs to this manager's schema: %w", err)
	}
	return nil
}

// New builds the hub manager without starting it.
func New(cfg *rest.Config, o Options) (manager.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	routes, err := servesRoutes(cfg)
	if err != nil {
		return nil, err
	}
	byObject := gitopscluster.CacheByObject(o.ArgoNamespaces)
	if routes {
		maps.Copy(byObject, argocdagent.RouteCacheByObject(gitopscluster.NamespaceConfigs(o.ArgoNamespaces)))
	}
	identity, err := replicaIdentity()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	var lead *leader
	if o.LeaderElection {
		if lead, err = newLeader(cfg, o.LeaderElectionNamespace, identity); err != nil {
			return nil, err
		}
		// Every client of the manager from here on (controllers, addon-framework, Events)
		// writes only while this replica certainly leads.
		cfg = lead.fence.Guard(cfg)
	}
	cfg.UserAgent = userAgent(identity)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                              scheme,
		Metrics:                             metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:              o.HealthProbeBindAddress,
		PprofBindAddress:                    o.PprofBindAddress,
		LeaderElection:                      o.LeaderElection,
		LeaderElectionResourceLockInterface: lead.lockOrNil(),
		// The Lease's name is the lock's; the elector also names its metrics with it
		// (leader_election_master_status{name="gitops-addon-manager"}).
		LeaderElectionID: LeaderElectionID,
		LeaseDuration:    &leaseDuration,
		RenewDeadline:    &renewDeadline,
		RetryPeriod:      &retryPeriod,
		// Release the lease on shutdown so that a rolling update hands over at once.
		LeaderElectionReleaseOnCancel: true,
		// Managed fields are never read from the cache; at 1,000 clusters they are a good
		// part of every cached ManagedCluster, ManagedClusterAddOn and Secret.
		Cache:      cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()},
		Controller: config.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	if lead != nil {
		lead.events.recorder = mgr.GetEventRecorderFor(identity) //nolint:staticcheck // resourcelock records through the old API
	}
	// The hub's own cluster ID, read once: a ManagedCluster that is the hub under another
	// name than local-cluster is known by it (its ClusterClaim id.k8s.io).
	hub := localcluster.ReadHub(context.Background(), mgr.GetAPIReader(), localcluster.ReadBackoff)
	if hub.IDProblem != "" {
		ctrl.Log.WithName("manager").Error(nil, hub.IDProblem)
	}
	var departures *pullmodel.Departures
	if o.PullModel {
		if departures, err = pullmodel.SetupStarter(mgr, pullmodel.Options{
			Hub:     hub,
			Workers: o.PullWorkers, ApplyTimeout: o.PullApplyTimeout, StatusStaleAfter: o.PullStatusStaleAfter, HubOnly: o.HubOnly,
			SkipNameValidation: o.SkipControllerNameValidation, CredentialNamespaces: gitopscluster.NamespaceConfigs(o.ArgoNamespaces),
			Trees: o.treeWriter(),
		}); err != nil {
			return nil, fmt.Errorf("setting up the pull model: %w", err)
		}
	}
	trust := &argocdagent.Keeper{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	// The shared ApplicationSet objects are written whether or not this installation
	// delivers the addon (HubOnly): the hub's ApplicationSets need them either way.
	access := &appsetaccess.Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Recorder:       mgr.GetEventRecorder("gitops-addon-manager"),
		ArgoNamespaces: o.ArgoNamespaces,
	}
	if err := access.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ApplicationSet access controller: %w", err)
	}
	live, liveOff, err := liveResourcesSource(mgr, o)
	if err != nil {
		return nil, err
	}
	if err := (&gitopscluster.Reconciler{
		LiveResources:        live,
		LiveResourcesOff:     liveOff,
		Client:               mgr.GetClient(),
		APIReader:            mgr.GetAPIReader(),
		Recorder:             mgr.GetEventRecorder("gitops-addon-manager"),
		Departures:           departuresOrNil(departures),
		ApplicationSetAccess: access,
		ArgoNamespaces:       o.ArgoNamespaces,
		Trust:                trust,
		Routes:               routes,
		HubOnly:              o.HubOnly,
		Hub:                  hub,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the GitOpsCluster controller: %w", err)
	}
	if err := (&argocdagent.TrustReconciler{
		Client:         mgr.GetClient(),
		Keeper:         trust,
		Routes:         routes,
		Recorder:       mgr.GetEventRecorder("gitops-addon-manager"),
		ArgoNamespaces: o.ArgoNamespaces,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Argo CD Agent trust controller: %w", err)
	}
	if o.HubOnly {
		ctrl.Log.WithName("manager").Info("hub-only: the addon is not delivered by this installation (--deliver-addon=false); no ManagedClusterAddOn is " +
			"created, changed or removed")
	} else {
		argoCDAgentSigner := &signer.Signer{Reader: mgr.GetClient(), CAs: trust, Lifetime: o.ArgoCDAgentCertificateLifetime}
		if err := addAddonManager(mgr, cfg, o, argoCDAgentSigner); err != nil {
			return nil, err
		}
		if err := stackstatus.SetupWithManager(mgr, cfg); err != nil {
			return nil, fmt.Errorf("setting up the stack status controller: %w", err)
		}
	}
	// The manager's cache holds the ManagedClusterAddOns gitops-addon (hub-only too: then
	// another installation's), which gitops_addon_clusters counts.
	if err := mgr.Add(hubmetrics.ReportClusters(mgr.GetClient())); err != nil {
		return nil, fmt.Errorf("serving the clusters metric: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	return mgr, nil
}

// servesRoutes tells whether the hub serves route.openshift.io/v1 (OpenShift), where the
// Argo CD Agent principal's Route is discovered. A Route API added later is seen when the
// manager restarts. The Route API is aggregated (openshift-apiserver), which may answer
// 503 for a while during an upgrade: after a few tries the manager starts without Route
// discovery (saying so) rather than not at all.
func servesRoutes(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("creating the discovery client: %w", err)
	}
	var resources *metav1.APIResourceList
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 4}
	err = retry.OnError(backoff, func(err error) bool { return !apierrors.IsNotFound(err) }, func() error {
		resources, err = dc.ServerResourcesForGroupVersion(routev1.GroupVersion.String())
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		ctrl.Log.WithName("manager").Error(err, "the hub's Route API does not answer: starting without discovering the Argo CD Agent principal's Route (set "+
			"serverAddress, or restart the manager once it answers)",
			"groupVersion", routev1.GroupVersion.String())
		return false, nil
	}
	return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "routes" }), nil
}

// departuresOrNil keeps a nil *Departures from becoming a non-nil interface.
func departuresOrNil(d *pullmodel.Departures) gitopscluster.Departures {
	if d == nil {
		return nil
	}
	return d
}

// addAddonManager registers addon-framework's addon manager as a runnable that starts
// only on the elected leader: two replicas must never both write ManifestWorks.
func addAddonManager(mgr manager.Manager, cfg *rest.Config, o Options, argoCDAgentSigner *signer.Signer) error {
	clients, err := newAddonClients(cfg)
	if err != nil {
		return fmt.Errorf("creating the addon manager's clients: %w", err)
	}
	agentHubBindings, err := newAgentHubBindingInformer(clients.kube)
	if err != nil {
		return err
	}
	agentAddon, err := addon.New(addon.Options{
		AgentImage:        o.AgentImage,
		OperatorImage:     o.OperatorImage,
		ResourceTree:      o.ArgoCDRedis.Address != "",
		KubeClient:        clients.kube,
		AgentHubBindings:  rbaclisters.NewRoleBindingLister(agentHubBindings.GetIndexer()),
		ADCGetter:         utils.NewAddOnDeploymentConfigGetter(clients.addon),
		Warn:              addon.EventWarner(mgr.GetEventRecorder("gitops-addon-manager")),
		ArgoCDAgentSigner: argoCDAgentSigner,
	})
	if err != nil {
		return err
	}
	addonManager, err := newAddonManager(cfg, clients, agentAddon, agentHubBindings)
	if err != nil {
		return err
	}
	// A RunnableFunc needs leader election by default, so the manager starts it only
	// once this replica leads.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := addonManager.Start(ctx); err != nil {
			return fmt.Errorf("starting the addon manager: %w", err)
		}
		<-ctx.Done()
		return nil
	}))
}

// liveResourcesSource makes the reader of cluster-proxy and of the tokens, and adds its
// caches to the manager; nil when live resources are off, and, when the manager may not
// read those Secrets, why (caches it may not list would never sync and would hold up
// every GitOpsCluster, not only those that ask for live resources).
func liveResourcesSource(mgr ctrl.Manager, o Options) (*liveresources.Source, string, error) {
	if !o.LiveResources {
		return nil, "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	missing, err := liveresources.MissingGrants(ctx, mgr.GetClient())
	if err != nil {
		return nil, "", err
	}
	if len(missing) > 0 {
		why := fmt.Sprintf("its ClusterRole does not let it %s", strings.Join(missing, ", "))
		ctrl.Log.WithName("manager").Error(nil, "running without live resources although --live-resources is on: "+why)
		return nil, why, nil
	}
	src, err := liveresources.NewSource(mgr.GetConfig(), mgr.GetScheme(), mgr.GetAPIReader(), o.ClusterProxyAddress)
	if err != nil {
		return nil, "", fmt.Errorf("making the live resources caches: %w", err)
	}
	for _, c := range src.Caches {
		if err := mgr.Add(c); err != nil {
			return nil, "", fmt.Errorf("adding the live resources caches: %w", err)
		}
	}
	return src, "", nil
}
