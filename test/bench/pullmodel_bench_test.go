// Package bench holds benchmarks that need a real kube-apiserver (`make bench-pull`);
// they are not part of `make test`.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const argoNS = "openshift-gitops"

// pullWorkers is the manager's number of pull workers (the chart's default), and so the
// number of writers of every floor.
const pullWorkers = 4

// BenchmarkPullModel measures the pull model on a real kube-apiserver, with the manager in
// this process (pullWorkers pull workers), everything on the same cores. One run of one
// size (N Applications over C clusters) measures, in order:
//
//   - the floors, before any manager runs, with pullWorkers writers: N ManifestWorks of
//     the hub Application's size (floorWork, lighter than the manager's: no
//     manifestConfigs) created by a plain client (floor-works-s); N Applications and
//     those ManifestWorks (floor-apps+works-s);
//   - propagation: from creating the first of N Applications, pullWorkers at a time, to
//     every ManifestWork present (a list of them every 100 ms), against both floors;
//   - the feedback round trip, without and with the resources, and the manager's writes
//     and bytes per feedback change;
//   - steady writes: the manager's writes in 60 s once everything has converged;
//   - catch-up: a new manager over Applications whose ManifestWorks were deleted while no
//     manager ran, from its start to every ManifestWork present (the same list);
//   - memory (peak RSS, heap after a GC);
//   - the manager's own propagation (measureManagerPropagation): N Applications created
//     while no manager runs (as behind the kill switch), timed from a manager's start to
//     every ManifestWork present, against the floor of the very ManifestWorks the manager
//     wrote, re-created by a plain client with pullWorkers writers just before; a watch
//     counts the ManifestWorks for both, and both start once kube-apiserver and etcd are
//     idle. The CPU of kube-apiserver and etcd, of this process and of the machine's other
//     processes is reported for both, with the manager's requests per Application.
//
// PULL_BENCH_SIZES lists "clustersxapplications" (default "100x1000");
// PULL_BENCH_CPUPROFILE=dir writes a CPU profile of the manager's own propagation there;
// PULL_BENCH_MANAGER_QPS=qps/burst sets the manager's client rate (managerQPS).
func BenchmarkPullModel(b *testing.B) {
	sizes := os.Getenv("PULL_BENCH_SIZES")
	if sizes == "" {
		sizes = "100x1000"
	}
	for _, size := range strings.Split(sizes, ",") {
		clusters, apps, ok := strings.Cut(size, "x")
		c, err1 := strconv.Atoi(clusters)
		a, err2 := strconv.Atoi(apps)
		if !ok || err1 != nil || err2 != nil {
			b.Fatalf("PULL_BENCH_SIZES entry %q: want <clusters>x<applications>", size)
		}
		b.Run(fmt.Sprintf("clusters=%d/apps=%d", c, a), func(b *testing.B) {
			for range b.N {
				runPullBenchmark(b, c, a)
			}
		})
	}
}

