package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/workstandin"
)

// BenchmarkFaults injects faults into the manager's work at fleet scale, on the hub `make
// bench-fleet` runs (test/harness: etcd, kube-apiserver with an audit log,
// kube-controller-manager, OCM's hub controllers; ManagedClusters without klusterlets),
// with two replicas of the manager (`./bin/gitops-addon manager`, the chart's arguments,
// leader election) as `replicas: 2` runs them. Two workloads (FAULTS_BENCH_WORKLOADS):
//
//   - rollout: a GitOpsCluster with the addon over every cluster (FAULTS_BENCH_CLUSTERS,
//     1,000): each cluster's Argo CD cluster Secret, ManagedClusterAddOn and ManifestWorks;
//   - pull: a burst of pull Applications (FAULTS_BENCH_APPS, 5,000) over those clusters,
//     created 4 at a time and retried as an ApplicationSet controller would: one
//     ManifestWork each.
//
// Each runs undisturbed first (the baseline), then once per fault (FAULTS_BENCH_FAULTS),
// injected once half of it is done and running beside the wait for the rest:
//
//   - leader-kill: the leading replica gets SIGKILL; the other takes over;
//   - leader-freeze: the leader gets SIGSTOP until the other has held the Lease for 10 s,
//     then SIGCONT: it must not write as a stale leader (its writes after the resume are
//     counted from the audit log by its User-Agent, which names its leader election
//     identity) and must step down;
//   - apiserver-restart: the hub's kube-apiserver is killed (SIGKILL) and started again;
//   - apf-429: API Priority and Fairness gives the manager one seat and rejects the rest
//     (429) for 30 s (its leader election keeps its own level);
//   - flap: every tenth cluster turns Unknown and leaves the Placement, then comes back;
//   - feedback-storm: every work agent reports on every ManifestWork there is, 32 at a
//     time, while the workload goes on (the addon's works applied; the pull works a new
//     revision): converged also means every report shows on the hub (StackApplied, the
//     Application's revision), and the writes ratio leaves out the status writes the
//     reports call for (two per ManagedClusterAddOn, one per Application);
//   - etcd-stall: etcd gets SIGSTOP for 30 s, then SIGCONT.
//
// For each it measures, against the same workload's baseline in the same run: the time
// from the fault to the whole workload done, against the baseline's time from its half-way
// point; the manager's writes (both replicas) from the audit log, over the baseline's, by
// verb and resource, and how many were refused with 409 Conflict; objects lost, duplicated
// or orphaned (also after the workload's removal), each asserted 0; the writes of a stale
// leader after its resume, asserted 0; the replicas' peak RSS; and the manager's writes in
// 30 s once it settled, asserted 0. A replica that exits (a stale leader steps down so, a
// leader that cannot renew for 10 s too) is started again, as the kubelet restarts its
// container, and named.
//
//	make bench-faults  # FAULTS_BENCH_CLUSTERS=1000 go test -run '^$' -bench BenchmarkFaults -benchtime 1x -timeout 240m ./test/bench/
//
// FAULTS_BENCH_FENCE=off runs the replicas without leader election (both active): the check
// that the conflict and extra-write counts can tell.
func BenchmarkFaults(b *testing.B) {
	n := 1000
	if v := os.Getenv("FAULTS_BENCH_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			b.Fatalf("FAULTS_BENCH_CLUSTERS=%q: want a number of clusters, at least 2", v)
		}
	}
	selected := faults
	if v := os.Getenv("FAULTS_BENCH_FAULTS"); v != "" {
		selected = nil
		for _, name := range strings.Split(v, ",") {
			if name == "none" { // the baselines alone
				continue
			}
			f, ok := faultNamed(strings.TrimSpace(name))
			if !ok {
				b.Fatalf("FAULTS_BENCH_FAULTS: no fault %q (known: %s, or none)", name, faultNames())
			}
			selected = append(selected, f)
		}
	}
	b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
		for range b.N {
			runFaultsBenchmark(b, n, selected)
		}
	})
}

// fault is one fault and how to inject it; inject returns once the faulty part is back.
type fault struct {
	name, what string
	inject     func(fb *faultBench) injected
}

// injected is what an injection reports: for a frozen leader, its identity and when it
// resumed; and what happened, in a few words.
type injected struct {
	staleIdentity        string
	resumedAt            time.Time
	note                 string
	replicaExitsOnItsOwn bool
	// storm is what a feedback storm reported, when it was one.
	storm *storm
}

