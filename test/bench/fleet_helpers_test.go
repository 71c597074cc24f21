package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// The fleet benchmark's clusters are ManagedClusters without klusterlets: the benchmark
// plays their registration agents (status conditions, lease renewals).
const (
	// fleetLabel is on every bench ManagedCluster; the Placement selects it.
	fleetLabel = "bench"
	fleetValue = "fleet"
	// halfLabel is on the first half of the clusters; the shrunk Placement requires it.
	halfLabel = "half"
	// churnLabel is the label the churn window flips on every cluster: an addon-health
	// label, the way OCM flips feature.open-cluster-management.io/addon-<name> as an
	// addon's health changes. (A user's label change is relevant: it reaches the Secrets.)
	churnLabel = "feature.open-cluster-management.io/addon-bench-churn"
	// clusterLease is the Lease a klusterlet's registration agent renews in its cluster
	// namespace on the hub (OCM's hub lease controller reads it).
	clusterLease = "managed-cluster-lease"
	// leaseDurationSeconds is ManagedCluster spec.leaseDurationSeconds (OCM's default):
	// the hub marks a cluster unknown, and taints it unreachable, after 5 times that
	// without a renewal; a klusterlet renews every leaseDurationSeconds.
	leaseDurationSeconds = 60
	// pageSize bounds the objects a List returns at once.
	pageSize = 500
)

// fleetNames are the names of n bench clusters.
func fleetNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%04d", i)
	}
	return names
}

// registerFleet creates the ManagedClusters (accepted, labelled bench=fleet, the first
// half also half=true), their namespaces and leases, 16 at a time, then plays their
// agents until every one is accepted, joined, available, untainted and in the default set.
func registerFleet(b *testing.B, ctx context.Context, c client.Client, names []string) {
	n := len(names)
	parallel(n, 16, func(i int) error {
		name := names[i]
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1.ClusterNameLabelKey: name}}}
		if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
			return err
		}
		labels := map[string]string{fleetLabel: fleetValue}
		if i < n/2 {
			labels[halfLabel] = "true"
		}
		mc := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: leaseDurationSeconds},
		}
		if err := c.Create(ctx, mc); err != nil {
			return err
		}
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: clusterLease, Namespace: name, Labels: map[string]string{clusterv1.ClusterNameLabelKey: name}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr(clusterLease), RenewTime: ptr(metav1.NowMicro())},
		}
		return client.IgnoreAlreadyExists(c.Create(ctx, lease))
	})
	waitFleetReady(b, ctx, c, n)
}

// waitFleetReady sets the conditions a registration agent reports (Joined, Available) on
// every accepted cluster that lacks them, again if an OCM controller's status patch
// dropped them, until all n clusters can be selected by a Placement.
func waitFleetReady(b *testing.B, ctx context.Context, c client.Client, n int) {
	deadline := time.Now().Add(15 * time.Minute)
	for {
		var ready int
		var fix []string
		var last string
		forEachCluster(b, ctx, c, func(mc *clusterv1.ManagedCluster) {
			switch {
			case !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted):
				last = mc.Name + " is not accepted yet"
			case !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) ||
				!meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable):
				fix = append(fix, mc.Name)
				last = mc.Name + " is not joined and available"
			case len(mc.Spec.Taints) > 0:
				last = fmt.Sprintf("%s has taints %v", mc.Name, mc.Spec.Taints)
			case mc.Labels[clusterv1beta2.ClusterSetLabel] == "":
				last = mc.Name + " is in no ManagedClusterSet"
			default:
				ready++
			}
		})
		if ready == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d ManagedClusters became selectable (last: %s)", ready, n, last)
		}
		parallel(len(fix), 16, func(i int) error { return markAvailable(ctx, c, fix[i]) })
		time.Sleep(time.Second)
	}
}

// markAvailable reports a cluster joined and available, as its registration agent would.
func markAvailable(ctx context.Context, c client.Client, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			return err
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined,
			Status: metav1.ConditionTrue, Reason: "ManagedClusterJoined", Message: "Managed cluster joined"})
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", Message: "Managed cluster is available"})
		return c.Status().Update(ctx, mc)
	})
}

