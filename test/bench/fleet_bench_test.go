package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/workstandin"
)

// BenchmarkFleet measures the hub manager (`gitops-addon manager`, ./bin/gitops-addon)
// at fleet scale on a real OCM hub (test/harness: etcd, kube-apiserver with an audit log,
// kube-controller-manager, OCM's registration, placement and addon hub controllers), one
// fresh hub per size. The manager is installed as test/install does for the e2e test:
// the chart's objects applied, the manager a process under the chart's ServiceAccount,
// so the audit log tells its writes apart. For each size N of FLEET_BENCH_SIZES (default
// "100"; `make bench-fleet` runs 100,1000):
//
//   - N ManagedClusters without klusterlets: the benchmark reports them joined and
//     available and renews their leases every 60 s, as registration agents do (not timed);
//     a Placement selects all of them, a GitOpsCluster with the addon enabled uses it;
//
//   - propagation: from creating the GitOpsCluster until every cluster has its Argo CD
//     cluster Secret, its ManagedClusterAddOn and its ManifestWorks (polled every 250 ms,
//     1 s at 1,000 clusters), with a timeline of the writes of the manager and of OCM's
//     hub controllers in between (the addon-framework in the manager writes the
//     ManifestWorks only after OCM's addon manager has owned and configured the addon);
//
//   - the floor: the same Secrets, ManagedClusterAddOns and ManifestWorks (copies, in
//     namespaces and under names the manager does not watch) created by a plain client,
//     with 16 writers, and with one writer per kind as the manager's single-worker
//     controllers write; ratio = propagation / floor;
//
//   - the ManifestWorks' bytes on the hub (whole objects without managedFields, and spec);
//
//   - the manager's API writes from the audit log: during propagation, in 60 s of steady
//     state once it made none for 30 s, and in 60 s while every ManagedCluster's labels
//     change every 10 s and its lease is renewed;
//
//   - convergence after the Placement shrinks to N/2 clusters, and after the GitOpsCluster
//     is deleted;
//
//   - the manager's peak RSS and CPU time (from /proc);
//
//   - all writes (every user) per cluster during propagation, the CPU the hub's apiserver,
//     etcd and OCM's addon-manager spent in it, their peak RSS and etcd's database size;
//
//     (FLEET_BENCH_PHASES=propagation stops after the floor: no steady state, churn,
//     shrink, deletion or template phase);
//
//   - last, on the same hub and clusters, the mechanism Red Hat ACM delivers its
//     gitops-addon with (fleet_template_test.go): an AddOnTemplate carrying the objects our
//     addon rendered, driven by OCM's addon-manager, enabled per cluster as ACM's
//     GitOpsCluster controller does it; the same figures, and ours as a ratio to it.
//
//     make e2e-env build
//     FLEET_BENCH_SIZES=100,1000 go test -run '^$' -bench BenchmarkFleet -benchtime 1x -timeout 240m ./test/bench/
//
// Progress goes to stderr as it happens; the table of results goes to stdout at the end
// of each size (the testing package truncates a benchmark's log to its first lines), the
// main figures also as benchmark metrics. The report is docs/benchmarks.md.
func BenchmarkFleet(b *testing.B) {
	sizes := os.Getenv("FLEET_BENCH_SIZES")
	if sizes == "" {
		sizes = "100"
	}
	for _, size := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(size))
		if err != nil || n < 2 {
			b.Fatalf("FLEET_BENCH_SIZES entry %q: want a number of clusters, at least 2", size)
		}
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for range b.N {
				runFleetBenchmark(b, n)
			}
		})
	}
}

const (
	// managerUser is the identity the manager runs as (test/install: the chart's
	// ServiceAccount), as the e2e test reads it from the audit log.
	managerUser       = "system:serviceaccount:" + install.Namespace + ":gitops-addon-manager"
	gitopsClusterName = "fleet-bench"
	placementName     = "fleet-bench"
	// floorManagedBy replaces app.kubernetes.io/managed-by=gitops-addon on the floor's
	// copies (same length), so the manager's caches never see them; floorAddonName names
	// the floor's ManagedClusterAddOns and labels its ManifestWorks.
	floorManagedBy = "bench-floor0"
	floorAddonName = "gitops-floor"
	// floorWriters is the floor's parallelism.
	floorWriters = 16
)