var faults = []fault{
	{name: "leader-kill", what: "the leader SIGKILLed", inject: func(fb *faultBench) injected {
		r := fb.leader()
		at := time.Now()
		require.NoError(fb.b, r.proc.Kill())
		fb.waitNewLeader(r)
		fb.start(r)
		return injected{note: fmt.Sprintf("%s killed; the other led after %v", r.name, ms(time.Since(at)))}
	}},
	{name: "leader-freeze", what: "the leader SIGSTOPped past its lease, then resumed", inject: func(fb *faultBench) injected {
		r := fb.leader()
		identity := fb.leaseHolder()
		at := time.Now()
		require.NoError(fb.b, r.proc.Signal(syscall.SIGSTOP))
		taken := fb.waitNewLeader(r)
		time.Sleep(10 * time.Second)
		resumed := time.Now()
		require.NoError(fb.b, r.proc.Signal(syscall.SIGCONT))
		return injected{staleIdentity: identity, resumedAt: resumed, replicaExitsOnItsOwn: !fb.bothActive,
			note: fmt.Sprintf("%s frozen %v; the other led after %v", r.name, ms(resumed.Sub(at)), ms(taken))}
	}},
	{name: "apiserver-restart", what: "the hub kube-apiserver SIGKILLed and started again", inject: func(fb *faultBench) injected {
		at := time.Now()
		require.NoError(fb.b, fb.f.Hub.APIServer.Kill())
		require.NoError(fb.b, fb.f.Hub.APIServer.Start())
		require.NoError(fb.b, fb.f.Hub.WaitReady(fb.ctx))
		return injected{note: fmt.Sprintf("the apiserver answered again after %v", ms(time.Since(at)))}
	}},
	{name: "apf-429", what: "API Priority and Fairness gives the manager one seat and rejects (429) beyond it, for 30 s", inject: func(fb *faultBench) injected {
		lift := starveManager(fb)
		time.Sleep(30 * time.Second)
		lift()
		return injected{note: "the manager's requests limited for 30 s"}
	}},
	{name: "flap", what: "10 % of the clusters Unknown and out of the Placement, then back", inject: func(fb *faultBench) injected {
		at := time.Now()
		n, restore := flapClusters(fb)
		dropped := time.Since(at)
		restore()
		return injected{note: fmt.Sprintf("%d clusters out of the Placement for %v", n, ms(dropped))}
	}},
	{name: "feedback-storm", what: "every work agent reports on every ManifestWork at once, 32 at a time, while the workload goes on", inject: func(fb *faultBench) injected {
		at := time.Now()
		st := fb.current.report()
		return injected{storm: &st, note: fmt.Sprintf("%d ManifestWorks reported on in %v", st.reports, ms(time.Since(at)))}
	}},
	{name: "etcd-stall", what: "etcd SIGSTOPped for 30 s", inject: func(fb *faultBench) injected {
		etcd := fb.f.Process("etcd")
		require.NotNil(fb.b, etcd, "no etcd process")
		require.NoError(fb.b, etcd.Signal(syscall.SIGSTOP))
		time.Sleep(30 * time.Second)
		require.NoError(fb.b, etcd.Signal(syscall.SIGCONT))
		return injected{note: "etcd resumed after 30 s"}
	}},
}

func faultNamed(name string) (fault, bool) {
	for _, f := range faults {
		if f.name == name {
			return f, true
		}
	}
	return fault{}, false
}

func faultNames() string {
	var names []string
	for _, f := range faults {
		names = append(names, f.name)
	}
	return strings.Join(names, ", ")
}

// replica is one manager process.
type replica struct {
	name    string
	proc    *harness.Process
	metrics string
}

type faultBench struct {
	b        *testing.B
	ctx      context.Context
	f        *harness.Fleet
	p        *install.Product
	c        client.Client
	n        int
	names    []string
	poll     time.Duration
	replicas []*replica
	// bothActive runs the replicas without leader election (FAULTS_BENCH_FENCE=off).
	bothActive bool
	// worksPerCluster is the baseline's.
	worksPerCluster int
	// current is the workload running.
	current workload
}

// rollout is one GitOpsCluster rollout to the fleet, undisturbed or with a fault.
type rollout struct {
	workload  string
	fault     string
	injected  injected
	total     time.Duration // from the workload's start to its end
	half      time.Duration // from its start to half of it
	recovery  time.Duration // from the fault (or the half-way point) to convergence
	writes    []harness.AuditEvent
	conflicts int // the manager's writes refused with 409 Conflict
	throttled int // and with 429 Too Many Requests (API Priority and Fairness)
	// rewritten counts the addon ManifestWorks present at the fault whose spec changed after.
	rewritten int
	stale     []harness.AuditEvent // the frozen leader's writes after its resume
	count     objectCount
	orphans   objectCount
	steady    []harness.AuditEvent
	peakRSS   int64
	restarted []string
}

