package cmd

import (
	"github.com/spf13/cobra"

	"github.com/gitops-addon/gitops-addon/pkg/render"
	"github.com/gitops-addon/gitops-addon/pkg/version"
)

func newRenderCommand() *cobra.Command {
	var o render.Options
	var explainRBAC bool
	c := &cobra.Command{
		Use:   "render --cluster NAME [--openshift] [-f values.yaml] [--set key=value] [--explain-rbac]",
		Short: "Print, without any cluster, the objects the hub would ship to a managed cluster",
		Long: "render runs the addon's own rendering for one cluster and prints the objects as YAML, for review in Git.\n" +
			"Without --openshift the cluster is taken as a Kubernetes cluster known to have no Route API.\n" +
			"With --explain-rbac it says instead, in words, what the spoke's Argo CD may manage and what it may not.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			objects, err := render.Objects(c.Context(), o)
			if err != nil {
				return err
			}
			if explainRBAC {
				return render.ExplainRBAC(c.OutOrStdout(), objects)
			}
			return render.Print(c.OutOrStdout(), objects)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Cluster, "cluster", "", "managed cluster name (required)")
	f.BoolVar(&o.OpenShift, "openshift", false, "render for an OpenShift cluster")
	f.StringVar(&o.KubeVersion, "kube-version", "",
		"the cluster's Kubernetes version, as its ManagedCluster reports it (before v1.30 the agent's admission policy is left out); empty: a current one")
	f.StringSliceVarP(&o.ValueFiles, "values", "f", nil, "chart values file(s), as helm --values")
	f.StringArrayVar(&o.Values, "set", nil, "chart value key=value, as helm --set")
	f.StringVar(&o.AgentImage, "agent-image", version.Image(), "spoke agent image, as the manager's --agent-image")
	f.StringVar(&o.OperatorImage, "operator-image", "", "GitOps operator image, as the manager's --operator-image")
	f.BoolVar(&explainRBAC, "explain-rbac", false, "explain in words what the spoke's Argo CD may manage, instead of printing the objects")
	_ = c.MarkFlagRequired("cluster")
	c.AddCommand(newRenderPrincipalCommand())
	return c
}

func newRenderPrincipalCommand() *cobra.Command {
	var o render.PrincipalOptions
	c := &cobra.Command{
		Use:   "principal --namespace NS --name ARGOCD [--clusters a,b]",
		Short: "Print the ArgoCD CR settings the hub's Argo CD needs to run the Argo CD Agent principal with gitops-addon's trust",
		Long: "principal prints spec.argoCDAgent.principal for the hub's ArgoCD CR: the mTLS auth pattern that reads the agent name from\n" +
			"the client certificates OCM issues, the certificate and JWT Secrets gitops-addon keeps in the namespace, and the agents'\n" +
			"namespaces (their cluster namespaces, for managed mode). gitops-addon never writes the hub's Argo CD: merge it yourself.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return render.Principal(c.OutOrStdout(), o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Namespace, "namespace", "openshift-gitops", "the GitOpsCluster's argoServer.argoNamespace (where the hub's Argo CD and the certificates are)")
	f.StringVar(&o.Name, "name", "openshift-gitops", "the name of the hub's ArgoCD CR")
	f.StringSliceVar(&o.Clusters, "clusters", nil, "the Argo CD Agent mode clusters, whose namespaces the principal serves in managed mode")
	return c
}
