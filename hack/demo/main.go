// Command demo runs gitops-addon on a local fleet: a real OCM hub and two spokes (one
// vanilla, one OpenShift-like) as processes on 127.0.0.1, with the seed GitOpsCluster
// applied. It prints what landed where and keeps the fleet up until Ctrl-C, then removes
// every process and file it started. `make demo` builds what is missing and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
)

var spokes = []string{"vanilla", "openshift"}

func main() {
	timeout := flag.Duration("timeout", 5*time.Minute, "give up when the fleet has not converged by then")
	exitWhenReady := flag.Bool("exit-when-ready", false, "print the table and stop (for scripts), instead of waiting for Ctrl-C")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *timeout, *exitWhenReady); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, timeout time.Duration, exitWhenReady bool) (err error) {
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	step("starting the hub: etcd, kube-apiserver, kube-controller-manager, OCM registration, work, placement and addon-manager")
	f, err := harness.Start(ctx, harness.Options{Logf: func(format string, args ...any) { step("  "+format, args...) }})
	if err != nil {
		return err
	}
	defer func() {
		step("stopping every process of the fleet...")
		if stopErr := f.Stop(); stopErr != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping the fleet:", stopErr)
		}
		step("stopped; nothing is left running")
	}()
	defer func() {
		if err != nil && !errors.Is(err, context.Canceled) {
			f.DumpLogs(os.Stderr, 20)
		}
	}()

	converge, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := setUp(converge, f, step)
	if err != nil {
		return err
	}
	if err := waitConverged(converge, f, p, step); err != nil {
		return err
	}
	printTable(ctx, f)
	printHowToLookAround(f, p)
	step("ready in %s", time.Since(start).Round(time.Second))
	if exitWhenReady {
		return nil
	}
	fmt.Println("\nThe fleet keeps running. Press Ctrl-C to stop it and clean up.")
	<-ctx.Done()
	fmt.Println()
	return nil
}

func setUp(ctx context.Context, f *harness.Fleet, step func(string, ...any)) (*install.Product, error) {
	for _, name := range spokes {
		step("starting spoke %q and joining it to the hub (bootstrap kubeconfig, CSR, hubAcceptsClient)", name)
		if _, err := f.AddSpoke(ctx, name); err != nil {
			return nil, err
		}
	}
	step("making %q OpenShift-like: product ClusterClaim and an aggregated route.openshift.io/v1 API server", "openshift")
	routes, err := install.MakeOpenShiftLike(ctx, f.Hub, f.Spokes["openshift"])
	if err != nil {
		return nil, err
	}
	f.OnStop(routes.Stop)
	step("building gitops-addon and installing the manager chart's objects on the hub")
	binary, err := install.BuildBinary(ctx, filepath.Join(f.WorkDir, "bin"))
	if err != nil {
		return nil, err
	}
	p, err := install.OnHub(ctx, f, binary)
	if err != nil {
		return nil, err
	}
	if err := p.StartManager(ctx); err != nil {
		return nil, err
	}
	step("applying the seed GitOpsCluster (Placement gitops-managed selects clusters labelled gitops=enabled)")
	for _, name := range spokes {
		if err := install.SelectCluster(ctx, f.Hub, name, true); err != nil {
			return nil, err
		}
	}
	if err := install.ApplySeed(ctx, f.Hub); err != nil {
		return nil, err
	}
	for _, name := range spokes {
		go func() {
			if err := p.StartAgent(ctx, f.Spokes[name]); err != nil && ctx.Err() == nil {
				step("agent on %s: %v", name, err)
			}
		}()
	}
	return p, nil
}

// waitConverged shows progress until every addon is Available and the stack has landed.
func waitConverged(ctx context.Context, f *harness.Fleet, p *install.Product, step func(string, ...any)) error {
	last := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		done := true
		var parts []string
		for _, name := range spokes {
			s := install.State(ctx, f.Hub, f.Spokes[name])
			parts = append(parts, fmt.Sprintf("%s: addon %s, %d/%d landed", name, s.Addon, len(s.Landed), len(install.DeliveredObjects)))
			if s.Addon != "Available" || len(s.Landed) != len(install.DeliveredObjects) || s.RouteAPI == "-" {
				done = false
			}
		}
		if line := strings.Join(parts, " | "); line != last {
			step("%s", line)
			last = line
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the fleet did not converge: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func printTable(ctx context.Context, f *harness.Fleet) {
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tFLAVOUR\tADDON\tROUTE API\tROUTES CRD\tLANDED ON THE SPOKE")
	for _, name := range spokes {
		s := install.State(ctx, f.Hub, f.Spokes[name])
		routesCRD := "absent"
		if s.RoutesCRD {
			routesCRD = "installed"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Cluster, s.Flavour, s.Addon, s.RouteAPI, routesCRD, strings.Join(s.Landed, ", "))
	}
	_ = w.Flush()
}

func printHowToLookAround(f *harness.Fleet, p *install.Product) {
	hub := f.Hub.Kubeconfig
	fmt.Printf("\nKubeconfigs:\n  hub        %s\n", hub)
	for _, name := range spokes {
		fmt.Printf("  %-10s %s\n", name, f.Spokes[name].Kubeconfig)
	}
	fmt.Printf("Logs of every process: %s\n", filepath.Join(f.WorkDir, "logs"))
	fmt.Println("\nLook around:")
	fmt.Printf("  kubectl --kubeconfig %s get gitopsclusters -A\n", hub)
	fmt.Printf("  kubectl --kubeconfig %s get managedclusteraddons -A\n", hub)
	fmt.Printf("  kubectl --kubeconfig %s get manifestworks -A\n", hub)
	fmt.Printf("  kubectl --kubeconfig %s get secrets -n openshift-gitops -l argocd.argoproj.io/secret-type=cluster\n", hub)
	for _, name := range spokes {
		fmt.Printf("  kubectl --kubeconfig %s get deploy,argocds -n openshift-gitops\n", f.Spokes[name].Kubeconfig)
	}
	fmt.Printf("  %s doctor --kubeconfig %s\n", p.Binary, f.Spokes["openshift"].Kubeconfig)
}
