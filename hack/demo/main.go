// Command demo runs gitops-addon on a local fleet: a real OCM hub and two spokes (one
// vanilla, one OpenShift-like) as processes on 127.0.0.1, with the seed GitOpsCluster
// applied, real Argo CD on the hub, the real GitOps operator and the Argo CD it makes on
// each spoke, and the seed's pull-model ApplicationSet deploying the guestbook from a
// local Git repository. It prints what landed where and how each Application looks from
// the hub, keeps the fleet up until Ctrl-C, then removes every process and file it
// started. `make demo` builds what is missing and runs it.
//
// With -real-pods (`make demo REAL_PODS=1`) every cluster has a node that runs pods, and
// gitops-addon runs as users run it: the manager a pod from the image built from our
// Dockerfile and the chart installed with helm; each spoke's agent, GitOps operator and
// the Argo CD the operator makes, pods from the addon's ManifestWork. After Ctrl-C the
// demo checks that the machine is as it was: no process, mount, network device, iptables
// rule, cgroup or file outside its work directory left.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gitops-addon/gitops-addon/test/demo"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

func main() {
	stall := flag.Duration("stall", demo.DefaultStall, "give up when nothing has moved for this long, naming the component that is stuck")
	exitWhenReady := flag.Bool("exit-when-ready", false, "print the table and stop (for scripts), instead of waiting for Ctrl-C")
	realPods := flag.Bool("real-pods", false, "run every cluster with a node (containerd, kubelet) and gitops-addon, the GitOps operator and "+
		"the spokes' Argo CD as pods, from the image built from the Dockerfile and the chart installed with helm (needs root: make pods-env)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *stall, *exitWhenReady, *realPods)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stall time.Duration, exitWhenReady, realPods bool) (err error) {
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	step("starting the hub: etcd, kube-apiserver, kube-controller-manager, OCM registration, work, placement and addon-manager")
	f, err := harness.Start(ctx, harness.Options{Logf: func(format string, args ...any) { step("  "+format, args...) }, RealPods: realPods})
	if err != nil {
		return err
	}
	defer func() {
		step("stopping every process of the fleet...")
		if stopErr := f.Stop(); stopErr != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping the fleet:", stopErr)
		}
		if left := f.Leftovers(); len(left) > 0 {
			err = errors.Join(err, fmt.Errorf("the fleet left on this machine: %s", strings.Join(left, "; ")))
			return
		}
		step("stopped; nothing is left: no process, mount, network device, iptables rule, cgroup or file outside %s", f.WorkDir)
	}()

	defer func() {
		// A stall names its component and log already; any other failure shows every log's end.
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, demo.ErrStalled) {
			f.DumpLogs(os.Stderr, 20)
		}
	}()
	d, err := demo.SetUp(ctx, f, demo.Options{RealPods: realPods, Stall: stall, Step: step})
	if err != nil {
		return err
	}
	if err := d.WaitApplications(ctx); err != nil {
		return err
	}
	d.Out(os.Stdout)
	step("ready in %s", time.Since(start).Round(time.Second))
	if exitWhenReady {
		return nil
	}
	fmt.Println("\nThe fleet keeps running. Press Ctrl-C to stop it and clean up.")
	<-ctx.Done()
	fmt.Println()
	return nil
}
