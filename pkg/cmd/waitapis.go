package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-addon/gitops-addon/pkg/spoke/apiwait"
)

func newWaitForAPIsCommand() *cobra.Command {
	o := apiwait.Options{Interval: 2 * time.Second}
	var kubeconfig string
	c := &cobra.Command{
		Use:   "wait-for-apis --api GROUP/VERSION ...",
		Short: "Wait until the cluster serves API group/versions (the GitOps operator's init container)",
		Long: "wait-for-apis returns once every --api group/version is served, and fails after --timeout naming those\n" +
			"still missing. The GitOps operator checks once, at start, whether Routes exist; its init container waits\n" +
			"for the Argo CD and Routes APIs the spoke agent installs, so that the operator never starts before them.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			d, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return err
			}
			log := ctrl.Log.WithName("wait-for-apis")
			o.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
			return apiwait.Wait(c.Context(), d, o)
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses $KUBECONFIG or the in-cluster config")
	f.StringSliceVar(&o.GroupVersions, "api", nil, "an API group/version to wait for (repeatable), e.g. route.openshift.io/v1")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait")
	return c
}
