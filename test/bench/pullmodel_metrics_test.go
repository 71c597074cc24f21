package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// metricsAgreement is the propagation of a burst of Application changes measured twice in
// the same run: by this benchmark, from just before each change is written to the moment
// the stand-in work agent has reported its ManifestWork applied, and by the manager's own
// gitops_addon_pull_propagation_seconds histogram (from the manager seeing the change to
// it seeing the apply), read from the registry its metrics endpoint serves.
type metricsAgreement struct {
	changes            int
	benchP50, benchP99 time.Duration
	// watchP50 and watchP99 start each change when a watch of Applications in this process
	// delivers it, as the manager's clock does (it cannot know when a client began a write).
	watchP50, watchP99       time.Duration
	metricsP50, metricsP99   time.Duration
	metricsCount, benchCount int
}

// measureMetricsAgreement runs with the manager stopped and every benchApp present with
// its ManifestWork. A stand-in work agent (the benchmark has no spoke) reports each pull
// ManifestWork applied as soon as it sees its spec; once every work is applied, a manager
// starts and n Applications change their targetRevision at once.
func measureMetricsAgreement(b *testing.B, ctx context.Context, env *testenv.Env, c client.Client, clusters []string, apps int,
	meter *writeMeter) metricsAgreement {
	n := min(apps, 1000)
	agent := startStandInWorkAgent(b, ctx, env, c)
	agent.waitAllApplied(b, apps)
	stop := startManager(b, ctx, env, meter, "")
	defer stop()
	settle(b)
	visible := watchRevisions(b, ctx, env)
	before := histogramOf(b, hubmetrics.PullPropagation)

	// A burst, as an ApplicationSet template change makes: every change written (pullWorkers
	// writers) without waiting for the previous ones to propagate, each timed from its write.
	starts := make([]time.Time, n)
	applied := make([]<-chan time.Time, n)
	parallel(n, pullWorkers, func(i int) error {
		name := benchApp(i, clusters).GetName()
		revision := fmt.Sprintf("metrics-%05d", i)
		applied[i] = agent.await(name, revision)
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(pullnames.ApplicationGVK)
			if err := c.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, app); err != nil {
				return err
			}
			if err := unstructured.SetNestedField(app.Object, revision, "spec", "source", "targetRevision"); err != nil {
				return err
			}
			starts[i] = time.Now() // the write of the change, not the read before it
			return c.Update(ctx, app)
		})
	})
	latencies, fromWatch := make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		select {
		case at := <-applied[i]:
			latencies[i] = at.Sub(starts[i])
			fromWatch[i] = at.Sub(visible.at(benchApp(i, clusters).GetName(), fmt.Sprintf("metrics-%05d", i)))
		case <-time.After(5 * time.Minute):
			b.Fatalf("the ManifestWork of %s never carried its change", benchApp(i, clusters).GetName())
		}
	}

	// The manager observes an apply when its watch delivers the stand-in's report, a
	// moment after the report's write returned here.
	var after *dto.Histogram
	require.Eventually(b, func() bool {
		after = histogramOf(b, hubmetrics.PullPropagation)
		return after.GetSampleCount()-before.GetSampleCount() >= uint64(n)
	}, time.Minute, 50*time.Millisecond, "the manager's propagation histogram counts the %d changes", n)
	return metricsAgreement{
		changes: n, benchCount: len(latencies), metricsCount: int(after.GetSampleCount() - before.GetSampleCount()),
		benchP50: percentile(latencies, 50), benchP99: percentile(latencies, 99),
		watchP50: percentile(fromWatch, 50), watchP99: percentile(fromWatch, 99),
		metricsP50: histogramQuantile(0.50, before, after), metricsP99: histogramQuantile(0.99, before, after),
	}
}