func runPullBenchmark(b *testing.B, clusters, apps int) {
	env := testenv.Start(b, testenv.WithCRDPaths(append(append(testenv.OCMCRDPaths(),
		filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon", "crds")), testenv.ArgoCDCRDPaths(b)...)...),
		testenv.WithAPIServerArg("max-requests-inflight", "1000"), testenv.WithAPIServerArg("max-mutating-requests-inflight", "500"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fastClient(b, env)
	clusterNames := setUpFleet(b, ctx, c, clusters)

	// Floors, measured before the manager runs, with the manager's concurrency: the same
	// number of pull ManifestWorks created by a plain client; and the Applications plus
	// those ManifestWorks, which is what the end-to-end figure makes the apiserver do.
	floorWorks := timeIt(func() {
		parallel(apps, pullWorkers, func(i int) error { return c.Create(ctx, floorWork(i, clusterNames)) })
	})
	parallel(apps, pullWorkers, func(i int) error { return c.Delete(ctx, floorWork(i, clusterNames)) })
	waitCount(b, ctx, c, 0)
	floorBoth := timeIt(func() {
		parallel(apps, pullWorkers, func(i int) error {
			if err := c.Create(ctx, floorApp(i, clusterNames)); err != nil {
				return err
			}
			return c.Create(ctx, floorWork(i, clusterNames))
		})
	})
	parallel(apps, pullWorkers, func(i int) error {
		if err := c.Delete(ctx, floorApp(i, clusterNames)); err != nil {
			return err
		}
		return c.Delete(ctx, floorWork(i, clusterNames))
	})
	waitCount(b, ctx, c, 0)

	writes := &writeMeter{}
	redis := startRedis(b, ctx)
	stopManager := startManager(b, ctx, env, writes, redis.address)
	warmUp(b, ctx, c, clusterNames[0])

	propagation := timeIt(func() {
		parallel(apps, pullWorkers, func(i int) error { return c.Create(ctx, benchApp(i, clusterNames)) })
		waitCount(b, ctx, c, apps+1)
	})

	// Feedback: first the revision alone, then the revision with the spoke agent's
	// resource summary (guestbook's three resources), to measure what resources add.
	n := min(apps, 1000)
	time.Sleep(2 * time.Second)
	w0, b0 := writes.load()
	latencies := feedbackRoundTrips(b, ctx, env, c, clusterNames, n, "rev-")
	time.Sleep(2 * time.Second)
	w1, b1 := writes.load()
	resources := guestbookSummary(b)
	withResources := feedbackRoundTrips(b, ctx, env, c, clusterNames, n, "res-", stringFeedback(feedback.KeyResources, resources))
	time.Sleep(2 * time.Second)
	w2, b2 := writes.load()
	resourcesBytes := hubResourcesSize(b, ctx, c, benchApp(0, clusterNames).GetName())
	// Then with the resource tree too (guestbook's, as the agent ships it): what it adds to the
	// manager's API writes (nothing is expected: the tree goes to redis) and its redis writes.
	tree := guestbookTree(b)
	r0 := redis.writes(b)
	withTree := feedbackRoundTrips(b, ctx, env, c, clusterNames, n, "tree-", stringFeedback(feedback.KeyResources, resources),
		stringFeedback(feedback.KeyTree, tree))
	time.Sleep(2 * time.Second)
	w3, b3 := writes.load()
	r1 := redis.writes(b)
	largeFeedback, largeCached := boundedTreeOnTheHub(b, ctx, c, redis, clusterNames)
	time.Sleep(3 * time.Second)
	before, _ := writes.load()
	redisBefore := redis.writes(b)
	time.Sleep(60 * time.Second)
	after, _ := writes.load()
	steadyWrites := after - before
	steadyRedisWrites := redis.writes(b) - redisBefore

	// Catch-up: the ManifestWorks are gone while the manager is down (or its kill switch
	// on); a new manager recreates them all.
	stopManager()
	require.NoError(b, c.DeleteAllOf(ctx, &workv1.ManifestWork{}, client.MatchingLabels{pullnames.LabelPullWork: "true"}, client.InNamespace(clusterNames[0])))
	parallel(len(clusterNames), 8, func(i int) error {
		return c.DeleteAllOf(ctx, &workv1.ManifestWork{}, client.MatchingLabels{pullnames.LabelPullWork: "true"}, client.InNamespace(clusterNames[i]))
	})
	waitCount(b, ctx, c, 0)
	var firstWork time.Duration
	catchUp := timeIt(func() {
		start := time.Now()
		stopManager = startManager(b, ctx, env, writes, redis.address)
		waitAtLeast(b, ctx, c, 1)
		firstWork = time.Since(start)
		waitCount(b, ctx, c, apps+1)
	})
	stopManager()

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	peak := peakRSS()

	own := measureManagerPropagation(b, ctx, env, c, clusterNames, apps, writes)
	agreement := measureMetricsAgreement(b, ctx, env, c, clusterNames, apps, writes)
	own.floorWorks = floorWorks
	ratio := propagation.Seconds() / floorBoth.Seconds()
	b.ReportMetric(floorWorks.Seconds(), "floor-works-s")
	b.ReportMetric(floorBoth.Seconds(), "floor-apps+works-s")
	b.ReportMetric(propagation.Seconds(), "propagation-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(propagation.Seconds()/floorWorks.Seconds(), "ratio-vs-works-only")
	b.ReportMetric(catchUp.Seconds(), "catch-up-s")
	b.ReportMetric(catchUp.Seconds()/floorWorks.Seconds(), "catch-up-ratio")
	b.ReportMetric(firstWork.Seconds(), "catch-up-first-work-s")
	b.ReportMetric((catchUp-firstWork).Seconds()/floorWorks.Seconds(), "catch-up-ratio-after-start")
	b.ReportMetric(float64(percentile(latencies, 50).Milliseconds()), "feedback-p50-ms")
	b.ReportMetric(float64(percentile(latencies, 99).Milliseconds()), "feedback-p99-ms")
	b.ReportMetric(float64(percentile(withResources, 50).Milliseconds()), "feedback+resources-p50-ms")
	b.ReportMetric(float64(percentile(withResources, 99).Milliseconds()), "feedback+resources-p99-ms")
	b.ReportMetric(float64(w1-w0)/float64(n), "feedback-writes/app")
	b.ReportMetric(float64(w2-w1)/float64(n), "feedback+resources-writes/app")
	b.ReportMetric(float64(b1-b0)/float64(n), "feedback-bytes/app")
	b.ReportMetric(float64(b2-b1)/float64(n), "feedback+resources-bytes/app")
	b.ReportMetric(float64(len(resources)), "summary-feedback-bytes")
	b.ReportMetric(float64(resourcesBytes), "hub-app-resources-bytes")
	b.ReportMetric(float64(steadyWrites), "steady-writes/60s")
	b.ReportMetric(float64(len(tree)), "tree-feedback-bytes")
	b.ReportMetric(float64(w3-w2)/float64(n), "feedback+tree-writes/app")
	b.ReportMetric(float64(b3-b2)/float64(n), "feedback+tree-bytes/app")
	b.ReportMetric(float64(r1-r0)/float64(n), "tree-redis-writes/app")
	b.ReportMetric(float64(steadyRedisWrites), "steady-redis-writes/60s")
	b.ReportMetric(float64(largeFeedback), "bounded-tree-feedback-bytes")
	b.ReportMetric(float64(largeCached), "bounded-tree-cached-bytes")
	b.ReportMetric(float64(percentile(withTree, 50).Milliseconds()), "feedback+tree-p50-ms")
	b.ReportMetric(float64(percentile(withTree, 99).Milliseconds()), "feedback+tree-p99-ms")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MiB")
	own.report(b)
	agreement.report(b)
	b.Logf("clusters=%d apps=%d floor(works)=%v floor(apps+works)=%v propagation=%v ratio=%.2f (vs works only %.2f) catch-up=%v (%.2f x floor) feedback p50=%v p99=%v over %d updates, steady writes in 60s=%d, peak RSS (test process: apiserver clients, load and manager) %d MiB",
		clusters, apps, floorWorks.Round(time.Millisecond), floorBoth.Round(time.Millisecond), propagation.Round(time.Millisecond), ratio,
		propagation.Seconds()/floorWorks.Seconds(), catchUp.Round(time.Millisecond), catchUp.Seconds()/floorWorks.Seconds(),
		percentile(latencies, 50), percentile(latencies, 99), len(latencies), steadyWrites, peak>>20)
	b.Logf("resources: a feedback change with the summary (%d bytes in the ManifestWork's status; %d bytes of status.resources and "+
		"status.summary on the hub Application) costs the manager %.2f writes and %.0f bytes per Application, against %.2f writes "+
		"and %.0f bytes for the revision alone; p50=%v p99=%v",
		len(resources), resourcesBytes, float64(w2-w1)/float64(n), float64(b2-b1)/float64(n), float64(w1-w0)/float64(n), float64(b1-b0)/float64(n),
		percentile(withResources, 50), percentile(withResources, 99))
	b.Logf("tree: a feedback change with the resource tree too (%d bytes in the ManifestWork's status) costs the manager %.2f API writes "+
		"and %.0f bytes per Application, and %.2f redis writes (SET of the tree and of its diff, PUBLISH); %d redis writes in 60 steady seconds; p50=%v p99=%v",
		len(tree), float64(w3-w2)/float64(n), float64(b3-b2)/float64(n), float64(r1-r0)/float64(n), steadyRedisWrites,
		percentile(withTree, 50), percentile(withTree, 99))
	b.Logf("bounded tree: 3,000 nodes reported as its 1,000 managed resources (%d bytes of feedback, %d in the hub's redis) and "+
		"ResourceTreeBounded on the hub Application", largeFeedback, largeCached)
}

// hubResourcesSize is the size, as JSON, of what the resources add to a hub Application:
// status.resources and status.summary.
func hubResourcesSize(b *testing.B, ctx context.Context, c client.Client, name string) int {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(pullnames.ApplicationGVK)
	require.NoError(b, c.Get(ctx, types.NamespacedName{Namespace: argoNS, Name: name}, app))
	status, _, _ := unstructured.NestedMap(app.Object, "status")
	raw, err := json.Marshal(map[string]any{"resources": status["resources"], "summary": status["summary"]})
	require.NoError(b, err)
	return len(raw)
}

// guestbookSummary is the spoke agent's summary of the guestbook's three resources.
func guestbookSummary(b *testing.B) string {
	v, err := appresources.Of(
		appresources.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced"},
		appresources.Resource{Version: "v1", Kind: "Secret", Namespace: "guestbook", Name: "guestbook-db", Status: "Synced"},
		appresources.Resource{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"},
	).Encode()
	require.NoError(b, err)
	return v
}

// writeMeter counts a manager's write requests and their bytes, and all its requests.
type writeMeter struct{ n, bytes, requests atomic.Int64 }

func (m *writeMeter) load() (writes, bytes int64) { return m.n.Load(), m.bytes.Load() }

func (m *writeMeter) loadAll() (requests, writes, bytes int64) {
	return m.requests.Load(), m.n.Load(), m.bytes.Load()
}

// startManager runs a manager with the pull model, counting its write requests; the
// returned function stops it and waits until it has.
func startManager(b *testing.B, ctx context.Context, env *testenv.Env, writes *writeMeter, redis string) func() {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = managerQPS(b)
	cfg.WrapTransport = countWrites(writes)
	mgr, err := manager.New(cfg, manager.Options{MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		AgentImage: "quay.io/gitops-addon/gitops-addon:bench", PullModel: true, PullWorkers: pullWorkers, SkipControllerNameValidation: true,
		ArgoCDRedis: argocdcache.Options{Address: redis}, ArgoCDNamespace: argoNS})
	require.NoError(b, err)
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(mctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// managerQPS is the manager's client rate: 500 requests a second, bursts of 1,000, unless
// PULL_BENCH_MANAGER_QPS says otherwise ("200/400" is the chart's default). Above what
// this machine's apiserver serves, so that the benchmark measures the manager's work, not
// a rate it is told to keep.
func managerQPS(b *testing.B) (qps float32, burst int) {
	v := os.Getenv("PULL_BENCH_MANAGER_QPS")
	if v == "" {
		return 500, 1000
	}
	q, bu, ok := strings.Cut(v, "/")
	qf, err1 := strconv.ParseFloat(q, 32)
	bi, err2 := strconv.Atoi(bu)
	if !ok || err1 != nil || err2 != nil {
		b.Fatalf("PULL_BENCH_MANAGER_QPS is %q: want <qps>/<burst>", v)
	}
	return float32(qf), bi
}

// floorApp is an Application of the size of benchApp(i) that no one pulls.
func floorApp(i int, clusters []string) *unstructured.Unstructured {
	u := benchApp(i, clusters)
	u.SetName(fmt.Sprintf("floor-%05d", i))
	u.SetLabels(nil)
	return u
}

func fastClient(b *testing.B, env *testenv.Env) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(b, err)
	return c
}

// setUpFleet registers the clusters and one Placement in the Argo CD namespace whose
// decisions (100 clusters per PlacementDecision, as OCM splits them) list them all.
func setUpFleet(b *testing.B, ctx context.Context, c client.Client, n int) []string {
	require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cluster-%04d", i)
	}
	parallel(n, 8, func(i int) error {
		if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}); err != nil {
			return err
		}
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}})
	})
	for start := 0; start < n; start += 100 {
		pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: fmt.Sprintf("gitops-managed-decision-%d", start/100+1),
			Labels: map[string]string{clusterv1beta1.PlacementLabel: "gitops-managed"}}}
		require.NoError(b, c.Create(ctx, pd))
		for _, name := range names[start:min(start+100, n)] {
			pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: name})
		}
		require.NoError(b, c.Status().Update(ctx, pd))
	}
	return names
}

