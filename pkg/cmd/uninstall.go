package cmd

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/hub/uninstall"
)

func newUninstallCommand() *cobra.Command {
	o := uninstall.Options{Namespace: os.Getenv("POD_NAMESPACE")}
	if o.Namespace == "" {
		o.Namespace = "open-cluster-management-addon"
	}
	var kubeconfig string
	c := &cobra.Command{
		Use:   "uninstall [--yes]",
		Short: "Take gitops-addon off the hub without losing anything or leaving anything stuck (a dry run unless --yes)",
		Long: "uninstall stops the manager, makes every gitops-addon ManifestWork orphan its objects (the spokes keep their\n" +
			"GitOps stack running), releases every GitOpsCluster's finalizer, deletes the ManagedClusterAddOns gitops-addon\n" +
			"created and, last, the ClusterManagementAddOn. It keeps the CRDs, the GitOpsClusters, the hub's Argo CD\n" +
			"Applications, the Argo CD cluster Secrets and the ApplicationSet placement ConfigMap and RBAC.\n" +
			"Without --yes it only prints what it would do. Run it before `helm uninstall`.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			scheme, err := manager.NewScheme()
			if err != nil {
				return err
			}
			hub, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return err
			}
			o.Out = c.OutOrStdout()
			return uninstall.Run(c.Context(), hub, o)
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "hub kubeconfig file; empty uses $KUBECONFIG or the in-cluster config")
	f.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "the manager's release namespace (default $POD_NAMESPACE, else open-cluster-management-addon)")
	f.BoolVar(&o.Yes, "yes", false, "do it; without it, only print what would be done")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for the manager to stop and for the ManagedClusterAddOns to go")
	return c
}
