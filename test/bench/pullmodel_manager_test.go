package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// managerPropagation is the manager's own propagation: N pull Applications already on the
// hub when the manager starts (created while it was stopped, as behind the kill switch),
// timed from its start until every ManifestWork is present, against the floor of the same
// ManifestWorks, byte for byte, created by a plain client in the same run just before.
type managerPropagation struct {
	apps int
	// floor is the plain client's time for the N ManifestWorks, writers as many as the
	// manager's pull workers; total the manager's, from its start; firstWork its start-up.
	floor, total, firstWork time.Duration
	// floorWorks is floor-works-s of the same run (lighter ManifestWorks, measured first),
	// when there is one.
	floorWorks time.Duration
	// CPU of kube-apiserver and etcd, and of this process (the plain client or the
	// manager, and the watch that counts), in the floor and in the manager's propagation.
	floorServerCPU, serverCPU, floorProcessCPU, processCPU time.Duration
	// CPU of the machine's other processes meanwhile: what disturbed the measurement.
	floorOtherCPU, otherCPU time.Duration
	// The manager's requests (every verb, watches and the caches' lists included), its
	// writes and their bytes, over the propagation.
	requests, writes, bytes int64
	// reconciles are the propagation controller's, over the propagation.
	reconciles float64
}

// measureManagerPropagation runs with the manager stopped and the pull ManifestWorks of
// the catch-up present. It keeps those ManifestWorks as the floor's payload, deletes them
// and every pull Application, measures the floor (a watch counts the ManifestWorks, the
// same watch that times the manager), deletes the floor's ManifestWorks, creates the N
// Applications with no manager running, then starts one and times it.
func measureManagerPropagation(b *testing.B, ctx context.Context, env *testenv.Env, c client.Client, clusters []string, apps int,
	meter *writeMeter) managerPropagation {
	payloads := managerWorks(b, ctx, c, clusters, apps)
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(pullnames.ApplicationGVK)
	require.NoError(b, c.DeleteAllOf(ctx, app, client.InNamespace(argoNS), client.MatchingLabels{pullnames.LabelPull: "true"}))
	counter := startWorkCounter(b, ctx, env)
	deleteWorks(b, ctx, c, clusters, counter)
	waitApplications(b, ctx, c, 0)

	m := managerPropagation{apps: apps}
	settle(b)
	server0, process0, machine0 := serverCPU(b), processCPU(b), machineCPU(b)
	m.floor = timeIt(func() {
		parallel(apps, pullWorkers, func(i int) error { return c.Create(ctx, payloads[i].DeepCopy()) })
		counter.waitFor(b, "the floor's ManifestWorks", func(n int) bool { return n == apps })
	})
	m.floorServerCPU, m.floorProcessCPU = serverCPU(b)-server0, processCPU(b)-process0
	m.floorOtherCPU = max(0, machineCPU(b)-machine0-m.floorServerCPU-m.floorProcessCPU)
	deleteWorks(b, ctx, c, clusters, counter)

	parallel(apps, 8, func(i int) error { return c.Create(ctx, benchApp(i, clusters)) })
	settle(b)
	requests0, writes0, bytes0 := meter.loadAll()
	reconciles0 := reconciles(b, pullmodel.ControllerName)
	server0, process0, machine0 = serverCPU(b), processCPU(b), machineCPU(b)
	var stop func()
	stopProfile := profileCPU(b, fmt.Sprintf("manager-%dx%d.pprof", len(clusters), apps))
	m.total = timeIt(func() {
		start := time.Now()
		stop = startManager(b, ctx, env, meter, "")
		counter.waitFor(b, "the manager's first ManifestWork", func(n int) bool { return n > 0 })
		m.firstWork = time.Since(start)
		counter.waitFor(b, "the manager's ManifestWorks", func(n int) bool { return n == apps })
	})
	stopProfile()
	m.serverCPU, m.processCPU = serverCPU(b)-server0, processCPU(b)-process0
	m.otherCPU = max(0, machineCPU(b)-machine0-m.serverCPU-m.processCPU)
	requests1, writes1, bytes1 := meter.loadAll()
	m.requests, m.writes, m.bytes = requests1-requests0, writes1-writes0, bytes1-bytes0
	m.reconciles = reconciles(b, pullmodel.ControllerName) - reconciles0
	stop()
	return m
}

