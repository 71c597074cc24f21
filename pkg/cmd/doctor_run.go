package cmd

import (
	"github.com/spf13/cobra"

	"github.com/gitops-addon/gitops-addon/pkg/doctor"
)

// runDoctor runs the checks and turns doctor's verdict into the exit code.
func runDoctor(c *cobra.Command, kubeconfig string, hub bool) error {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		c.PrintErrln("Error: cannot load the kubeconfig:", err)
		return exitError{code: 2}
	}
	run := doctor.Run
	if hub {
		run = doctor.RunHub
	}
	if code := run(c.Context(), cfg, c.OutOrStdout()); code != 0 {
		return exitError{code: code}
	}
	return nil
}