func (m metricsAgreement) report(b *testing.B) {
	ratio := func(metrics, bench time.Duration) float64 { return metrics.Seconds() / bench.Seconds() }
	b.ReportMetric(float64(m.benchP50.Milliseconds()), "change-propagation-p50-ms")
	b.ReportMetric(float64(m.benchP99.Milliseconds()), "change-propagation-p99-ms")
	b.ReportMetric(float64(m.metricsP50.Milliseconds()), "metrics-propagation-p50-ms")
	b.ReportMetric(float64(m.metricsP99.Milliseconds()), "metrics-propagation-p99-ms")
	b.ReportMetric(float64(m.watchP50.Milliseconds()), "change-propagation-from-watch-p50-ms")
	b.ReportMetric(float64(m.watchP99.Milliseconds()), "change-propagation-from-watch-p99-ms")
	b.ReportMetric(ratio(m.metricsP50, m.benchP50), "metrics/bench-p50")
	b.ReportMetric(ratio(m.metricsP99, m.benchP99), "metrics/bench-p99")
	b.ReportMetric(ratio(m.metricsP50, m.watchP50), "metrics/bench-from-watch-p50")
	b.ReportMetric(ratio(m.metricsP99, m.watchP99), "metrics/bench-from-watch-p99")
	b.Logf("propagation of a burst of %d Application changes (a stand-in work agent applies each ManifestWork at once): measured here "+
		"from each write p50=%v p99=%v, from its delivery on a watch p50=%v p99=%v; gitops_addon_pull_propagation_seconds "+
		"(%d observations) p50=%v p99=%v; metrics/bench p50 %.2f, p99 %.2f; metrics/bench-from-watch p50 %.2f, p99 %.2f",
		m.changes, m.benchP50.Round(time.Millisecond), m.benchP99.Round(time.Millisecond),
		m.watchP50.Round(time.Millisecond), m.watchP99.Round(time.Millisecond), m.metricsCount,
		m.metricsP50.Round(time.Millisecond), m.metricsP99.Round(time.Millisecond),
		ratio(m.metricsP50, m.benchP50), ratio(m.metricsP99, m.benchP99),
		ratio(m.metricsP50, m.watchP50), ratio(m.metricsP99, m.watchP99))
}

// histogramOf is a histogram as the manager's metrics endpoint serves it.
func histogramOf(b *testing.B, name string) *dto.Histogram {
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(b, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetHistogram()
		}
	}
	b.Fatalf("the metrics endpoint serves no %s", name)
	return nil
}

// histogramQuantile is Prometheus's histogram_quantile over the observations made between
// two readings of a histogram: linear within the bucket that holds the quantile.
func histogramQuantile(q float64, before, after *dto.Histogram) time.Duration {
	total := float64(after.GetSampleCount() - before.GetSampleCount())
	if total == 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, bucket := range after.GetBucket() {
		upper := bucket.GetUpperBound()
		count := float64(bucket.GetCumulativeCount() - before.GetBucket()[i].GetCumulativeCount())
		if count >= rank {
			within := 0.0
			if count > below {
				within = (rank - below) / (count - below)
			}
			return time.Duration((lower + (upper-lower)*within) * float64(time.Second))
		}
		lower, below = upper, count
	}
	// Above the highest bound, as histogram_quantile reports it: that bound.
	return time.Duration(lower * float64(time.Second))
}

// standInWorkAgent reports every pull ManifestWork applied once it sees its current spec,
// as OCM's work agent does on a spoke, with pullWorkers writers.
type standInWorkAgent struct {
	c       client.Client
	mu      sync.Mutex
	applied map[string]int64 // work name -> generation reported applied
	// waiting are the Applications whose ManifestWork is awaited with a revision.
	waiting map[string]waiter
	queue   chan *workv1.ManifestWork
}

type waiter struct {
	revision []byte
	done     chan time.Time
}