func (m managerPropagation) report(b *testing.B) {
	per := func(v int64) float64 { return float64(v) / float64(m.apps) }
	b.ReportMetric(m.floor.Seconds(), "manager-floor-works-s")
	b.ReportMetric(m.total.Seconds(), "manager-propagation-s")
	b.ReportMetric(m.total.Seconds()/m.floor.Seconds(), "manager-ratio")
	if m.floorWorks > 0 {
		b.ReportMetric(m.total.Seconds()/m.floorWorks.Seconds(), "manager-ratio-vs-floor-works")
	}
	b.ReportMetric(m.firstWork.Seconds(), "manager-first-work-s")
	b.ReportMetric((m.total-m.firstWork).Seconds()/m.floor.Seconds(), "manager-ratio-after-start")
	b.ReportMetric(per(m.requests), "manager-requests/app")
	b.ReportMetric(per(m.writes), "manager-writes/app")
	b.ReportMetric(m.reconciles/float64(m.apps), "manager-reconciles/app")
	b.ReportMetric(per(m.bytes), "manager-bytes/app")
	b.ReportMetric(m.floorServerCPU.Seconds(), "manager-floor-server-cpu-s")
	b.ReportMetric(m.serverCPU.Seconds(), "manager-server-cpu-s")
	b.ReportMetric(m.floorProcessCPU.Seconds(), "manager-floor-process-cpu-s")
	b.ReportMetric(m.processCPU.Seconds(), "manager-process-cpu-s")
	b.ReportMetric(m.floorOtherCPU.Seconds(), "manager-floor-other-cpu-s")
	b.ReportMetric(m.otherCPU.Seconds(), "manager-other-cpu-s")
	b.Logf("the manager's own propagation of %d Applications present at its start: %v (first ManifestWork after %v), floor %v "+
		"(%d writers, the same ManifestWorks): ratio %.2f (%.2f after start); %.2f reconciles, %.2f requests, %.2f writes and %.0f bytes per Application; "+
		"CPU of kube-apiserver and etcd %v (floor %v), of this process %v (floor %v), of other processes %v (floor %v)",
		m.apps, m.total.Round(time.Millisecond), m.firstWork.Round(time.Millisecond), m.floor.Round(time.Millisecond), pullWorkers,
		m.total.Seconds()/m.floor.Seconds(), (m.total-m.firstWork).Seconds()/m.floor.Seconds(), m.reconciles/float64(m.apps), per(m.requests),
		per(m.writes), per(m.bytes),
		m.serverCPU, m.floorServerCPU, m.processCPU, m.floorProcessCPU, m.otherCPU, m.floorOtherCPU)
}

// managerWorks are the ManifestWorks the manager wrote for benchApp(0..apps-1), as a
// client would create them again: name, namespace, labels, annotations and spec.
func managerWorks(b *testing.B, ctx context.Context, c client.Client, clusters []string, apps int) []*workv1.ManifestWork {
	list := &workv1.ManifestWorkList{}
	require.NoError(b, c.List(ctx, list, client.MatchingLabels{pullnames.LabelPullWork: "true"}))
	byName := map[types.NamespacedName]*workv1.ManifestWork{}
	for i := range list.Items {
		w := &list.Items[i]
		byName[client.ObjectKeyFromObject(w)] = &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: w.Labels, Annotations: w.Annotations},
			Spec:       w.Spec,
		}
	}
	out := make([]*workv1.ManifestWork, apps)
	for i := range out {
		key := types.NamespacedName{Namespace: clusters[i%len(clusters)], Name: pullnames.WorkName(argoNS, benchApp(i, clusters).GetName())}
		out[i] = byName[key]
		require.NotNil(b, out[i], "the manager's ManifestWork %s", key)
	}
	return out
}

// deleteWorks deletes every pull ManifestWork and waits until the counter sees none.
func deleteWorks(b *testing.B, ctx context.Context, c client.Client, clusters []string, counter *workCounter) {
	parallel(len(clusters), 8, func(i int) error {
		return c.DeleteAllOf(ctx, &workv1.ManifestWork{}, client.MatchingLabels{pullnames.LabelPullWork: "true"}, client.InNamespace(clusters[i]))
	})
	counter.waitFor(b, "no pull ManifestWork", func(n int) bool { return n == 0 })
}