func benchApp(i int, clusters []string) *unstructured.Unstructured {
	cluster := clusters[i%len(clusters)]
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{
			"name": fmt.Sprintf("app-%05d", i), "namespace": argoNS,
			"labels":      map[string]any{pullnames.LabelPull: "true"},
			"annotations": map[string]any{pullnames.AnnotationCluster: cluster, pullnames.AnnotationSkipReconcile: "true"},
		},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://example.com/apps.git", "path": fmt.Sprintf("apps/%d", i), "targetRevision": "HEAD"},
			"destination": map[string]any{"server": "https://" + cluster + ".example.com", "namespace": "app"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}},
		},
	}}
	return u
}

// floorWork is a pull ManifestWork carrying benchApp(i) as it is on the hub, without the
// manager's manifestConfigs (the feedback rules): 946 bytes of JSON where the manager
// writes about 2,060. Kept as it is, so that floor-works-s compares with earlier runs; the
// manager's own propagation is compared with the manager's very ManifestWorks.
func floorWork(i int, clusters []string) *workv1.ManifestWork {
	app := benchApp(i, clusters)
	raw, _ := json.Marshal(app.Object)
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: pullnames.WorkName(argoNS, app.GetName()), Namespace: clusters[i%len(clusters)],
			Labels:      map[string]string{pullnames.LabelPullWork: "true"},
			Annotations: map[string]string{pullnames.AnnotationHubAppNamespace: argoNS, pullnames.AnnotationHubAppName: app.GetName()}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: k8sruntime.RawExtension{Raw: raw}}}}},
	}
}

