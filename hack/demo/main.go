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
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/realpods"
)

var spokes = []string{"vanilla", "openshift"}

func main() {
	timeout := flag.Duration("timeout", 5*time.Minute, "give up when the fleet has not converged by then")
	exitWhenReady := flag.Bool("exit-when-ready", false, "print the table and stop (for scripts), instead of waiting for Ctrl-C")
	realPods := flag.Bool("real-pods", false, "run every cluster with a node (containerd, kubelet) and gitops-addon, the GitOps operator and "+
		"the spokes' Argo CD as pods, from the image built from the Dockerfile and the chart installed with helm (needs root: make pods-env)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *timeout, *exitWhenReady, *realPods)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, timeout time.Duration, exitWhenReady, realPods bool) (err error) {
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
		if err != nil && !errors.Is(err, context.Canceled) {
			f.DumpLogs(os.Stderr, 20)
		}
	}()

	converge, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var look lookAround
	if realPods {
		look, err = setUpRealPods(converge, f, step)
	} else {
		look, err = setUpProcesses(converge, f, step)
	}
	if err != nil {
		return err
	}
	if err := waitApplications(converge, f, step); err != nil {
		return err
	}
	printTable(ctx, f)
	printHowToLookAround(f, look)
	step("ready in %s", time.Since(start).Round(time.Second))
	if exitWhenReady {
		return nil
	}
	fmt.Println("\nThe fleet keeps running. Press Ctrl-C to stop it and clean up.")
	<-ctx.Done()
	fmt.Println()
	return nil
}

// lookAround is what the demo's closing hints name: the gitops-addon binary for
// `doctor` (empty when it runs only in pods) and the applications' repository.
type lookAround struct {
	binary  string
	repo    *argocd.Repo
	repoURL string
}

// setUpProcesses runs gitops-addon, the GitOps operator and Argo CD as processes, and
// applies the seed ApplicationSet.
func setUpProcesses(ctx context.Context, f *harness.Fleet, step func(string, ...any)) (lookAround, error) {
	p, err := setUp(ctx, f, step)
	if err != nil {
		return lookAround{}, err
	}
	if err := waitConverged(ctx, f, step); err != nil {
		return lookAround{}, err
	}
	argo, err := startArgoCD(ctx, f, p.Binary, step)
	if err != nil {
		return lookAround{}, err
	}
	return lookAround{binary: p.Binary, repo: argo.Repo, repoURL: argo.Repo.URL()}, nil
}

