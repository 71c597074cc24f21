package cmd

import (
	"github.com/spf13/cobra"
)

func newDoctorCommand() *cobra.Command {
	var kubeconfig string
	c := &cobra.Command{
		Use:   "doctor --kubeconfig FILE",
		Short: "Check a cluster for a duplicate Route API and a broken /openapi/v2; exit 0 healthy, 1 problem, 2 could not check",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDoctor(c, kubeconfig)
		},
	}
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to check; empty uses $KUBECONFIG or the in-cluster config")
	return c
}