// warmUp waits until the pull model is running: one Application, one ManifestWork.
func warmUp(b *testing.B, ctx context.Context, c client.Client, cluster string) {
	app := benchApp(0, []string{cluster})
	app.SetName("warm-up")
	require.NoError(b, c.Create(ctx, app))
	waitCount(b, ctx, c, 1)
}

// waitAtLeast waits for n pull ManifestWorks or more.
func waitAtLeast(b *testing.B, ctx context.Context, c client.Client, n int) {
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(schema.GroupVersion(workv1.GroupVersion).WithKind("ManifestWorkList"))
		require.NoError(b, c.List(ctx, list, client.MatchingLabels{pullnames.LabelPullWork: "true"}, client.Limit(int64(n))))
		if len(list.Items) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("never reached %d pull ManifestWorks", n)
}

// waitCount waits for exactly n pull ManifestWorks.
func waitCount(b *testing.B, ctx context.Context, c client.Client, n int) {
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(schema.GroupVersion(workv1.GroupVersion).WithKind("ManifestWorkList"))
		require.NoError(b, c.List(ctx, list, client.MatchingLabels{pullnames.LabelPullWork: "true"}))
		if len(list.Items) == n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("never reached %d pull ManifestWorks", n)
}

// feedbackRoundTrips changes the reported revision of n ManifestWorks (as the work agent
// would), 8 in flight, and measures each until the hub Application shows it, seen
// through a watch of Applications.
func feedbackRoundTrips(b *testing.B, ctx context.Context, env *testenv.Env, c client.Client, clusters []string, n int,
	revPrefix string, extra ...workv1.FeedbackValue) []time.Duration {
	seen := &sync.Map{} // app name -> chan struct{} closed when the wanted revision shows
	want := &sync.Map{} // app name -> revision
	// The watch lives as long as this round: two rounds keep no two caches of every Application.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	informer, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	require.NoError(b, err)
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(pullnames.ApplicationGVK)
	inf, err := informer.GetInformer(ctx, app)
	require.NoError(b, err)
	check := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
		if w, ok := want.Load(u.GetName()); ok && w == rev {
			if ch, ok := seen.LoadAndDelete(u.GetName()); ok {
				close(ch.(chan struct{}))
			}
		}
	}
	_, err = inf.AddEventHandler(handlerFuncs{add: check, update: func(_, n any) { check(n) }})
	require.NoError(b, err)
	go func() { _ = informer.Start(ctx) }()
	require.True(b, informer.WaitForCacheSync(ctx))

	latencies := make([]time.Duration, n)
	parallel(n, 8, func(i int) error {
		a := benchApp(i, clusters)
		rev := fmt.Sprintf("%s%d", revPrefix, i)
		done := make(chan struct{})
		seen.Store(a.GetName(), done)
		want.Store(a.GetName(), rev)
		w := &workv1.ManifestWork{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: clusters[i%len(clusters)], Name: pullnames.WorkName(argoNS, a.GetName())}, w); err != nil {
			return err
		}
		w.Status.ResourceStatus.Manifests = applicationReport(a.GetName(), feedbackValues(rev, extra...))
		start := time.Now()
		if err := c.Status().Update(ctx, w); err != nil {
			return err
		}
		select {
		case <-done:
			latencies[i] = time.Since(start)
		case <-time.After(time.Minute):
			return fmt.Errorf("Application %s never showed %s", a.GetName(), rev)
		}
		return nil
	})
	return latencies
}