var (
	secretGVK = corev1.SchemeGroupVersion.WithKind("SecretList")
	// addonGVK is the addon API's storage version: listing it needs no conversion webhook.
	addonGVK = schema.GroupVersion(addonv1alpha1.GroupVersion).WithKind("ManagedClusterAddOnList")
	workGVK  = schema.GroupVersion(workv1.GroupVersion).WithKind("ManifestWorkList")
)

func ownerLabels() client.MatchingLabels {
	return client.MatchingLabels{contract.LabelManagedBy: contract.ManagedByValue,
		ownership.LabelNamespace: argoNS, ownership.LabelName: gitopsClusterName}
}

func addonWorks() client.MatchingLabels {
	return client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}
}

func runFleetBenchmark(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, c, p := startBenchHub(b, ctx, fmt.Sprintf("clusters=%d", n))
	progress("starting the manager")
	profiler := newManagerProfiler(b)
	require.NoError(b, p.StartManagerWith(ctx, profiler.flags()))
	alive := func() {
		if exited, err := p.Manager.Exited(); exited {
			b.Fatalf("the manager exited (%v); the end of its log:\n%s", err, p.Manager.Tail(40))
		}
	}
	waitLeader(b, ctx, c, alive)
	// No klusterlet runs here: stand in for the work agents on the addon's pre-delete
	// hook, which every ManagedClusterAddOn's removal waits for.
	workstandin.CompleteHookWorks(ctx, c)

	progress("registering %d ManagedClusters", n)
	setupStart := time.Now()
	names := fleetNames(n)
	poll := pollInterval(n)
	// Renewed from the start: at 1,000 clusters, registering takes minutes, and OCM
	// marks a cluster whose lease is 5 minutes old unreachable.
	defer keepLeasesFresh(ctx, c, names)()
	registerFleet(b, ctx, c, names)
	require.NoError(b, c.Create(ctx, fleetPlacement()))
	converge(b, "the Placement decides every cluster", time.Now(), 10*time.Minute, poll, alive,
		&target{name: "decisions", done: func() (bool, string) {
			got := placementDecided(b, ctx, c, argoNS, placementName)
			return got == n, fmt.Sprintf("%d decided", got)
		}})
	progress("fleet ready in %v", time.Since(setupStart).Round(time.Second))

	// Propagation.
	_, cpuBefore, err := procStats(p.Manager.Pid())
	require.NoError(b, err)
	gc := fleetGitOpsCluster()
	progress("creating the GitOpsCluster")
	useBefore := sampleHubUse(b, f)
	propStart := time.Now()
	profiled := profiler.cpu(ctx, fmt.Sprintf("clusters-%d-propagation", n))
	require.NoError(b, c.Create(ctx, gc))
	secrets, addons, works := fleetTargets(b, ctx, c, n, 0)
	propagation := converge(b, "propagation", propStart, 30*time.Minute, poll, alive, secrets, addons, works)
	propEnd := time.Now()
	oursUse := sampleHubUse(b, f).since(useBefore)
	profiler.heap(ctx, fmt.Sprintf("clusters-%d-propagation", n))
	profiled()
	rssAfterProp, cpuAfter, err := procStats(p.Manager.Pid())
	require.NoError(b, err)
	worksPerCluster, _ := uniform(countByNamespace(b, ctx, c, workGVK, "", addonWorks()))
	propWrites := writesBetween(b, f.Hub, managerUser, propStart, propEnd)
	propAllWrites := writesBetween(b, f.Hub, "", propStart, propEnd)
	etcdAfterProp, _ := etcdDBSize(b, ctx, f)
	// The template phase's AddOnTemplate carries these objects: ours, as rendered.
	manifests := spokeManifests(b, ctx, c, names[0])
	propTimeline := timeline(b, f.Hub, propStart, propEnd)
	progress("propagation %v (secrets %v, addons %v, works %v)", propagation.Round(time.Millisecond),
		secrets.at.Round(time.Millisecond), addons.at.Round(time.Millisecond), works.at.Round(time.Millisecond))

	// The floor is timed against an idle manager: it may still be catching up (the
	// ManagedClusters' addon labels OCM adds are copied into the Secrets).
	settle1, quiet1 := waitQuiet(b, f.Hub, managerUser, 30*time.Second, 15*time.Minute, alive)
	trailing := writesBetween(b, f.Hub, managerUser, propEnd, time.Now())
	progress("settled after %v (%d writes after propagation)", settle1.Round(time.Second), len(trailing))

	// The works' bytes, and the floor.
	dir := b.TempDir()
	fs, sizes := prepareFloor(b, ctx, c, dir, names)
	progress("floor: %d secrets, %d addons, %d works to create", len(fs.secrets), len(fs.addons), len(fs.works))
	floor := fs.create(b, ctx, c, false)
	fs.delete(b, ctx, c, names)
	floorSerial := fs.create(b, ctx, c, true)
	fs.delete(b, ctx, c, names)
	progress("floor %v with %d writers, %v with one writer per kind", floor.Round(time.Millisecond), floorWriters, floorSerial.Round(time.Millisecond))

	// FLEET_BENCH_PHASES=propagation stops after the floor (a run at 3,000 clusters, say):
	// no steady state, churn, shrink, deletion or template phase.
	lifecycle := os.Getenv("FLEET_BENCH_PHASES") != "propagation"
	var lifecycleRows func(row func(name, format string, args ...any))
	var rssAfterShrink int64
	if lifecycle {
		// Steady state, then churn.
		settle2, quiet2 := waitQuiet(b, f.Hub, managerUser, 30*time.Second, 5*time.Minute, alive)
		progress("steady window (settled in %v)", settle2.Round(time.Second))
		steadyFrom := time.Now()
		time.Sleep(60 * time.Second)
		steady := writesBetween(b, f.Hub, managerUser, steadyFrom, steadyFrom.Add(60*time.Second))
		progress("churn window")
		churnFrom := time.Now()
		stopChurn := churn(ctx, c, names, 10*time.Second)
		time.Sleep(60 * time.Second)
		rounds := stopChurn()
		churnTo := time.Now()
		churned := writesBetween(b, f.Hub, managerUser, churnFrom, churnTo)
		alive()
		// Should the churn leave the manager work, it finishes before the shrink is timed.
		settle3, quiet3 := waitQuiet(b, f.Hub, managerUser, 30*time.Second, 20*time.Minute, alive)
		afterChurn := writesBetween(b, f.Hub, managerUser, churnTo, time.Now())
		progress("churn: %d writes in the window, %d after it, settled in %v", len(churned), len(afterChurn), settle3.Round(time.Second))

		// Shrink the Placement to the half=true clusters.
		half := n / 2
		pl := &clusterv1beta1.Placement{}
		require.NoError(b, c.Get(ctx, types.NamespacedName{Namespace: argoNS, Name: placementName}, pl))
		pl.Spec.Predicates[0].RequiredClusterSelector.LabelSelector.MatchLabels[halfLabel] = "true"
		progress("shrinking the Placement to %d clusters", half)
		shrinkStart := time.Now()
		require.NoError(b, c.Update(ctx, pl))
		decided := &target{name: "decisions", done: func() (bool, string) {
			got := placementDecided(b, ctx, c, argoNS, placementName)
			return got == half, fmt.Sprintf("%d decided", got)
		}}
		sSecrets, sAddons, sWorks := fleetTargets(b, ctx, c, half, worksPerCluster)
		shrink := converge(b, "the shrunk Placement", shrinkStart, 20*time.Minute, poll, alive, decided, sSecrets, sAddons, sWorks)
		shrinkWrites := writesBetween(b, f.Hub, managerUser, shrinkStart, time.Now())
		progress("shrink converged in %v", shrink.Round(time.Millisecond))
		rssAfterShrink, _, err = procStats(p.Manager.Pid())
		require.NoError(b, err)
		waitQuiet(b, f.Hub, managerUser, 10*time.Second, 5*time.Minute, alive)

		// Delete the GitOpsCluster.
		progress("deleting the GitOpsCluster")
		delStart := time.Now()
		require.NoError(b, c.Delete(ctx, gc))
		gone := goneTarget(ctx, c, gc)
		dSecrets, dAddons, dWorks := fleetTargets(b, ctx, c, 0, worksPerCluster)
		deletion := converge(b, "the deletion", delStart, 20*time.Minute, poll, alive, gone, dSecrets, dAddons, dWorks)
		delWrites := writesBetween(b, f.Hub, managerUser, delStart, time.Now())
		progress("deletion converged in %v", deletion.Round(time.Millisecond))
		b.ReportMetric(float64(len(steady)), "steady-writes/60s")
		b.ReportMetric(float64(len(churned)), "churn-writes/60s")
		b.ReportMetric(shrink.Seconds(), "shrink-s")
		b.ReportMetric(deletion.Seconds(), "delete-s")
		lifecycleRows = func(row func(name, format string, args ...any)) {
			row("steady writes / 60 s", "%d (after %v to settle%s): %s", len(steady), settle2.Round(time.Second), notQuiet(quiet2), summarizeWrites(steady))
			for _, line := range firstWrites(steady, 5) {
				row("", "%s", line)
			}
			row("churn writes / 60 s", "%d in %d rounds of label+lease on %d clusters: %s", len(churned), rounds, n, summarizeWrites(churned))
			for _, line := range firstWrites(churned, 5) {
				row("", "%s", line)
			}
			row("  after churn", "%d writes until quiet in %v%s", len(afterChurn), settle3.Round(time.Second), notQuiet(quiet3))
			row("shrink to N/2", "%v: decisions %v, secrets %v, addons %v, works %v; %d writes: %s",
				ms(shrink), ms(decided.at), ms(sSecrets.at), ms(sAddons.at), ms(sWorks.at), len(shrinkWrites), summarizeWrites(shrinkWrites))
			row("delete GitOpsCluster", "%v: gone %v, secrets %v, addons %v, works %v; %d writes: %s",
				ms(deletion), ms(gone.at), ms(dSecrets.at), ms(dAddons.at), ms(dWorks.at), len(delWrites), summarizeWrites(delWrites))
		}
	}

	alive()
	rss, cpu, err := procStats(p.Manager.Pid())
	require.NoError(b, err)

	// ACM's mechanism, on the same hub and clusters, now that ours is gone from them.
	// FLEET_BENCH_TEMPLATE=off leaves it out (a run at 3,000 clusters, say).
	var tpl templateRun
	if lifecycle && os.Getenv("FLEET_BENCH_TEMPLATE") != "off" {
		tpl = runTemplatePhase(b, ctx, f, c, names, fs.secrets, manifests, poll, alive)
		progress("template addon: propagation %v (secrets %v, addons %v, works %v)", ms(tpl.propagation),
			ms(tpl.secrets.at), ms(tpl.addons.at), ms(tpl.works.at))
	}
	hubEnd := sampleHubUse(b, f)
	etcdEnd, etcdEndInUse := etcdDBSize(b, ctx, f)

	ratio := propagation.Seconds() / floor.Seconds()
	ratioSerial := propagation.Seconds() / floorSerial.Seconds()
	b.ReportMetric(propagation.Seconds(), "propagation-s")
	b.ReportMetric(floor.Seconds(), "floor-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(floorSerial.Seconds(), "floor-1-writer-s")
	b.ReportMetric(ratioSerial, "ratio-vs-1-writer")
	b.ReportMetric(float64(sizes.object)/float64(n), "work-bytes/cluster")
	b.ReportMetric(float64(sizes.spec)/float64(n), "work-spec-bytes/cluster")
	b.ReportMetric(float64(rss)/(1<<20), "manager-peak-RSS-MiB")
	b.ReportMetric(cpu.Seconds(), "manager-CPU-s")
	b.ReportMetric(float64(len(propAllWrites))/float64(n), "writes/cluster")
	if tpl.ran() {
		b.ReportMetric(tpl.propagation.Seconds(), "template-propagation-s")
		b.ReportMetric(propagation.Seconds()/tpl.propagation.Seconds(), "ratio-vs-template")
		b.ReportMetric(float64(len(tpl.writes))/float64(n), "template-writes/cluster")
	}
	b.ReportMetric(float64(hubEnd.apiserverRSS)/(1<<20), "hub-apiserver-peak-RSS-MiB")
	b.ReportMetric(float64(etcdEnd)/(1<<20), "etcd-db-MiB")

	var out strings.Builder
	w := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(w, "  %s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	row("clusters", "%d (no klusterlets; leases renewed every %d s)", n, leaseDurationSeconds)
	row("propagation", "%v: secrets %v, addons %v, works %v (%d a cluster); manager CPU %.1f s",
		ms(propagation), ms(secrets.at), ms(addons.at), ms(works.at), worksPerCluster, (cpuAfter - cpuBefore).Seconds())
	row("  manager writes", "%d: %s", len(propWrites), summarizeWrites(propWrites))
	row("  timeline", "writes by the manager and the hub admin (OCM's controllers): count, first .. last")
	for _, line := range propTimeline {
		row("", "%s", line)
	}
	row("  after, until quiet", "%d writes in %v%s: %s", len(trailing), settle1.Round(time.Second), notQuiet(quiet1), summarizeWrites(trailing))
	row("floor, 16 writers", "%v (%d secrets, %d addons, %d works); ratio %.2f", ms(floor), len(fs.secrets), len(fs.addons), len(fs.works), ratio)
	row("floor, 1 writer/kind", "%v; ratio %.2f", ms(floorSerial), ratioSerial)
	row("ManifestWorks bytes", "%d total, %d a cluster; spec %d total, %d a cluster",
		sizes.object, sizes.object/int64(n), sizes.spec, sizes.spec/int64(n))
	if lifecycleRows != nil {
		lifecycleRows(row)
	}
	shrinkRSS := ""
	if lifecycle {
		shrinkRSS = fmt.Sprintf(", %d MiB by the end of the shrink", rssAfterShrink>>20)
	}
	row("manager", "peak RSS %d MiB (%d MiB by the end of propagation%s), CPU %.1f s over the run",
		rss>>20, rssAfterProp>>20, shrinkRSS, cpu.Seconds())
	row("writes per cluster", "%s in propagation (%d: %s; %s)", perCluster(len(propAllWrites), n), len(propAllWrites),
		writesByUser(propAllWrites), summarizeWrites(propAllWrites))
	row("hub CPU in propagation", "apiserver %.1f s, etcd %.1f s, OCM addon-manager %.1f s, our manager %.1f s",
		oursUse.apiserverCPU.Seconds(), oursUse.etcdCPU.Seconds(), oursUse.addonManagerCPU.Seconds(), (cpuAfter - cpuBefore).Seconds())
	if tpl.ran() {
		row("ACM's mechanism", "AddOnTemplate %s (%d objects: ours) driven by OCM's addon-manager; per cluster, %d at a time: Secret, AddOnDeploymentConfig, ManagedClusterAddOn",
			templateAddon, len(manifests), templateWriters)
		row("  propagation", "%v: secrets %v, addons %v, works %v (%d a cluster); ours %v: ratio %.2f",
			ms(tpl.propagation), ms(tpl.secrets.at), ms(tpl.addons.at), ms(tpl.works.at), tpl.worksPerCluster, ms(propagation), propagation.Seconds()/tpl.propagation.Seconds())
		row("  writes per cluster", "%s (%d: %s; %s); ours %s",
			perCluster(len(tpl.writes), n), len(tpl.writes), writesByUser(tpl.writes), summarizeWrites(tpl.writes),
			perCluster(len(propAllWrites), n))
		for _, line := range tpl.timeline {
			row("  template timeline", "%s", line)
		}
		row("  hub CPU in propagation", "apiserver %.1f s, etcd %.1f s, OCM addon-manager %.1f s",
			tpl.use.apiserverCPU.Seconds(), tpl.use.etcdCPU.Seconds(), tpl.use.addonManagerCPU.Seconds())
		row("  ManifestWorks bytes", "template %d a cluster (spec %d); ours %d (spec %d)",
			tpl.sizes.object/int64(n), tpl.sizes.spec/int64(n), sizes.object/int64(n), sizes.spec/int64(n))
	}
	row("hub", "apiserver peak RSS %d MiB, etcd peak RSS %d MiB, OCM addon-manager peak RSS %d MiB; etcd db %d MiB after our propagation, %d MiB at the end (%d MiB in use)",
		hubEnd.apiserverRSS>>20, hubEnd.etcdRSS>>20, hubEnd.addonManagerRSS>>20, etcdAfterProp>>20, etcdEnd>>20, etcdEndInUse>>20)
	require.NoError(b, w.Flush())
	// On stdout: the testing package keeps only the first lines of a benchmark's log.
	fmt.Printf("fleet benchmark, %d clusters:\n%s", n, out.String())
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func notQuiet(quiet bool) string {
	if quiet {
		return ""
	}
	return ", NOT quiet"
}

// waitLeader waits until the manager holds its leader election Lease: its controllers and
// addon-framework's addon manager run from then on.
func waitLeader(b *testing.B, ctx context.Context, c client.Client, alive func()) {
	converge(b, "the manager's leader election", time.Now(), 3*time.Minute, 250*time.Millisecond, alive, &target{name: "lease", done: func() (bool, string) {
		lease := &coordinationv1.Lease{}
		err := c.Get(ctx, types.NamespacedName{Namespace: install.Namespace, Name: manager.LeaderElectionID}, lease)
		if err != nil {
			return false, err.Error()
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", "no holder"
	}})
}

// fleetGitOpsCluster is the benchmarks' GitOpsCluster: the addon over fleetPlacement's
// clusters.
func fleetGitOpsCluster() *appsv1beta1.GitOpsCluster {
	return &appsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Name: gitopsClusterName, Namespace: argoNS},
		Spec: appsv1beta1.GitOpsClusterSpec{
			ArgoServer:   appsv1beta1.ArgoServerSpec{Cluster: "local-cluster", ArgoNamespace: argoNS},
			PlacementRef: &appsv1beta1.PlacementReference{APIVersion: clusterv1beta1.GroupVersion.String(), Kind: "Placement", Name: placementName},
			GitOpsAddon:  &appsv1beta1.GitOpsAddonSpec{Enabled: ptr(true)},
		},
	}
}

// goneTarget holds once the GitOpsCluster is gone (its finalizer done).
func goneTarget(ctx context.Context, c client.Client, gc *appsv1beta1.GitOpsCluster) *target {
	return &target{name: "GitOpsCluster", done: func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(gc), &appsv1beta1.GitOpsCluster{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	}}
}

// fleetPlacement selects every bench cluster of the default set; no tolerations, and
// numberOfClusters unset.
func fleetPlacement() *clusterv1beta1.Placement {
	return &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: placementName, Namespace: argoNS},
		Spec: clusterv1beta1.PlacementSpec{
			ClusterSets: []string{"default"},
			Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{fleetLabel: fleetValue}},
			}}},
		},
	}
}