// objectCount counts what should exist against what does.
type objectCount struct{ lost, duplicated, orphaned int }

func (o objectCount) String() string {
	return fmt.Sprintf("%d / %d / %d", o.lost, o.duplicated, o.orphaned)
}

func runFaultsBenchmark(b *testing.B, n int, selected []fault) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, c, p := startBenchHub(b, ctx, fmt.Sprintf("faults, clusters=%d", n))
	fb := &faultBench{b: b, ctx: ctx, f: f, p: p, c: c, n: n, names: fleetNames(n), poll: pollInterval(n)}
	fb.bothActive = os.Getenv("FAULTS_BENCH_FENCE") == "off"
	for _, name := range []string{"hub-gitops-addon-manager-a", "hub-gitops-addon-manager-b"} {
		r := &replica{name: name}
		fb.replicas = append(fb.replicas, r)
		fb.start(r)
		if !fb.bothActive && len(fb.replicas) == 1 {
			waitLeader(b, ctx, c, fb.alive) // a is the first leader
		}
	}
	workstandin.CompleteHookWorks(ctx, c)

	progress("registering %d ManagedClusters", n)
	defer keepLeasesFresh(ctx, c, fb.names)()
	registerFleet(b, ctx, c, fb.names)
	require.NoError(b, c.Create(ctx, fleetPlacement()))
	converge(b, "the Placement decides every cluster", time.Now(), 10*time.Minute, fb.poll, fb.alive,
		&target{name: "decisions", done: func() (bool, string) {
			got := placementDecided(b, ctx, c, argoNS, placementName)
			return got == n, fmt.Sprintf("%d decided", got)
		}})

	fb.installArgoCDCRDs()
	var results []rollout
	for _, w := range fb.workloads() {
		progress("%s: the baseline, undisturbed", w.name)
		results = append(results, fb.run(w, nil))
		for _, ft := range selected {
			progress("%s: fault %s: %s", w.name, ft.name, ft.what)
			results = append(results, fb.run(w, &ft))
		}
	}
	fb.report(results)
}

// workloads are FAULTS_BENCH_WORKLOADS's (default both): "rollout", a GitOpsCluster over
// the fleet; "pull", a burst of FAULTS_BENCH_APPS (5,000) pull Applications.
func (fb *faultBench) workloads() []workload {
	apps := 5000
	if v := os.Getenv("FAULTS_BENCH_APPS"); v != "" {
		var err error
		if apps, err = strconv.Atoi(v); err != nil || apps < 2 {
			fb.b.Fatalf("FAULTS_BENCH_APPS=%q: want a number of Applications, at least 2", v)
		}
	}
	names := "rollout,pull"
	if v := os.Getenv("FAULTS_BENCH_WORKLOADS"); v != "" {
		names = v
	}
	var out []workload
	for _, name := range strings.Split(names, ",") {
		switch strings.TrimSpace(name) {
		case "rollout":
			out = append(out, fb.addonRollout())
		case "pull":
			out = append(out, fb.pullBurst(apps))
		default:
			fb.b.Fatalf("FAULTS_BENCH_WORKLOADS: no workload %q (rollout, pull)", name)
		}
	}
	return out
}

// start starts (or starts again) a replica.
func (fb *faultBench) start(r *replica) {
	var flags map[string]string
	if fb.bothActive {
		flags = map[string]string{"--leader-elect": "false"}
	}
	proc, metrics, err := fb.p.StartReplica(fb.ctx, r.name, flags)
	require.NoError(fb.b, err)
	r.proc, r.metrics = proc, metrics
}

// alive fails the benchmark when a replica exited that should run.
func (fb *faultBench) alive() {
	for _, r := range fb.replicas {
		if exited, err := r.proc.Exited(); exited {
			fb.b.Fatalf("the manager replica %s exited (%v); the end of its log:\n%s", r.name, err, r.proc.Tail(40))
		}
	}
}

// restartExited starts again the replicas that exited, and names them.
func (fb *faultBench) restartExited() []string {
	var names []string
	for _, r := range fb.replicas {
		if exited, _ := r.proc.Exited(); exited {
			names = append(names, r.name)
			fb.start(r)
		}
	}
	return names
}

