// Package demo is what `make demo` does, shared with the end-to-end test that proves it
// (TestRealPods drives the same code, with the same waits): on a started fleet, it joins
// two spokes (vanilla and OpenShift-like), installs gitops-addon with the seed
// GitOpsCluster, runs Argo CD on the hub and the spokes, applies the seed's pull-model
// ApplicationSet, and waits until each spoke's guestbook is Synced and Healthy as the hub
// sees it.
//
// Every wait is on progress, not on a fixed time: it gives up only when what it watches
// has not moved for the stall window, and then says which component is stuck, with the
// end of its log.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/realpods"
)

// Spokes are the demo's managed clusters: a vanilla Kubernetes and an OpenShift-like one.
var Spokes = []string{"vanilla", "openshift"}

// DefaultStall is how long a wait lets nothing move before it gives up. The slowest step
// that shows no progress on its own is one Argo CD comparison of the guestbook (seconds);
// a minute and a half leaves room on a loaded machine and is well under the two to three
// minutes Argo CD waits before it compares an Application again by itself.
const DefaultStall = 90 * time.Second

// ErrStalled is a wait that saw nothing move for its stall window; its message names the
// stuck component and the end of its log.
var ErrStalled = errors.New("nothing moved")

// Options configures a demo.
type Options struct {
	// RealPods runs every part as pods on a node per cluster (needs the fleet started
	// with harness.Options.RealPods).
	RealPods bool
	// Stall is how long a wait lets nothing move; DefaultStall if zero.
	Stall time.Duration
	// Step prints one step, with the time since the start.
	Step func(format string, args ...any)
}

// Demo is a fleet with gitops-addon and the seed applied.
type Demo struct {
	Fleet *harness.Fleet
	// Pods is the real-pod fleet (nodes, images, helm release); nil with processes.
	Pods *realpods.Fleet
	// Binary is the gitops-addon binary run as processes ("" with real pods).
	Binary string
	// Repo is the applications' repository, served at RepoURL.
	Repo    *argocd.Repo
	RepoURL string
	// AppSetCreated is when the seed ApplicationSet was created; FirstSynced is, per
	// spoke, how long after it that spoke's guestbook was first Synced and Healthy on
	// the hub.
	AppSetCreated time.Time
	FirstSynced   map[string]time.Duration
	// Server is the hub's argocd-server (processes only; nil with real pods).
	Server *argocd.Server

	o Options
}

// EnvArgoCDWithUI names an Argo CD binary whose argocd-server embeds its web UI, which our
// targets cannot build (docs/guides/pull-model.md, "The hub's Argo CD UI"); set, the
// demo's hub argocd-server runs from it.
const EnvArgoCDWithUI = "ARGOCD_WITH_UI_BIN"

// SetUp installs gitops-addon on f as the options say, waits until every spoke has the
// GitOps stack, and applies the seed ApplicationSet.
func SetUp(ctx context.Context, f *harness.Fleet, o Options) (*Demo, error) {
	if o.Stall == 0 {
		o.Stall = DefaultStall
	}
	if o.Step == nil {
		o.Step = func(string, ...any) {}
	}
	d := &Demo{Fleet: f, o: o, FirstSynced: map[string]time.Duration{}}
	if o.RealPods {
		return d, d.setUpRealPods(ctx)
	}
	return d, d.setUpProcesses(ctx)
}