// forEachCluster calls fn for every bench ManagedCluster, a page at a time.
func forEachCluster(b *testing.B, ctx context.Context, c client.Client, fn func(*clusterv1.ManagedCluster)) {
	opts := []client.ListOption{client.MatchingLabels{fleetLabel: fleetValue}, client.Limit(pageSize)}
	list := &clusterv1.ManagedClusterList{}
	for {
		require.NoError(b, c.List(ctx, list, opts...))
		for i := range list.Items {
			fn(&list.Items[i])
		}
		if list.Continue == "" {
			return
		}
		opts = append(opts[:2:2], client.Continue(list.Continue))
	}
}

// renewLeases renews every cluster lease, 16 at a time, as each klusterlet does; a lease
// not created yet is skipped.
func renewLeases(ctx context.Context, c client.Client, names []string) error {
	var errs []error
	var mu sync.Mutex
	parallel(len(names), 16, func(i int) error {
		patch := fmt.Sprintf(`{"spec":{"renewTime":%q}}`, metav1.NowMicro().UTC().Format(metav1.RFC3339Micro))
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: clusterLease, Namespace: names[i]}}
		err := c.Patch(ctx, lease, client.RawPatch(types.MergePatchType, []byte(patch)))
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		return nil
	})
	return errors.Join(errs...)
}

// keepLeasesFresh renews the leases every leaseDurationSeconds until the returned
// function is called.
func keepLeasesFresh(ctx context.Context, c client.Client, names []string) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(leaseDurationSeconds * time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := renewLeases(ctx, c, names); err != nil {
					progress("renewing cluster leases: %v", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// churn flips the addon-health label of every cluster between available and unhealthy
// and renews its lease every period,
// until the returned function is called; that function returns the rounds made.
func churn(ctx context.Context, c client.Client, names []string, period time.Duration) func() int {
	ctx, cancel := context.WithCancel(ctx)
	rounds := make(chan int, 1)
	go func() {
		round := 0
		defer func() { rounds <- round }()
		for ctx.Err() == nil {
			round++
			start := time.Now()
			health := [2]string{"available", "unhealthy"}[round%2]
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, churnLabel, health)
			parallel(len(names), 16, func(i int) error {
				mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}
				if err := c.Patch(ctx, mc, client.RawPatch(types.MergePatchType, patch)); err != nil && ctx.Err() == nil {
					return err
				}
				return nil
			})
			if err := renewLeases(ctx, c, names); err != nil {
				progress("churn: renewing cluster leases: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(period - time.Since(start)):
			}
		}
	}()
	return func() int {
		cancel()
		return <-rounds
	}
}

// placementDecided counts the clusters a Placement's decisions list.
func placementDecided(b *testing.B, ctx context.Context, c client.Client, namespace, placement string) int {
	list := &clusterv1beta1.PlacementDecisionList{}
	require.NoError(b, c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: placement}))
	n := 0
	for _, pd := range list.Items {
		n += len(pd.Status.Decisions)
	}
	return n
}

// countByNamespace counts the objects of a kind by namespace, reading metadata only, a
// page at a time; name, when set, counts only objects of that name.
func countByNamespace(b *testing.B, ctx context.Context, c client.Client, gvk schema.GroupVersionKind, name string, opts ...client.ListOption) map[string]int {
	out := map[string]int{}
	for _, item := range listMetadata(b, ctx, c, gvk, opts...) {
		if name == "" || item.Name == name {
			out[item.Namespace]++
		}
	}
	return out
}

// listMetadata lists the metadata of every object of a kind (gvk names its List), a page
// at a time.
func listMetadata(b *testing.B, ctx context.Context, c client.Client, gvk schema.GroupVersionKind, opts ...client.ListOption) []metav1.PartialObjectMetadata {
	var out []metav1.PartialObjectMetadata
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk)
	opts = append(opts[:len(opts):len(opts)], client.Limit(pageSize))
	base := len(opts)
	for {
		require.NoError(b, c.List(ctx, list, opts...))
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out
		}
		opts = append(opts[:base:base], client.Continue(list.Continue))
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// uniform tells whether every namespace of m has the same number of objects, and which.
func uniform(m map[string]int) (int, bool) {
	first := -1
	for _, v := range m {
		if first == -1 {
			first = v
		} else if v != first {
			return 0, false
		}
	}
	return first, first > 0
}