// leader is the replica that leads, by its own metrics (leader_election_master_status);
// without leader election, the first.
func (fb *faultBench) leader() *replica {
	if fb.bothActive {
		return fb.replicas[0]
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for _, r := range fb.replicas {
			if leads(r.metrics) {
				return r
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	fb.b.Fatalf("no replica leads")
	return nil
}

// waitNewLeader waits until a replica other than old leads, and returns how long it took.
func (fb *faultBench) waitNewLeader(old *replica) time.Duration {
	if fb.bothActive {
		return 0 // every replica is active
	}
	start := time.Now()
	for time.Since(start) < 2*time.Minute {
		for _, r := range fb.replicas {
			if r != old && leads(r.metrics) {
				return time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	fb.b.Fatalf("no other replica took over from %s within 2 minutes", old.name)
	return 0
}

// leaseHolder is the leader election Lease's holder identity.
func (fb *faultBench) leaseHolder() string {
	if fb.bothActive {
		return ""
	}
	lease := &coordinationv1.Lease{}
	require.NoError(fb.b, fb.c.Get(fb.ctx, types.NamespacedName{Namespace: install.Namespace, Name: manager.LeaderElectionID}, lease))
	require.NotNil(fb.b, lease.Spec.HolderIdentity)
	return *lease.Spec.HolderIdentity
}

// leads reads a replica's leader_election_master_status.
func leads(metrics string) bool {
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.Contains(line, manager.LeaderElectionID) {
			return strings.HasSuffix(line, " 1")
		}
	}
	return false
}

// run runs the workload (a rollout or a burst), injects the fault once half of it is
// done, waits for all of it, counts, waits for the manager to settle, measures its steady
// writes, removes the workload and counts what is left.
func (fb *faultBench) run(w workload, ft *fault) rollout {
	b := fb.b
	r := rollout{workload: w.name, fault: "baseline"}
	fb.current = w
	start := time.Now()
	created := w.create()
	converge(b, "half of "+w.name, start, 30*time.Minute, fb.poll, fb.alive, &target{name: "half", done: w.halfway})
	r.half = time.Since(start)
	before := fb.workSnapshot()
	from := time.Now()
	alive := fb.alive
	injection := make(chan injected, 1)
	if ft != nil {
		r.fault = ft.name
		// The fault runs beside the wait for convergence, which may come before the faulty
		// part is back (a frozen leader resumes after the other replica took over). A
		// replica that exits meanwhile (killed, or a stale leader stepping down) is started
		// again by the fault or below, and named in the report.
		alive = func() {}
		go func() {
			var in injected
			defer func() { injection <- in }() // also when the injection fails the benchmark
			in = ft.inject(fb)
		}()
	} else {
		injection <- injected{}
	}
	converge(b, w.name, start, 30*time.Minute, fb.poll, alive, w.targets()...)
	r.total = time.Since(start)
	r.recovery = time.Since(from)
	r.injected = <-injection
	if st := r.injected.storm; st != nil {
		// After a feedback storm, converged is also: every report shows on the hub.
		converge(b, "the feedback storm's reports on the hub", start, 30*time.Minute, fb.poll, fb.alive, st.shown)
		r.total = time.Since(start)
		r.recovery = time.Since(from)
	}
	created()
	progress("%s, %s: converged %v after the fault (%v in all)", w.name, r.fault, ms(r.recovery), ms(r.total))
	r.count = w.count()
	var first string
	if r.rewritten, first = fb.rewritten(before); first != "" {
		progress("%s, %s: %d ManifestWorks of the addon present at the fault had their spec written again; the first: %s", w.name, r.fault, r.rewritten, first)
	}
	if ft != nil && r.injected.replicaExitsOnItsOwn {
		fb.waitExited(ft)
	}
	r.restarted = fb.restartExited()
	waitQuiet(b, fb.f.Hub, managerUser, 30*time.Second, 15*time.Minute, fb.alive)
	r.writes = writesBetween(b, fb.f.Hub, managerUser, start, time.Now())
	for _, e := range r.writes {
		switch {
		case e.ResponseStatus == nil:
		case e.ResponseStatus.Code == http.StatusConflict:
			r.conflicts++
		case e.ResponseStatus.Code == http.StatusTooManyRequests:
			r.throttled++
		}
	}
	if r.injected.staleIdentity != "" {
		for _, e := range writesBetween(b, fb.f.Hub, managerUser, r.injected.resumedAt, time.Now()) {
			if strings.Contains(e.UserAgent, r.injected.staleIdentity) {
				r.stale = append(r.stale, e)
			}
		}
	}
	steadyFrom := time.Now()
	time.Sleep(30 * time.Second)
	r.steady = writesBetween(b, fb.f.Hub, managerUser, steadyFrom, time.Now())
	for _, rep := range fb.replicas {
		if rss, _, err := procStats(rep.proc.Pid()); err == nil {
			r.peakRSS = max(r.peakRSS, rss)
		}
	}
	w.remove()
	waitQuiet(b, fb.f.Hub, managerUser, 10*time.Second, 5*time.Minute, fb.alive)
	r.orphans = w.leftovers()
	progress("%s, %s: %d writes (%d conflicts, %d throttled), lost / duplicated / orphaned %s, %d stale-leader writes, %d steady writes; restarted %v",
		w.name, r.fault, len(r.writes), r.conflicts, r.throttled, r.lostOrDuplicated(), len(r.stale), len(r.steady), r.restarted)
	return r
}

// waitExited waits for the stale leader to step down (it exits on losing its lease).
func (fb *faultBench) waitExited(ft *fault) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, r := range fb.replicas {
			if exited, _ := r.proc.Exited(); exited {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	fb.b.Errorf("%s: the resumed leader did not step down within a minute", ft.name)
}

// report prints the table and asserts what must hold: nothing lost, duplicated or
// orphaned, no write by a stale leader, zero steady writes.
func (fb *faultBench) report(results []rollout) {
	b := fb.b
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	var baseline rollout
	for _, r := range results {
		if r.fault == "baseline" {
			baseline = r
			fmt.Fprintf(tw, "\n%s, two manager replicas (%s); baseline %v in all, half-way at %v\n", r.workload, fb.fenceState(), ms(r.total), ms(r.half))
			fmt.Fprintln(tw, "fault\tconvergence after it (vs the baseline's rest from half-way)\twrites (vs baseline)\t409 / 429\tManifestWorks re-specced\textra writes"+
				"\tlost / duplicated / orphaned\tstale-leader writes\tsteady writes / 30 s\tpeak RSS\tnote")
		}
		remaining := baseline.total - baseline.half
		extra := extraWrites(writeCounts(baseline.writes), writeCounts(r.writes))
		// A feedback storm's reports call for status writes on the hub (storm.expectedWrites):
		// the ratio is of the writes beyond those.
		compared := len(r.writes)
		if st := r.injected.storm; st != nil {
			compared -= st.expectedWrites
			r.injected.note += fmt.Sprintf("; the ratio leaves out the %d status writes they call for", st.expectedWrites)
		}
		fmt.Fprintf(tw, "%s\t%v (%.2f)\t%d (%.2f)\t%d / %d\t%d\t%s\t%s\t%d\t%d\t%d MiB\t%s\n", r.fault, ms(r.recovery), r.recovery.Seconds()/remaining.Seconds(),
			len(r.writes), float64(compared)/float64(max(1, len(baseline.writes))), r.conflicts, r.throttled, r.rewritten, extra, r.lostOrDuplicated(), len(r.stale),
			len(r.steady), r.peakRSS>>20, strings.TrimSpace(r.injected.note+" "+restartedNote(r.restarted)))
	}
	require.NoError(b, tw.Flush())
	for _, r := range results {
		what := r.workload + ", " + r.fault
		if count := r.lostOrDuplicated(); count != (objectCount{}) {
			b.Errorf("%s: %d lost, %d duplicated, %d orphaned", what, count.lost, count.duplicated, count.orphaned)
		}
		if len(r.stale) > 0 {
			b.Errorf("%s: the stale leader wrote %d times after its resume: %s", what, len(r.stale), strings.Join(firstWrites(r.stale, 5), "; "))
		}
		if len(r.steady) > 0 {
			b.Errorf("%s: %d writes in 30 s of steady state: %s", what, len(r.steady), summarizeWrites(r.steady))
		}
	}
}

// lostOrDuplicated is what the rollout lost or duplicated, and what it and the deletion
// after it left orphaned.
func (r rollout) lostOrDuplicated() objectCount {
	return objectCount{lost: r.count.lost, duplicated: r.count.duplicated, orphaned: r.count.orphaned + r.orphans.orphaned}
}

func (fb *faultBench) fenceState() string {
	if fb.bothActive {
		return "leader election OFF: both replicas active"
	}
	return "leader election, the write fence"
}

func restartedNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "(started again: " + strings.Join(names, ", ") + ")"
}

// writeCounts counts writes by verb and resource.
func writeCounts(events []harness.AuditEvent) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		key := e.Verb
		if r := e.ObjectRef; r != nil {
			key += " " + r.Resource
			if r.Subresource != "" {
				key += "/" + r.Subresource
			}
		}
		out[key]++
	}
	return out
}

// extraWrites lists the kinds of write done more often than in the baseline.
func extraWrites(base, got map[string]int) string {
	var parts []string
	for key, n := range got {
		if d := n - base[key]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s +%d", key, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