// pollInterval is how often convergence is polled: every 250 ms, and at most once per
// millisecond per cluster, so that at 1,000 clusters the benchmark's own List calls (the
// Secrets, the ManagedClusterAddOns and the ManifestWorks, metadata only) do not take a
// noticeable share of the two cores the hub and the manager run on.
func pollInterval(clusters int) time.Duration {
	return max(250*time.Millisecond, time.Duration(clusters)*time.Millisecond)
}

// target is one condition converge waits for; at is when it first held.
type target struct {
	name string
	done func() (bool, string)
	at   time.Duration
	ok   bool
}

// converge polls every interval until every target held once, and returns the time
// from start until the last did. A target that held is not polled again.
func converge(b *testing.B, what string, start time.Time, timeout, interval time.Duration, alive func(), targets ...*target) time.Duration {
	for {
		alive()
		var pending []string
		for _, t := range targets {
			if t.ok {
				continue
			}
			if ok, state := t.done(); ok {
				t.ok, t.at = true, time.Since(start)
			} else {
				pending = append(pending, t.name+": "+state)
			}
		}
		if len(pending) == 0 {
			var last time.Duration
			for _, t := range targets {
				last = max(last, t.at)
			}
			return last
		}
		if time.Since(start) > timeout {
			b.Fatalf("%s did not converge within %v: %s", what, timeout, strings.Join(pending, "; "))
		}
		time.Sleep(interval)
	}
}