// waitApplications waits for exactly n pull Applications.
func waitApplications(b *testing.B, ctx context.Context, c client.Client, n int) {
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(pullnames.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
		require.NoError(b, c.List(ctx, list, client.InNamespace(argoNS), client.MatchingLabels{pullnames.LabelPull: "true"}))
		if len(list.Items) == n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("never reached %d pull Applications", n)
}

// settle waits until kube-apiserver and etcd have finished what the previous step left
// (watch deliveries, the aftermath of deletions): at least a second, then until they use
// less than a tenth of a core over half a second (at most a minute).
func settle(b *testing.B) {
	time.Sleep(time.Second)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		before := serverCPU(b)
		time.Sleep(500 * time.Millisecond)
		if serverCPU(b)-before < 50*time.Millisecond {
			return
		}
	}
	b.Logf("kube-apiserver and etcd were still busy after a minute")
}

// workCounter counts the pull ManifestWorks through a watch of their metadata: cheaper
// for the apiserver than listing them again and again, and the same for the floor and
// the manager.
type workCounter struct {
	mu    sync.Mutex
	works map[types.NamespacedName]struct{}
}

func startWorkCounter(b *testing.B, ctx context.Context, env *testenv.Env) *workCounter {
	w := &workCounter{works: map[types.NamespacedName]struct{}{}}
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme,
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{pullnames.LabelPullWork: "true"})})
	require.NoError(b, err)
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.GroupVersion(workv1.GroupVersion).WithKind("ManifestWork"))
	inf, err := informers.GetInformer(ctx, obj)
	require.NoError(b, err)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { w.set(o, true) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			w.set(o, false)
		},
	})
	require.NoError(b, err)
	go func() { _ = informers.Start(ctx) }()
	require.True(b, informers.WaitForCacheSync(ctx))
	return w
}

func (w *workCounter) set(o any, present bool) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if present {
		w.works[client.ObjectKeyFromObject(obj)] = struct{}{}
	} else {
		delete(w.works, client.ObjectKeyFromObject(obj))
	}
}

func (w *workCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.works)
}

// waitFor waits until the count satisfies ok, looking every 5 ms.
func (w *workCounter) waitFor(b *testing.B, what string, ok func(int) bool) {
	deadline := time.Now().Add(15 * time.Minute)
	for !ok(w.count()) {
		if time.Now().After(deadline) {
			b.Fatalf("never reached %s (%d pull ManifestWorks)", what, w.count())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reconciles is how many reconciles a controller has run in this process (all its
// managers), from controller-runtime's metrics.
func reconciles(b *testing.B, controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(b, err)
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// serverCPU is the CPU time kube-apiserver and etcd (this process's children) have used.
func serverCPU(b *testing.B) time.Duration {
	entries, err := os.ReadDir("/proc")
	require.NoError(b, err)
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(raw)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		comm, fields := s[open+1:closing], strings.Fields(s[closing+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) ||
			!slices.ContainsFunc([]string{"etcd", "kube-apiserver"}, func(p string) bool { return strings.HasPrefix(comm, p) }) {
			continue
		}
		_, cpu, err := procStats(pid)
		require.NoError(b, err)
		total += cpu
	}
	require.NotZero(b, total, "no kube-apiserver or etcd child process found")
	return total
}

// profileCPU writes a CPU profile of this process (the manager, and the watch that
// counts) into PULL_BENCH_CPUPROFILE's directory, when set, until the returned function.
func profileCPU(b *testing.B, name string) (stop func()) {
	dir := os.Getenv("PULL_BENCH_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
		b.Logf("CPU profile of the manager's propagation: %s", f.Name())
	}
}

// machineCPU is the CPU time all the machine's processes have used (/proc/stat).
func machineCPU(b *testing.B) time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	require.NoError(b, err)
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	require.GreaterOrEqual(b, len(fields), 9, "/proc/stat: %q", line)
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(fields[i], 10, 64)
		require.NoError(b, err)
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// processCPU is the CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	_, cpu, err := procStats(os.Getpid())
	require.NoError(b, err)
	return cpu
}
