package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gitops-addon/gitops-addon/pkg/version"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.OutOrStdout(), version.String())
			return err
		},
	}
}