// fleetTargets wait for exactly want cluster Secrets and ManagedClusterAddOns of the
// GitOpsCluster, and ManifestWorks of the addon on exactly want clusters, the same number
// on each (worksPerCluster when known, else any).
func fleetTargets(b *testing.B, ctx context.Context, c client.Client, want, worksPerCluster int) (secrets, addons, works *target) {
	secrets = &target{name: "secrets", done: func() (bool, string) {
		got := total(countByNamespace(b, ctx, c, secretGVK, "", client.InNamespace(argoNS), ownerLabels()))
		return got == want, fmt.Sprintf("%d of %d", got, want)
	}}
	addons = &target{name: "addons", done: func() (bool, string) {
		var got int
		if want == 0 { // none left at all, whoever owns it
			got = total(countByNamespace(b, ctx, c, addonGVK, contract.AddonName))
		} else {
			got = total(countByNamespace(b, ctx, c, addonGVK, "", ownerLabels()))
		}
		return got == want, fmt.Sprintf("%d of %d", got, want)
	}}
	works = &target{name: "works", done: func() (bool, string) {
		byNS := countByNamespace(b, ctx, c, workGVK, "", addonWorks())
		each, same := uniform(byNS)
		state := fmt.Sprintf("%d works on %d clusters, want %d clusters", total(byNS), len(byNS), want)
		if want == 0 {
			return len(byNS) == 0, state
		}
		return len(byNS) == want && same && (worksPerCluster == 0 || each == worksPerCluster), state
	}}
	return secrets, addons, works
}