// setUpProcesses runs gitops-addon, the GitOps operator and Argo CD as processes, and
// applies the seed ApplicationSet.
func (d *Demo) setUpProcesses(ctx context.Context) error {
	f, step := d.Fleet, d.o.Step
	for _, name := range Spokes {
		step("starting spoke %q and joining it to the hub (bootstrap kubeconfig, CSR, hubAcceptsClient)", name)
		if _, err := f.AddSpoke(ctx, name); err != nil {
			return err
		}
	}
	if err := d.makeOpenShiftLike(ctx); err != nil {
		return err
	}
	step("building gitops-addon and installing the manager chart's objects on the hub")
	binary, err := install.BuildBinary(ctx, filepath.Join(f.WorkDir, "bin"))
	if err != nil {
		return err
	}
	d.Binary = binary
	p, err := install.OnHub(ctx, f, binary)
	if err != nil {
		return err
	}
	if err := p.StartManager(ctx); err != nil {
		return err
	}
	step("applying the seed GitOpsCluster (Placement gitops-managed selects clusters labelled gitops=enabled)")
	for _, name := range Spokes {
		if err := install.SelectCluster(ctx, f.Hub, name, true); err != nil {
			return err
		}
	}
	if err := install.ApplySeed(ctx, f.Hub); err != nil {
		return err
	}
	for _, name := range Spokes {
		go func() {
			if err := p.StartAgent(ctx, f.Spokes[name]); err != nil && ctx.Err() == nil {
				step("agent on %s: %v", name, err)
			}
		}()
	}
	if err := d.WaitConverged(ctx); err != nil {
		return err
	}
	step("starting Argo CD: on the hub the ApplicationSet and application controllers, repo-server and redis; on each spoke the GitOps operator, then the " +
		"application controller and repo-server it makes from the delivered ArgoCD CR")
	var spokes []*harness.Spoke
	for _, name := range Spokes {
		spokes = append(spokes, f.Spokes[name])
	}
	argo, err := argocd.Start(ctx, f, binary, spokes...)
	if err != nil {
		return err
	}
	d.Repo, d.RepoURL = argo.Repo, argo.Repo.URL()
	step("the pulled Applications' resource trees on the hub: each agent reads its Argo CD's redis, the manager writes the hub's; starting " +
		"the hub's argocd-server")
	if d.Server, err = argo.ShowTreesOnTheHub(ctx, f, p, os.Getenv(EnvArgoCDWithUI)); err != nil {
		return err
	}
	appSet, err := argo.ApplicationSet(install.SeedYAML("applicationset.yaml"), "guestbook")
	if err != nil {
		return err
	}
	step("applying the seed ApplicationSet: guestbook from %s to every cluster of Placement gitops-managed, pulled by each spoke", d.RepoURL)
	if err := f.Hub.Client.Create(ctx, appSet); err != nil {
		return err
	}
	d.AppSetCreated = time.Now()
	return nil
}

// setUpRealPods gives every cluster a node and runs everything as pods (realpods): the
// manager from our image and chart (helm), the addon enabled with the seed, the spokes'
// agent, operator and Argo CD from the ManifestWork; then the hub's Argo CD and the seed
// ApplicationSet over a repository served over the Git protocol. The ApplicationSet is
// applied as soon as the stack has landed, as a user would, not once the spokes' Argo CD
// is Ready.
func (d *Demo) setUpRealPods(ctx context.Context) error {
	f, step := d.Fleet, d.o.Step
	step("giving the hub and spokes %s each a node (containerd, kubelet, kube-proxy, CoreDNS, kube-scheduler); "+
		"building the image from the Dockerfile", strings.Join(Spokes, ", "))
	r, err := realpods.Start(ctx, f, filepath.Join(f.WorkDir, "image"), Spokes...)
	if err != nil {
		return err
	}
	d.Pods = r
	if err := d.makeOpenShiftLike(ctx); err != nil {
		return err
	}
	step("starting the hub's Argo CD (processes; its redis where the manager's pod writes the pulled Applications' trees)")
	if err := r.StartHubArgoCD(ctx); err != nil {
		return err
	}
	step("helm install gitops-addon (the manager a pod of the hub, pointed at the hub Argo CD's redis), then the seed GitOpsCluster")
	if err := r.InstallChart(ctx); err != nil {
		return err
	}
	if err := r.EnableAddon(ctx); err != nil {
		return err
	}
	if err := d.WaitConverged(ctx); err != nil {
		return err
	}
	// The hub's argocd-server before the ApplicationSet, as in the process demo.
	step("starting the hub's argocd-server")
	if d.Server, err = argocd.StartServer(ctx, f, r.HubArgoCD, argocd.ServerOptions{UI: os.Getenv(EnvArgoCDWithUI)}); err != nil {
		return err
	}
	step("applying the seed ApplicationSet (the guestbook with a Deployment whose Pod runs on each spoke's node); each spoke's Argo CD " +
		"runs as pods the GitOps operator made, each agent pod reads its redis for the trees")
	if _, err := r.ApplySeedApplicationSet(ctx); err != nil {
		return err
	}
	d.AppSetCreated = time.Now()
	d.Repo, d.RepoURL = r.Repo, r.RepoURL
	return nil
}