// applicationReport is the work agent's report on a pull ManifestWork: the status
// feedback of the Application it carries (argoNS/app).
func applicationReport(app string, values []workv1.FeedbackValue) []workv1.ManifestCondition {
	return []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: pullnames.ApplicationGVK.Group, Version: pullnames.ApplicationGVK.Version,
			Kind: pullnames.ApplicationGVK.Kind, Resource: "applications", Namespace: argoNS, Name: app},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		Conditions:      []metav1.Condition{},
	}}
}

// feedbackValues are what the work agent reports: sync status and revision, and the
// agent's values (the resource summary, the tree) when there are some.
func feedbackValues(rev string, extra ...workv1.FeedbackValue) []workv1.FeedbackValue {
	return append([]workv1.FeedbackValue{
		{Name: feedback.KeySync, Value: workv1.FieldValue{Type: workv1.String, String: ptr("Synced")}},
		{Name: feedback.KeyRevision, Value: workv1.FieldValue{Type: workv1.String, String: ptr(rev)}},
	}, extra...)
}

// stringFeedback is one string feedback value.
func stringFeedback(name, value string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr(value)}}
}

type handlerFuncs struct {
	add    func(any)
	update func(any, any)
}

func (h handlerFuncs) OnAdd(obj any, _ bool) { h.add(obj) }
func (h handlerFuncs) OnUpdate(old, obj any) { h.update(old, obj) }
func (h handlerFuncs) OnDelete(any)          {}

func ptr[T any](v T) *T { return &v }

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func timeIt(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// parallel runs f(0..n-1) on workers goroutines and panics on the first error.
func parallel(n, workers int, f func(int) error) {
	var wg sync.WaitGroup
	next := &atomic.Int64{}
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		panic(err)
	}
}

func countWrites(m *writeMeter) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			m.requests.Add(1)
			if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "/events") && !strings.Contains(req.URL.Path, "/leases") {
				m.n.Add(1)
				m.bytes.Add(max(0, req.ContentLength))
			}
			return rt.RoundTrip(req)
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// peakRSS is this process's high-water resident set (VmHWM), in bytes.
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestMain sends controller-runtime's log to stderr at error level.
func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(m.Run())
}