// setUpRealPods gives every cluster a node and runs everything as pods (realpods): the
// manager from our image and chart (helm), the addon enabled with the seed, the spokes'
// agent, operator and Argo CD from the ManifestWork; then the hub's Argo CD and the seed
// ApplicationSet over a repository served over the Git protocol.
func setUpRealPods(ctx context.Context, f *harness.Fleet, step func(string, ...any)) (lookAround, error) {
	step("giving the hub and spokes %s each a node (containerd, kubelet, kube-proxy, CoreDNS, kube-scheduler); "+
		"building the image from the Dockerfile", strings.Join(spokes, ", "))
	r, err := realpods.Start(ctx, f, filepath.Join(f.WorkDir, "image"), spokes...)
	if err != nil {
		return lookAround{}, err
	}
	step("making %q OpenShift-like: product ClusterClaim and an aggregated route.openshift.io/v1 API server", "openshift")
	routes, err := install.MakeOpenShiftLike(ctx, f.Hub, f.Spokes["openshift"])
	if err != nil {
		return lookAround{}, err
	}
	f.OnStop(routes.Stop)
	step("helm install gitops-addon (the manager a pod of the hub), then the seed GitOpsCluster")
	if err := r.InstallChart(ctx); err != nil {
		return lookAround{}, err
	}
	if err := r.EnableAddon(ctx); err != nil {
		return lookAround{}, err
	}
	if err := waitConverged(ctx, f, step); err != nil {
		return lookAround{}, err
	}
	step("starting the hub's Argo CD and applying the seed ApplicationSet; each spoke's Argo CD runs as pods the GitOps operator made")
	if _, err := r.ApplySeedApplicationSet(ctx); err != nil {
		return lookAround{}, err
	}
	return lookAround{repo: r.Repo, repoURL: r.RepoURL}, nil
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
func waitConverged(ctx context.Context, f *harness.Fleet, step func(string, ...any)) error {
	return showProgress(ctx, step, "the fleet did not converge", func() (string, bool) {
		done := true
		var parts []string
		for _, name := range spokes {
			s := install.State(ctx, f.Hub, f.Spokes[name])
			parts = append(parts, fmt.Sprintf("%s: addon %s, %d/%d landed", name, s.Addon, len(s.Landed), len(install.DeliveredObjects)))
			if s.Addon != "Available" || len(s.Landed) != len(install.DeliveredObjects) || s.RouteAPI == "-" {
				done = false
			}
		}
		return strings.Join(parts, " | "), done
	})
}

// showProgress prints what poll says each time it changes, once a second, until poll
// says done or ctx ends (failing with what).
func showProgress(ctx context.Context, step func(string, ...any), what string, poll func() (line string, done bool)) error {
	last := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		line, done := poll()
		if line != last {
			step("%s", line)
			last = line
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// startArgoCD runs the hub's Argo CD and each spoke's operator and instance, then applies
// the seed's ApplicationSet over the local repository's guestbook.
func startArgoCD(ctx context.Context, f *harness.Fleet, agentBinary string, step func(string, ...any)) (*argocd.Fleet, error) {
	step("starting Argo CD: on the hub the ApplicationSet and application controllers, repo-server and redis; on each spoke the GitOps operator, then the " +
		"application controller and repo-server it makes from the delivered ArgoCD CR")
	var spokeList []*harness.Spoke
	for _, name := range spokes {
		spokeList = append(spokeList, f.Spokes[name])
	}
	argo, err := argocd.Start(ctx, f, agentBinary, spokeList...)
	if err != nil {
		return nil, err
	}
	appSet, err := argo.ApplicationSet(install.SeedYAML("applicationset.yaml"), "guestbook")
	if err != nil {
		return nil, err
	}
	step("applying the seed ApplicationSet: guestbook from %s to every cluster of Placement gitops-managed, pulled by each spoke", argo.Repo.URL())
	return argo, f.Hub.Client.Create(ctx, appSet)
}

// waitApplications shows progress until each spoke's guestbook is Synced and Healthy as
// the hub sees it.
func waitApplications(ctx context.Context, f *harness.Fleet, step func(string, ...any)) error {
	return showProgress(ctx, step, "the Applications did not sync", func() (string, bool) {
		done := true
		var parts []string
		for _, name := range spokes {
			status := hubApplicationStatus(ctx, f, name)
			parts = append(parts, name+": "+status)
			done = done && status == "Synced/Healthy"
		}
		return "guestbook as the hub sees it: " + strings.Join(parts, " | "), done
	})
}

// hubApplicationStatus is "sync/health" of the cluster's guestbook Application on the hub.
func hubApplicationStatus(ctx context.Context, f *harness.Fleet, cluster string) string {
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "openshift-gitops", Name: "guestbook-" + cluster}, app); err != nil {
		return "-"
	}
	sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
	return fmt.Sprintf("%s/%s", orDash(sync), orDash(health))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printTable(ctx context.Context, f *harness.Fleet) {
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tFLAVOUR\tADDON\tROUTE API\tROUTES CRD\tGUESTBOOK (HUB VIEW)\tLANDED ON THE SPOKE")
	for _, name := range spokes {
		s := install.State(ctx, f.Hub, f.Spokes[name])
		routesCRD := "absent"
		if s.RoutesCRD {
			routesCRD = "installed"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Cluster, s.Flavour, s.Addon, s.RouteAPI, routesCRD,
			hubApplicationStatus(ctx, f, name), strings.Join(s.Landed, ", "))
	}
	_ = w.Flush()
}

func printHowToLookAround(f *harness.Fleet, look lookAround) {
	hub := f.Hub.Kubeconfig
	vanilla, openshift := f.Spokes["vanilla"].Kubeconfig, f.Spokes["openshift"].Kubeconfig
	fmt.Printf("\nKubeconfigs:\n  hub        %s\n", hub)
	for _, name := range spokes {
		fmt.Printf("  %-10s %s\n", name, f.Spokes[name].Kubeconfig)
	}
	fmt.Printf("Git repository: %s\n", look.repoURL)
	fmt.Printf("Logs of every process: %s\n", filepath.Join(f.WorkDir, "logs"))
	fmt.Println("\nLook around:")
	fmt.Printf("  kubectl --kubeconfig %s get gitopsclusters,applicationsets,applications -n openshift-gitops\n", hub)
	fmt.Printf("  kubectl --kubeconfig %s get managedclusteraddons,manifestworks -A\n", hub)
	fmt.Printf("  kubectl --kubeconfig %s get multiclusterapplicationsetreports -n openshift-gitops -o yaml\n", hub)
	for _, name := range spokes {
		fmt.Printf("  kubectl --kubeconfig %s get deploy,statefulsets,argocds,applications -n openshift-gitops\n", f.Spokes[name].Kubeconfig)
	}
	if look.binary != "" {
		fmt.Printf("  %s doctor --kubeconfig %s\n", look.binary, openshift)
	} else {
		fmt.Printf("  kubectl --kubeconfig %s get pods -A -o wide\n", openshift)
	}
	fmt.Println("\nTry this:")
	fmt.Println("  1. Drift: change the guestbook on a spoke; its Argo CD puts it back within seconds (self-heal), the hub stays Synced:")
	fmt.Printf("     kubectl --kubeconfig %s -n guestbook patch configmap guestbook-ui --type merge -p '{\"data\":{\"color\":\"red\"}}'\n", vanilla)
	fmt.Printf("     kubectl --kubeconfig %s -n guestbook get configmap guestbook-ui -o jsonpath='{.data.color}'\n", vanilla)
	fmt.Println("  2. A new commit: its revision reaches the hub's Applications (about 20 s):")
	fmt.Printf("     cd %s && sed -i 's/color: blue/color: green/' guestbook/configmap.yaml && git commit -qam green && git push -q origin "+
		"main\n", look.repo.WorkDir())
	fmt.Printf("     kubectl --kubeconfig %s get applications -n openshift-gitops -o "+
		"custom-columns=NAME:.metadata.name,SYNC:.status.sync.status,REVISION:.status.sync.revision\n", hub)
	fmt.Println("  3. RBAC: an Application with a kind outside the spoke's allowlist fails with the forbidden error on the hub:")
	fmt.Printf("     kubectl --kubeconfig %s -n openshift-gitops patch applicationset guestbook --type json -p "+
		"'[{\"op\":\"replace\",\"path\":\"/spec/template/spec/source/path\",\"value\":\"priority\"}]'\n", hub)
	fmt.Printf("     kubectl --kubeconfig %s get applications -n openshift-gitops -o jsonpath='{range .items[*]}{.metadata.name}: "+
		"{.status.conditions[*].message}{\"\\n\"}{end}'\n", hub)
	fmt.Println("  4. The Routes trap: a duplicate Routes CRD on the OpenShift-like spoke is refused by the agent's admission policy:")
	fmt.Printf("     kubectl --kubeconfig %s apply -f %s\n", openshift, writeRoutesCRD(f))
	fmt.Println("  5. Take a cluster out of the Placement: its Argo CD stays until it has pruned the guestbook Application, then the")
	fmt.Println("     GitOps stack leaves it; CRDs and its own Applications stay. Watch AddOnsReady say WaitingForApplications:")
	fmt.Printf("     kubectl --kubeconfig %s label managedcluster vanilla gitops-\n", hub)
	fmt.Printf("     kubectl --kubeconfig %s -n openshift-gitops get gitopscluster gitops-managed -o "+
		"jsonpath='{.status.conditions[?(@.type==\"AddOnsReady\")].message}{\"\\n\"}'\n", hub)
}

// writeRoutesCRD writes the Routes CRD the agent installs on vanilla clusters to the
// fleet's directory, for the Routes-trap exercise; "" if it cannot.
func writeRoutesCRD(f *harness.Fleet) string {
	embedded, err := crdinstall.Load()
	if err != nil {
		return ""
	}
	crd, err := embedded.Routes.Decode()
	if err != nil {
		return ""
	}
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	raw, err := yaml.Marshal(crd)
	if err != nil {
		return ""
	}
	file := filepath.Join(f.WorkDir, "routes-crd.yaml")
	if os.WriteFile(file, raw, 0o600) != nil {
		return ""
	}
	return file
}