func (d *Demo) makeOpenShiftLike(ctx context.Context) error {
	d.o.Step("making %q OpenShift-like: product ClusterClaim and an aggregated route.openshift.io/v1 API server", "openshift")
	routes, err := install.MakeOpenShiftLike(ctx, d.Fleet.Hub, d.Fleet.Spokes["openshift"])
	if err != nil {
		return err
	}
	d.Fleet.OnStop(routes.Stop)
	return nil
}

// WaitConverged shows progress until every addon is Available and the stack has landed.
func (d *Demo) WaitConverged(ctx context.Context) error {
	return d.showProgress(ctx, "the fleet did not converge", func() (string, bool) {
		done := true
		var parts []string
		for _, name := range Spokes {
			s := install.State(ctx, d.Fleet.Hub, d.Fleet.Spokes[name])
			parts = append(parts, fmt.Sprintf("%s: addon %s, %d/%d landed", name, s.Addon, len(s.Landed), len(install.DeliveredObjects)))
			if s.Addon != "Available" || len(s.Landed) != len(install.DeliveredObjects) || s.RouteAPI == "-" {
				done = false
			}
		}
		return strings.Join(parts, " | "), done
	}, d.stuckAddons)
}

// WaitApplications shows progress until each spoke's guestbook is Synced and Healthy as
// the hub sees it, and records when each first was (FirstSynced).
func (d *Demo) WaitApplications(ctx context.Context) error {
	err := d.showProgress(ctx, "the Applications did not sync", func() (string, bool) {
		done := true
		var parts []string
		for _, name := range Spokes {
			status := d.HubApplicationStatus(ctx, name)
			parts = append(parts, name+": "+status)
			if status == "Synced/Healthy" {
				if _, seen := d.FirstSynced[name]; !seen {
					d.FirstSynced[name] = time.Since(d.AppSetCreated)
				}
			} else {
				done = false
			}
		}
		return "guestbook as the hub sees it: " + strings.Join(parts, " | "), done
	}, d.stuckApplications)
	if err == nil {
		var firsts []string
		for _, name := range Spokes {
			firsts = append(firsts, fmt.Sprintf("%s %.1fs", name, d.FirstSynced[name].Seconds()))
		}
		d.o.Step("first Synced/Healthy on the hub after the ApplicationSet was created: %s", strings.Join(firsts, ", "))
	}
	return err
}

// showProgress prints what poll says each time it changes, once a second, until poll
// says done. When the line has not changed for the stall window it fails with what and
// with what stuck says of the components that hold it up.
func (d *Demo) showProgress(ctx context.Context, what string, poll func() (line string, done bool), stuck func(context.Context) string) error {
	last, moved := "", time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		line, done := poll()
		if line != last {
			d.o.Step("%s", line)
			last, moved = line, time.Now()
		}
		if done {
			return nil
		}
		if time.Since(moved) > d.o.Stall {
			return fmt.Errorf("%s: %w for %s (last: %s)\n%s", what, ErrStalled, d.o.Stall, last, stuck(ctx))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// HubApplicationStatus is "sync/health" of the cluster's guestbook Application on the hub.
func (d *Demo) HubApplicationStatus(ctx context.Context, cluster string) string {
	app, err := application(ctx, d.Fleet.Hub.Client, cluster)
	if err != nil {
		return "-"
	}
	sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
	return fmt.Sprintf("%s/%s", orDash(sync), orDash(health))
}

func application(ctx context.Context, c client.Client, cluster string) (*unstructured.Unstructured, error) {
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	return app, c.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "guestbook-" + cluster}, app)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// logLines is how much of a stuck component's log a stall shows.
const logLines = 15

// stuckAddons names, for each spoke whose addon is not Available, the conditions of its
// ManagedClusterAddOn that say why, and the end of its agent's log.
func (d *Demo) stuckAddons(ctx context.Context) string {
	var b strings.Builder
	for _, name := range Spokes {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if err := d.Fleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: contract.AddonName}, mca); err != nil {
			fmt.Fprintf(&b, "%s: no ManagedClusterAddOn %s (%v): the gitops-addon manager on the hub makes it\n%s\n", name, contract.AddonName, err,
				d.logs(d.Fleet.Hub.Name, install.Namespace, "gitops-addon-manager", "gitops-addon-manager"))
			continue
		}
		if c := meta.FindStatusCondition(mca.Status.Conditions, "Available"); c != nil && c.Status == metav1.ConditionTrue {
			continue
		}
		fmt.Fprintf(&b, "%s: the addon is not Available:\n", name)
		for _, c := range mca.Status.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString(d.logs(name, harness.AddonNamespace, contract.AgentDeployment, "gitops-addon-agent"))
	}
	return b.String()
}