// floorSet is the floor's objects, one JSON file each, so that a thousand clusters' worth
// of ManifestWorks is never held in memory.
type floorSet struct {
	dir                    string
	secrets, addons, works []string
}

type workSizes struct{ object, spec int64 }

func floorNamespace(cluster string) string { return "floor-" + strings.TrimPrefix(cluster, "fleet-") }

// prepareFloor measures the addon's ManifestWorks and writes a copy of every Secret,
// ManagedClusterAddOn and ManifestWork of the GitOpsCluster: Secrets under new names in
// the Argo CD namespace, the others in a second set of namespaces (floor-NNNN, created
// here), labelled so that neither the manager nor OCM's addon controllers act on them.
func prepareFloor(b *testing.B, ctx context.Context, c client.Client, dir string, clusters []string) (floorSet, workSizes) {
	fs := floorSet{dir: dir}
	parallel(len(clusters), 16, func(i int) error {
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace(clusters[i])}})
	})
	save := func(kind string, obj any) string {
		raw, err := json.Marshal(obj)
		require.NoError(b, err)
		file := filepath.Join(dir, fmt.Sprintf("%s-%05d.json", kind, len(fs.secrets)+len(fs.addons)+len(fs.works)))
		require.NoError(b, os.WriteFile(file, raw, 0o600))
		return file
	}
	relabel := func(labels map[string]string, key, value string) map[string]string {
		out := map[string]string{}
		for k, v := range labels {
			out[k] = v
		}
		if _, ok := out[key]; ok {
			out[key] = value
		}
		return out
	}

	var sizes workSizes
	eachPage(b, ctx, c, &workv1.ManifestWorkList{}, 20, []client.ListOption{addonWorks()}, func(l client.ObjectList) {
		for _, w := range l.(*workv1.ManifestWorkList).Items {
			sizes.add(b, w)
			fs.works = append(fs.works, save("work", &workv1.ManifestWork{
				ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: floorNamespace(w.Namespace),
					Labels: relabel(w.Labels, addonv1beta1.AddonLabelKey, floorAddonName), Annotations: w.Annotations},
				Spec: w.Spec,
			}))
		}
	})
	eachPage(b, ctx, c, &corev1.SecretList{}, pageSize, []client.ListOption{client.InNamespace(argoNS), ownerLabels()}, func(l client.ObjectList) {
		for _, s := range l.(*corev1.SecretList).Items {
			fs.secrets = append(fs.secrets, save("secret", &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "floor-" + s.Name, Namespace: s.Namespace,
					Labels: relabel(s.Labels, contract.LabelManagedBy, floorManagedBy), Annotations: s.Annotations},
				Type: s.Type, Data: s.Data,
			}))
		}
	})
	eachPage(b, ctx, c, &addonv1beta1.ManagedClusterAddOnList{}, pageSize, []client.ListOption{ownerLabels()}, func(l client.ObjectList) {
		for _, a := range l.(*addonv1beta1.ManagedClusterAddOnList).Items {
			fs.addons = append(fs.addons, save("addon", &addonv1beta1.ManagedClusterAddOn{
				ObjectMeta: metav1.ObjectMeta{Name: floorAddonName, Namespace: floorNamespace(a.Namespace),
					Labels: relabel(a.Labels, contract.LabelManagedBy, floorManagedBy), Annotations: a.Annotations},
				Spec: a.Spec,
			}))
		}
	})
	return fs, sizes
}

