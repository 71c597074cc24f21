package cmd

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gitops-addon/gitops-addon/pkg/spoke/agent"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
)

func newAgentCommand() *cobra.Command {
	o := agent.Options{AddonNamespace: os.Getenv("POD_NAMESPACE")}
	c := &cobra.Command{
		Use: "agent",
		Short: "Run the spoke agent: Argo CD (and Routes) CRD installer, Route API guard, /openapi/v2 health, " +
			"pulled Applications' resource summaries and repository credentials, and the addon lease",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return agent.Run(c.Context(), o, spokeFeatures()...)
		},
		// Version skew: the hub renders the agent's arguments, and a manager one release
		// newer than this agent (an agent image pinned while the manager is upgraded, or a
		// rollout in progress) may pass flags this agent does not know. It runs on without
		// them rather than crash-looping until the agent is upgraded.
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true}, // the chart passes every flag as --name=value
	}
	f := c.Flags()
	f.StringVar(&o.HubKubeconfig, "hub-kubeconfig", "/var/run/hub/kubeconfig", "kubeconfig of the mounted gitops-addon-hub-kubeconfig secret")
	f.StringVar(&o.ClusterName, "cluster-name", "", "managed cluster name; empty reads cluster-name beside --hub-kubeconfig")
	f.StringVar(&o.AddonNamespace, "addon-namespace", o.AddonNamespace, "the agent's namespace on the spoke (default $POD_NAMESPACE)")
	f.StringVar(&o.SpokeKubeconfig, "kubeconfig", "", "spoke kubeconfig file; empty uses the in-cluster config")
	f.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	f.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.BoolVar(&o.DisableAdmissionGuard, "disable-route-crd-admission-guard", false,
		"do not install the ValidatingAdmissionPolicy that denies a duplicate routes.route.openshift.io CRD (a duplicate is still deleted)")
	f.BoolVar(&o.OpenShift, "openshift", false,
		"the hub found this cluster to be OpenShift or MicroShift: never install the routes.route.openshift.io CRD (set by the hub)")
	f.StringVar(&o.Stack, "stack", agent.StackFull,
		"what the hub shipped beside the agent (set by the hub): full (the GitOps operator and gitops-addon's ArgoCD), agentOnly (nothing in "+
			"openshift-gitops: not known yet whether another Argo CD runs here, or one does and the cluster is skipped) or useExisting (serve the "+
			"existing Argo CD in openshift-gitops)")
	f.StringVar(&o.ArgoCDAgentCertificateSecret, "argocd-agent-certificate-secret", "",
		"Argo CD Agent mode (set by the hub): the Secret of the agent's namespace where OCM keeps argocd-agent's client certificate; the agent copies it to "+
			"argocd-agent-client-tls and restarts argocd-agent on every renewal")
	f.StringVar(&o.ArgoCDAgentHealthURL, "argocd-agent-health-url", "",
		"Argo CD Agent mode: argocd-agent's health endpoint, asked for whether it is connected to the principal (default: the GitOps operator's "+
			"<argocd>-agent-agent-healthz Service)")
	f.DurationVar(&o.ArgoCDAgentHealthInterval, "argocd-agent-health-interval", argocdagent.DefaultHealthInterval,
		"Argo CD Agent mode: how often argocd-agent's health endpoint is asked; the hub is written only when the answer changes")
	f.StringVar(&o.ArgoCDRedisAddress, "argocd-redis-address", "",
		"Argo CD's redis on this cluster, where the agent reads the resource trees of the Applications the hub pulled here (default: the "+
			"GitOps operator's <argocd>-redis Service in openshift-gitops, port 6379)")
	f.StringVar(&o.ArgoCDRedisPasswordSecret, "argocd-redis-password-secret", agent.DefaultRedisPasswordSecret,
		"the Secret of openshift-gitops that holds Argo CD's redis password (key admin.password, as the GitOps operator makes it); empty: no password")
	f.BoolVar(&o.DisableResourceTree, "disable-resource-tree", false,
		"do not report the pulled Applications' resource trees to the hub (its Argo CD UI then shows them without their tree)")
	f.BoolVar(&o.LeaderElection, "leader-elect", false, "elect one active replica through a Lease on the spoke")
	return c
}

// spokeFeatures are the controllers the agent runs on the spoke.
func spokeFeatures() []agent.Feature {
	return []agent.Feature{agent.CRDInstaller, agent.RouteGuard, agent.ExistingArgoCD, agent.PulledApplications, agent.RepositoryCredentials,
		agent.ArgoCDAgentCertificate, agent.ArgoCDAgentHealth}
}
