package cmd

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/version"
)

// DefaultKubeAPIQPS and DefaultKubeAPIBurst size the manager's hub client for fleet work:
// a cluster joining costs about eight writes (Argo CD Secret, ManagedClusterAddOn and its
// status, the agent's Role and RoleBinding, the ManifestWork, events), and client-go's
// default of 5 per second would take half an hour for 1,000 clusters.
const (
	DefaultKubeAPIQPS   = 200
	DefaultKubeAPIBurst = 400
)

func newManagerCommand() *cobra.Command {
	o := manager.Options{LeaderElectionNamespace: os.Getenv("POD_NAMESPACE")}
	var kubeconfig string
	var qps float32
	var burst int
	deliverAddon := true
	c := &cobra.Command{
		Use:   "manager",
		Short: "Run the hub addon manager: GitOpsCluster controller and gitops-addon ManifestWorks",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.PullWorkers < 1 {
				return fmt.Errorf("--pull-workers is %d: it must be at least 1", o.PullWorkers)
			}
			if o.PullApplyTimeout <= 0 {
				return fmt.Errorf("--pull-apply-timeout is %v: it must be positive (for example 5m)", o.PullApplyTimeout)
			}
			if o.PullStatusStaleAfter <= 0 {
				return fmt.Errorf("--pull-status-stale-after is %v: it must be positive (for example 10m)", o.PullStatusStaleAfter)
			}
			if o.ArgoCDAgentCertificateLifetime < 10*time.Minute {
				return fmt.Errorf("--argocd-agent-certificate-lifetime is %v: it must be at least 10m, or agents spend their time "+
					"renewing", o.ArgoCDAgentCertificateLifetime)
			}
			if burst < 1 && qps >= 0 {
				return fmt.Errorf("--kube-api-burst is %d: it must be at least 1 while --kube-api-qps limits the rate", burst)
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			cfg.QPS, cfg.Burst = qps, burst
			o.HubOnly = !deliverAddon
			o.ArgoCDRedis.Password = os.Getenv("ARGOCD_REDIS_PASSWORD")
			return manager.Run(c.Context(), cfg, o)
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "hub kubeconfig file; empty uses $KUBECONFIG or the in-cluster config")
	f.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	f.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.StringVar(&o.PprofBindAddress, "pprof-bind-address", "", "address of Go's /debug/pprof profiling endpoints, for diagnosing CPU or memory use; empty "+
		"disables them")
	f.BoolVar(&o.LeaderElection, "leader-elect", true, "elect one active replica through a Lease")
	f.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "namespace of the leader election Lease (default "+
		"$POD_NAMESPACE)")
	f.StringVar(&o.AgentImage, "agent-image", version.Image(), "image of the spoke agent (this binary, of the same version)")
	f.StringVar(&o.OperatorImage, "operator-image", "", "GitOps operator image for every cluster; empty picks the default for each cluster's flavour")
	f.BoolVar(&o.PullModel, "pull-model", true, "deliver hub Applications labelled "+pullnames.LabelPull+"=true to their cluster through ManifestWorks, once "+
		"Argo CD's CRDs exist on the hub; false stops propagation and leaves existing ManifestWorks alone")
	f.BoolVar(&deliverAddon, "deliver-addon", true, "deliver the addon (GitOps operator, Argo CD, spoke agent) to the clusters of GitOpsClusters with "+
		"spec.gitopsAddon.enabled; false is hub-only: cluster registration, the placement ConfigMap and the pull model only, the addon left to the "+
		"ClusterManagementAddOn gitops-addon of another installation (Red Hat ACM's), no ManagedClusterAddOn created, changed or removed")
	f.IntVar(&o.PullWorkers, "pull-workers", 4, "Applications the pull model propagates concurrently")
	f.DurationVar(&o.PullApplyTimeout, "pull-apply-timeout", pullmodel.DefaultApplyTimeout,
		"how long a pull ManifestWork may stay unapplied (cluster unavailable, no work agent) before the hub Application and the report say so")
	f.DurationVar(&o.PullStatusStaleAfter, "pull-status-stale-after", pullmodel.DefaultStatusStaleAfter,
		"the age from which a pulled Application's status on the hub counts in the metric gitops_addon_pull_stale_statuses: how long since "+
			"the work agent was last known to report it (docs/operations/metrics.md)")
	f.StringVar(&o.ArgoCDRedis.Address, "argocd-redis-address", "", "the hub Argo CD's redis (host:port), where the pulled Applications' "+
		"resource trees are written for its argocd-server and UI; its password is read from $ARGOCD_REDIS_PASSWORD; empty: no trees on the hub")
	f.StringVar(&o.ArgoCDNamespace, "argocd-namespace", contract.GitOpsNamespace, "the hub Argo CD's own namespace: Applications elsewhere "+
		"are cached as namespace_name")
	f.BoolVar(&o.UpgradeCRDs, "upgrade-crds", true, "at start, bring the GitOpsCluster and MulticlusterApplicationSetReport CRDs to this manager's schema by "+
		"server-side apply (never deletes or downgrades a CRD, never touches one another installer owns); false leaves them to the installer")
	f.StringSliceVar(&o.ArgoNamespaces, "argo-namespaces", nil, "the only namespaces a GitOpsCluster may name in spec.argoServer.argoNamespace, "+
		"comma-separated: the manager reads and writes Secrets and ConfigMaps there only (the chart's argoNamespaces grant exactly these); empty allows any "+
		"namespace, which needs Secrets and ConfigMaps granted cluster-wide")
	f.BoolVar(&o.LiveResources, "live-resources", true, "let GitOpsClusters with spec.gitopsAddon.liveResources show their clusters' live "+
		"resources in the hub's Argo CD through OCM's cluster-proxy and managed-serviceaccount (the manager caches the Secrets named "+
		"gitops-addon-live-resources and proxy-server-ca, in every namespace); false: their LiveResources condition says it is off")
	f.StringVar(&o.ClusterProxyAddress, "cluster-proxy-address", "", "host:port where the hub's Argo CD reaches cluster-proxy's user server, "+
		"written into the cluster Secrets of live resources; empty: its Service (cluster-proxy-addon-user.<namespace>.svc:9092)")
	f.DurationVar(&o.ArgoCDAgentCertificateLifetime, "argocd-agent-certificate-lifetime", signer.DefaultLifetime, "how long the Argo CD Agent client "+
		"certificates the manager signs are valid; OCM's registration agent renews them before they expire")
	// Kept so that existing command lines and charts still start the manager: addon-framework's
	// public API runs its controllers with one worker each.
	f.Int("addon-workers", 1, "ignored")
	if err := f.MarkDeprecated("addon-workers", "addon-framework's controllers run with one worker each (its public API has no knob; "+
		"one worker measured as fast as eight at 300 clusters); the flag is ignored and will be removed"); err != nil {
		panic(err) // the flag is defined just above
	}
	f.Float32Var(&qps, "kube-api-qps", DefaultKubeAPIQPS, "requests per second to the hub's apiserver, sustained; a negative value disables client-side "+
		"throttling (the apiserver's API Priority and Fairness still applies)")
	f.IntVar(&burst, "kube-api-burst", DefaultKubeAPIBurst, "requests to the hub's apiserver allowed in a burst above --kube-api-qps")
	return c
}

// restConfig loads a kubeconfig file, or $KUBECONFIG / in-cluster when empty.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}