// eachPage lists a kind a page at a time.
func eachPage(b *testing.B, ctx context.Context, c client.Client, list client.ObjectList, limit int64, opts []client.ListOption, fn func(client.ObjectList)) {
	opts = append(opts[:len(opts):len(opts)], client.Limit(limit))
	base := len(opts)
	for {
		require.NoError(b, c.List(ctx, list, opts...))
		fn(list)
		if list.GetContinue() == "" {
			return
		}
		opts = append(opts[:base:base], client.Continue(list.GetContinue()))
	}
}

// create creates the floor's objects, timed: with floorWriters writers over all of them,
// or (serial) with one writer per kind, the three kinds at once, as the manager's
// GitOpsCluster controller and addon-framework's deploy controller each write one at a time.
func (fs floorSet) create(b *testing.B, ctx context.Context, c client.Client, serial bool) time.Duration {
	type kind struct {
		files []string
		obj   func() client.Object
	}
	kinds := []kind{
		{fs.secrets, func() client.Object { return &corev1.Secret{} }},
		{fs.addons, func() client.Object { return &addonv1beta1.ManagedClusterAddOn{} }},
		{fs.works, func() client.Object { return &workv1.ManifestWork{} }},
	}
	createFile := func(k kind, i int) error {
		raw, err := os.ReadFile(k.files[i])
		if err != nil {
			return err
		}
		obj := k.obj()
		if err := json.Unmarshal(raw, obj); err != nil {
			return err
		}
		return c.Create(ctx, obj)
	}
	return timeIt(func() {
		if serial {
			var wg sync.WaitGroup
			for _, k := range kinds {
				wg.Go(func() { parallel(len(k.files), 1, func(i int) error { return createFile(k, i) }) })
			}
			wg.Wait()
			return
		}
		type item struct {
			k kind
			i int
		}
		var all []item
		for _, k := range kinds {
			for i := range k.files {
				all = append(all, item{k, i})
			}
		}
		parallel(len(all), floorWriters, func(j int) error { return createFile(all[j].k, all[j].i) })
	})
}

