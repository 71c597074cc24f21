package cmd

import (
	"github.com/spf13/cobra"
)

func newDoctorCommand() *cobra.Command {
	var kubeconfig string
	var hub bool
	c := &cobra.Command{
		Use: "doctor [--hub] --kubeconfig FILE",
		Short: "Check a spoke for a duplicate Route API and a broken /openapi/v2, or (--hub) a hub before it moves from Red Hat ACM; " +
			"exit 0 healthy, 1 problem, 2 could not check",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDoctor(c, kubeconfig, hub)
		},
	}
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to check; empty uses $KUBECONFIG or the in-cluster config")
	c.Flags().BoolVar(&hub, "hub", false, "run the pre-flight checklist of a move from Red Hat ACM's GitOps integration on a hub "+
		"(docs/migrating-from-acm.md); reads only; exit 1 on a blocker")
	return c
}