func startStandInWorkAgent(b *testing.B, ctx context.Context, env *testenv.Env, c client.Client) *standInWorkAgent {
	a := &standInWorkAgent{c: c, applied: map[string]int64{}, waiting: map[string]waiter{}, queue: make(chan *workv1.ManifestWork, 100000)}
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme,
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{pullnames.LabelPullWork: "true"})})
	require.NoError(b, err)
	inf, err := informers.GetInformer(ctx, &workv1.ManifestWork{})
	require.NoError(b, err)
	see := func(o any) {
		if w, ok := o.(*workv1.ManifestWork); ok && !appliedNow(w) {
			a.queue <- w
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o any) { see(o) }})
	require.NoError(b, err)
	for range pullWorkers {
		go a.run(ctx)
	}
	go func() { _ = informers.Start(ctx) }()
	require.True(b, informers.WaitForCacheSync(ctx))
	return a
}

// await returns the channel that receives when the Application's ManifestWork carrying
// revision was reported applied.
func (a *standInWorkAgent) await(app, revision string) <-chan time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := waiter{revision: []byte(`"targetRevision":"` + revision + `"`), done: make(chan time.Time, 1)}
	a.waiting[app] = w
	return w.done
}

func (a *standInWorkAgent) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-a.queue:
			if err := a.apply(ctx, w); err != nil && ctx.Err() == nil {
				a.queue <- w
			}
		}
	}
}

func (a *standInWorkAgent) apply(ctx context.Context, seen *workv1.ManifestWork) error {
	a.mu.Lock()
	done := a.applied[seen.Name] >= seen.Generation
	a.mu.Unlock()
	if done {
		return nil
	}
	w := seen.DeepCopy()
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
		Reason: "AppliedManifestWorkComplete", ObservedGeneration: w.Generation})
	if err := a.c.Status().Update(ctx, w); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed since (the watch queues the newer version) or gone
		}
		return err
	}
	at := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied[w.Name] = max(a.applied[w.Name], w.Generation)
	app := w.Annotations[pullnames.AnnotationHubAppName]
	waiting, ok := a.waiting[app]
	if !ok {
		return nil
	}
	for _, m := range w.Spec.Workload.Manifests {
		if bytes.Contains(m.Raw, waiting.revision) {
			waiting.done <- at
			delete(a.waiting, app)
			return nil
		}
	}
	return nil
}

// waitAllApplied waits until n pull ManifestWorks are reported applied.
func (a *standInWorkAgent) waitAllApplied(b *testing.B, n int) {
	require.Eventually(b, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.applied) >= n
	}, 10*time.Minute, 50*time.Millisecond, "the stand-in work agent applies the %d ManifestWorks", n)
}

func appliedNow(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= w.Generation
}

// revisionWatch records when a watch of the pull Applications delivers each targetRevision.
type revisionWatch struct {
	mu   sync.Mutex
	seen map[string]time.Time // name + "@" + revision -> first delivery
}

func watchRevisions(b *testing.B, ctx context.Context, env *testenv.Env) *revisionWatch {
	w := &revisionWatch{seen: map[string]time.Time{}}
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme,
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{pullnames.LabelPull: "true"})})
	require.NoError(b, err)
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(pullnames.ApplicationGVK)
	inf, err := informers.GetInformer(ctx, app)
	require.NoError(b, err)
	record := func(o any) {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return
		}
		rev, _, _ := unstructured.NestedString(u.Object, "spec", "source", "targetRevision")
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.seen[u.GetName()+"@"+rev]; !ok {
			w.seen[u.GetName()+"@"+rev] = now
		}
	}
	_, err = inf.AddEventHandler(handlerFuncs{add: record, update: func(_, o any) { record(o) }})
	require.NoError(b, err)
	go func() { _ = informers.Start(ctx) }()
	require.True(b, informers.WaitForCacheSync(ctx))
	return w
}

// at is when the watch delivered an Application with a revision (it has, once the change
// it carries reached a ManifestWork).
func (w *revisionWatch) at(name, revision string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[name+"@"+revision]
}