// delete removes the floor's objects and waits until they are gone (the floor
// namespaces stay, empty).
func (fs floorSet) delete(b *testing.B, ctx context.Context, c client.Client, clusters []string) {
	floorLabel := client.MatchingLabels{contract.LabelManagedBy: floorManagedBy}
	require.NoError(b, c.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(argoNS), floorLabel))
	parallel(len(clusters), 16, func(i int) error {
		ns := client.InNamespace(floorNamespace(clusters[i]))
		if err := c.DeleteAllOf(ctx, &addonv1beta1.ManagedClusterAddOn{}, ns); err != nil {
			return err
		}
		return c.DeleteAllOf(ctx, &workv1.ManifestWork{}, ns)
	})
	start := time.Now()
	converge(b, "the floor's deletion", start, 5*time.Minute, pollInterval(len(clusters)), func() {}, &target{name: "floor objects", done: func() (bool, string) {
		secrets := total(countByNamespace(b, ctx, c, secretGVK, "", client.InNamespace(argoNS), floorLabel))
		addons := total(countByNamespace(b, ctx, c, addonGVK, floorAddonName))
		works := total(countByNamespace(b, ctx, c, workGVK, "", client.MatchingLabels{addonv1beta1.AddonLabelKey: floorAddonName}))
		if addons > 0 && time.Since(start) > 30*time.Second {
			// Whatever finalizer some controller put on them, the floor's copies are ours.
			eachPage(b, ctx, c, &addonv1beta1.ManagedClusterAddOnList{}, pageSize, []client.ListOption{floorLabel}, func(l client.ObjectList) {
				for _, a := range l.(*addonv1beta1.ManagedClusterAddOnList).Items {
					if len(a.Finalizers) > 0 {
						require.NoError(b, ignoreNotFound(c.Patch(ctx, &a, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))))
					}
				}
			})
		}
		return secrets+addons+works == 0, fmt.Sprintf("%d secrets, %d addons, %d works left", secrets, addons, works)
	}})
}
