// Package cmd holds the cobra commands of the gitops-addon binary. Commands only parse
// flags and call the packages that do the work.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitops-addon/gitops-addon/pkg/memlimit"
)

// exitError carries a process exit code other than 1 (doctor's 0/1/2 contract).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", e.code) }

// Execute runs the command line and returns the process exit code.
func Execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := NewRootCommand()
	if err := root.ExecuteContext(ctx); err != nil {
		var exit exitError
		if errors.As(err, &exit) {
			return exit.code
		}
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// NewRootCommand builds the command tree.
func NewRootCommand() *cobra.Command {
	zapOpts := &zap.Options{}
	root := &cobra.Command{
		Use:           "gitops-addon",
		Short:         "Deliver and keep healthy the GitOps stack on every cluster of an Open Cluster Management fleet",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(zapOpts)))
			limit, err := memlimit.FromEnvironment()
			if err != nil {
				return err
			}
			if limit > 0 {
				ctrl.Log.Info("Go memory limit set from the container's", "bytes", limit, "fraction", memlimit.Fraction)
			}
			memlimit.GCFromEnvironment()
			return nil
		},
	}
	goflags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(goflags)
	root.PersistentFlags().AddGoFlagSet(goflags)
	root.AddCommand(
		newManagerCommand(),
		newAgentCommand(),
		newRenderCommand(),
		newDoctorCommand(),
		newUninstallCommand(),
		newSpokeTeardownCommand(),
		newWaitForAPIsCommand(),
		newVersionCommand(),
	)
	return root
}