// procStats reads a process's peak resident set (VmHWM) and CPU time (utime + stime).
func procStats(pid int) (peakRSS int64, cpu time.Duration, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			peakRSS = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces: state
	// is field 3, utime 14 and stime 15, in clock ticks (CLK_TCK is 100 on Linux).
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return peakRSS, time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// writesBetween are a user's writes audited in [from, to).
func writesBetween(b *testing.B, hub *harness.Cluster, user string, from, to time.Time) []harness.AuditEvent {
	all, err := hub.Writes(user, from)
	require.NoError(b, err)
	var out []harness.AuditEvent
	for _, e := range all {
		if e.RequestReceivedTimestamp.Before(to) {
			out = append(out, e)
		}
	}
	return out
}

// summarizeWrites counts writes by verb and resource, most frequent first:
// "create secrets 100, patch managedclusteraddons/status 42".
func summarizeWrites(events []harness.AuditEvent) string {
	if len(events) == 0 {
		return "none"
	}
	counts := writeCounts(events)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// hubAdmin is the harness's hub administrator: OCM's hub controllers,
// kube-controller-manager and this benchmark's client all write as it.
const hubAdmin = "harness-admin"

// timeline lists, for the manager and the hub administrator, their writes in [from, to)
// by verb and resource: how many, and the first and last relative to from, in the order
// they began. It shows which step of a handoff (manager, OCM) a convergence waited on.
func timeline(b *testing.B, hub *harness.Cluster, from, to time.Time) []string {
	return timelineOf(b, hub, from, to, []auditUser{{managerUser, "manager"}, {hubAdmin, "hub admin"}})
}

// auditUser is a user of the audit log and the short name a timeline gives it.
type auditUser struct{ user, short string }

// timelineOf is the timeline of these users' writes.
func timelineOf(b *testing.B, hub *harness.Cluster, from, to time.Time, users []auditUser) []string {
	type span struct {
		key         string
		n           int
		first, last time.Duration
	}
	var spans []*span
	for _, u := range users {
		byKey := map[string]*span{}
		for _, e := range writesBetween(b, hub, u.user, from, to) {
			key := u.short + " " + e.Verb
			if r := e.ObjectRef; r != nil {
				key += " " + r.Resource
				if r.Subresource != "" {
					key += "/" + r.Subresource
				}
			}
			at := e.RequestReceivedTimestamp.Sub(from)
			s := byKey[key]
			if s == nil {
				s = &span{key: key, first: at}
				byKey[key] = s
				spans = append(spans, s)
			}
			s.n++
			s.first, s.last = min(s.first, at), max(s.last, at)
		}
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	lines := make([]string, len(spans))
	for i, s := range spans {
		lines[i] = fmt.Sprintf("%-50s %5d  %8v .. %v", s.key, s.n, ms(s.first), ms(s.last))
	}
	return lines
}

// firstWrites formats up to n writes, one a line.
func firstWrites(events []harness.AuditEvent, n int) []string {
	var lines []string
	for _, e := range events[:min(n, len(events))] {
		lines = append(lines, e.String())
	}
	if len(events) > n {
		lines = append(lines, fmt.Sprintf("... and %d more", len(events)-n))
	}
	return lines
}

// waitQuiet waits until the user made no write for quiet (at most max), and returns how
// long it waited and whether the writes stopped.
func waitQuiet(b *testing.B, hub *harness.Cluster, user string, quiet, max time.Duration, alive func()) (time.Duration, bool) {
	start := time.Now()
	last := start
	for {
		alive()
		events, err := hub.Writes(user, last)
		require.NoError(b, err)
		for _, e := range events {
			if e.RequestReceivedTimestamp.After(last) {
				last = e.RequestReceivedTimestamp
			}
		}
		if time.Since(last) >= quiet {
			return time.Since(start), true
		}
		if time.Since(start) >= max {
			return time.Since(start), false
		}
		time.Sleep(min(5*time.Second, quiet-time.Since(last)+100*time.Millisecond))
	}
}

// ignoreNotFound ignores NotFound: the object is gone already.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// progress reports a step on stderr at once: b.Logf shows only when the benchmark ends,
// and a run at 1,000 clusters takes a while.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s fleet-bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// managerProfiler takes CPU profiles of the manager through its /debug/pprof when
// FLEET_BENCH_CPUPROFILE names a directory: a profile of FLEET_BENCH_PROFILE_SECONDS
// (default 60) from the start of a phase, written as <dir>/<phase>.pprof, and a heap
// profile at the end of propagation (<dir>/<phase>.heap.pprof), to read with
// `go tool pprof -top bin/gitops-addon <file>`.
type managerProfiler struct {
	b       *testing.B
	dir     string
	seconds int
	address string
}

func newManagerProfiler(b *testing.B) *managerProfiler {
	p := &managerProfiler{b: b, dir: os.Getenv("FLEET_BENCH_CPUPROFILE"), seconds: 60}
	if s := os.Getenv("FLEET_BENCH_PROFILE_SECONDS"); s != "" {
		seconds, err := strconv.Atoi(s)
		require.NoError(b, err, "FLEET_BENCH_PROFILE_SECONDS")
		p.seconds = seconds
	}
	if p.dir != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(b, err)
		p.address = l.Addr().String()
		require.NoError(b, l.Close())
	}
	return p
}

// flags are the manager's extra flags: its pprof endpoint when profiling.
func (p *managerProfiler) flags() map[string]string {
	flags := extraManagerFlags(p.b)
	if p.dir != "" {
		flags["--pprof-bind-address"] = p.address
	}
	return flags
}

// extraManagerFlags are FLEET_BENCH_MANAGER_FLAGS ("--flag=value ..."): manager flags to
// compare a setting in one run, e.g. --addon-workers=1.
func extraManagerFlags(b *testing.B) map[string]string {
	flags := map[string]string{}
	for _, field := range strings.Fields(os.Getenv("FLEET_BENCH_MANAGER_FLAGS")) {
		name, value, ok := strings.Cut(field, "=")
		if !ok || !strings.HasPrefix(name, "--") {
			b.Fatalf("FLEET_BENCH_MANAGER_FLAGS: %q is not --flag=value", field)
		}
		flags[name] = value
	}
	return flags
}

// heap writes the manager's heap profile now as <dir>/<phase>.heap.pprof.
func (p *managerProfiler) heap(ctx context.Context, phase string) {
	if p.dir == "" {
		return
	}
	p.fetch(ctx, phase, fmt.Sprintf("http://%s/debug/pprof/heap", p.address), filepath.Join(p.dir, phase+".heap.pprof"))
}

// fetch writes what url answers to file.
func (p *managerProfiler) fetch(ctx context.Context, phase, url, file string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		p.b.Errorf("profiling %s: %v", phase, err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.b.Errorf("profiling %s: %v", phase, err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(file, data, 0o644)
	}
	if err != nil {
		p.b.Errorf("profiling %s: %v", phase, err)
		return
	}
	progress("profile of %s written to %s", phase, file)
}

// cpu starts a CPU profile of the phase and returns a function that waits for it.
func (p *managerProfiler) cpu(ctx context.Context, phase string) (wait func()) {
	if p.dir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.fetch(ctx, phase, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.address, p.seconds), filepath.Join(p.dir, phase+".pprof"))
	}()
	return func() { <-done }
}

// startBenchHub starts the hub the fleet benchmarks run on (test/harness: etcd,
// kube-apiserver with an audit log, kube-controller-manager, OCM's hub controllers), installs
// the manager chart (no manager runs yet) and binds the Argo CD namespace to the default
// cluster set. The hub stops when the benchmark ends, its logs dumped if it failed.
func startBenchHub(b *testing.B, ctx context.Context, what string) (*harness.Fleet, client.Client, *install.Product) {
	if missing := harness.MissingBinaries(testenv.BinDir()); len(missing) > 0 {
		b.Fatalf("%v missing from %s: run `make e2e-env` to build them from source", missing, testenv.BinDir())
	}
	binary := filepath.Join(testenv.BinDir(), "gitops-addon")
	if _, err := os.Stat(binary); err != nil {
		b.Fatalf("%s missing: run `make build`", binary)
	}
	progress("%s: starting the hub", what)
	f, err := harness.Start(ctx, harness.Options{Logf: func(format string, args ...any) { progress(format, args...) }})
	require.NoError(b, err)
	b.Cleanup(func() {
		if b.Failed() {
			f.DumpLogs(os.Stderr, 40)
		}
		if err := f.Stop(); err != nil {
			b.Errorf("stopping the fleet: %v", err)
		}
	})
	cfg := rest.CopyConfig(f.Hub.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: harness.Scheme()})
	require.NoError(b, err)
	progress("installing the manager chart")
	p, err := install.OnHub(ctx, f, binary)
	require.NoError(b, err)
	require.NoError(b, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}})))
	require.NoError(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: argoNS},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "default"},
	}))
	return f, c, p
}