// stuckApplications names, for each spoke whose guestbook is not Synced/Healthy on the
// hub, where it is held up: not delivered (the pull model), not compared by the spoke's
// Argo CD (its application controller), a comparison error (the repo-server, when the
// error is one it returned or one reaching it), or a status that has not come back.
func (d *Demo) stuckApplications(ctx context.Context) string {
	var b strings.Builder
	for _, name := range Spokes {
		if d.HubApplicationStatus(ctx, name) == "Synced/Healthy" {
			continue
		}
		spoke := d.Fleet.Spokes[name]
		app, err := application(ctx, spoke.Client, name)
		if err != nil {
			fmt.Fprintf(&b, "%s: guestbook-%s was not delivered to the spoke (%v): the pull model (the gitops-addon manager's ManifestWork, "+
				"OCM's work agent)\n", name, name, err)
			continue
		}
		var conditions []string
		raw, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
		for _, c := range raw {
			if m, ok := c.(map[string]any); ok {
				conditions = append(conditions, fmt.Sprintf("%v: %v", m["type"], m["message"]))
			}
		}
		sort.Strings(conditions)
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		fmt.Fprintf(&b, "%s: on the spoke guestbook-%s is %s; conditions: %s\n", name, name, orDash(sync), orDash(strings.Join(conditions, "; ")))
		switch {
		case strings.Contains(strings.Join(conditions, " "), "ComparisonError"):
			why := "it returned an error: the Git repository or the manifests"
			if strings.Contains(strings.Join(conditions, " "), "code = Unavailable") {
				why = "the application controller could not reach it"
			}
			fmt.Fprintf(&b, "  stuck: the repo-server on %s (%s)\n", name, why)
			b.WriteString(d.logs(name, contract.GitOpsNamespace, contract.ArgoCDName+"-repo-server", "argocd-repo-server"))
		case sync == "" || sync == "Unknown":
			fmt.Fprintf(&b, "  stuck: the application controller on %s (it has not compared the Application)\n", name)
			b.WriteString(d.logs(name, contract.GitOpsNamespace, contract.ArgoCDName+"-application-controller", "argocd-application-controller"))
		default:
			fmt.Fprintf(&b, "  stuck: the status on its way back to the hub (OCM's work agent on %s, the gitops-addon manager)\n", name)
			b.WriteString(d.logs(name, "", "", "work-agent"))
		}
	}
	return b.String()
}

// logs is the end of a component's log on a cluster: with real pods, of the pods named
// after podPrefix in namespace; with processes (or for a process of either fleet, like
// OCM's agents), of the process named "<cluster>-<process>".
func (d *Demo) logs(cluster, namespace, podPrefix, process string) string {
	if d.Pods != nil && podPrefix != "" {
		if out := d.podLogs(cluster, namespace, podPrefix); out != "" {
			return out
		}
	}
	for _, p := range d.Fleet.Processes() {
		if p.Name == cluster+"-"+process {
			return fmt.Sprintf("--- %s (%s)\n%s\n", p.Name, p.LogFile, p.Tail(logLines))
		}
	}
	return fmt.Sprintf("  (no log of %s found on %s)\n", process, cluster)
}

// podLogs is the end of the logs of the pods of namespace on the cluster's node whose
// names start with prefix.
func (d *Demo) podLogs(cluster, namespace, prefix string) string {
	node := d.Pods.Nodes[cluster]
	c := d.Fleet.Hub.Client
	if cluster != d.Fleet.Hub.Name {
		c = d.Fleet.Spokes[cluster].Client
	}
	if node == nil {
		return ""
	}
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(namespace)); err != nil {
		return ""
	}
	var b strings.Builder
	for _, pod := range pods.Items {
		if strings.HasPrefix(pod.Name, prefix) {
			b.WriteString(node.PodLogs(namespace, pod.Name, logLines))
		}
	}
	return b.String()
}

// Out writes the demo's closing table and hints to w.
func (d *Demo) Out(w io.Writer) {
	printTable(context.Background(), w, d)
	printHowToLookAround(w, d)
}
