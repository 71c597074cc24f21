package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
)

// latencyCount is the count and sum of one of the pull latency histograms on
// controller-runtime's registry, which the manager's metrics endpoint serves. The
// package's managers share it: the scenarios run one at a time, and a manager observes
// only what the test makes its work agent report.
type latencyCount struct {
	count uint64
	sum   float64
}

func latency(t *testing.T, name string) latencyCount {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			h := f.GetMetric()[0].GetHistogram()
			return latencyCount{count: h.GetSampleCount(), sum: h.GetSampleSum()}
		}
	}
	t.Fatalf("the metrics endpoint serves no %s", name)
	return latencyCount{}
}

// waitLatencyCount waits until a histogram has counted want observations since before,
// lets the pull model settle, and checks that it counted exactly that many.
func waitLatencyCount(t *testing.T, name string, before latencyCount, want uint64) latencyCount {
	t.Helper()
	require.Eventually(t, func() bool { return latency(t, name).count >= before.count+want }, timeout, poll,
		"%s counts %d more", name, want)
	waitControllerIdle(t, pullmodel.ControllerName)
	now := latency(t, name)
	require.Equal(t, before.count+want, now.count, "%s counts exactly %d more", name, want)
	return now
}

// markAppliedAgain has the work agent report the work's current spec applied once more,
// after a failure, as it does when a re-apply fails and then succeeds.
func (p *pullHub) markAppliedAgain(w *workv1.ManifestWork) {
	p.t.Helper()
	for _, status := range []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionTrue} {
		require.Eventually(p.t, func() bool {
			cur := &workv1.ManifestWork{}
			if p.c.Get(p.ctx, client.ObjectKeyFromObject(w), cur) != nil {
				return false
			}
			cur.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: status, Reason: "Test",
				ObservedGeneration: cur.Generation, LastTransitionTime: metav1.Now()}}
			return p.c.Status().Update(p.ctx, cur) == nil
		}, timeout, poll, "reporting %s/%s Applied %s", w.Namespace, w.Name, status)
		waitControllerIdle(p.t, pullmodel.ControllerName)
	}
}

// TestPullModelMetrics: the propagation histogram counts each Application created, once,
// when the work agent reports its ManifestWork applied, and the status return histogram
// once the spoke's first status is on the hub Application; a work agent reporting again
// adds nothing, a spec change adds one of each.
func TestPullModelMetrics(t *testing.T) {
	s := startPullScenario(sharedPullHub(t), "pull-metrics")
	const apps = 5
	propagated, returned := latency(t, hubmetrics.PullPropagation), latency(t, hubmetrics.PullStatusReturn)
	created := time.Now()
	works := make([]*workv1.ManifestWork, apps)
	for i := range apps {
		name, cluster := fmt.Sprintf("metrics-%d", i), []string{s.cluster1, s.cluster2}[i%2]
		s.application(pullApp(name, s.ns, cluster), nil)
		works[i] = s.waitWork(cluster, s.ns, name, func(*workv1.ManifestWork) bool { return true }, "created")
	}
	waitControllerIdle(t, pullmodel.ControllerName)
	require.Equal(t, propagated, latency(t, hubmetrics.PullPropagation), "nothing is observed before the work agent applies")

	t.Run("each ManifestWork applied: one propagation each, timed from the Application's creation", func(t *testing.T) {
		s := s.with(t)
		for _, w := range works {
			s.markApplied(w)
		}
		now := waitLatencyCount(t, hubmetrics.PullPropagation, propagated, apps)
		assert.Greater(t, now.sum-propagated.sum, 0.0)
		assert.LessOrEqual(t, now.sum-propagated.sum, apps*time.Since(created).Seconds(), "each one within the test's time")
		propagated = now
	})
	t.Run("each spoke's first status on the hub: one status return each", func(t *testing.T) {
		s := s.with(t)
		for _, w := range works {
			s.report(w, map[string]string{feedback.KeyHealth: "Progressing", feedback.KeySync: "OutOfSync"}, nil)
		}
		now := waitLatencyCount(t, hubmetrics.PullStatusReturn, returned, apps)
		assert.LessOrEqual(t, now.sum-returned.sum, apps*time.Since(created).Seconds())
		require.Eventually(t, func() bool {
			h, _, _ := unstructured.NestedString(s.getApp(s.ns, "metrics-0").Object, "status", "health", "status")
			return h == "Progressing"
		}, timeout, poll, "the status it counted is on the hub Application")
		returned = now
	})
	t.Run("the work agent reports again (a failed re-apply, then applied; a new status): nothing more", func(t *testing.T) {
		s := s.with(t)
		s.markAppliedAgain(works[0])
		s.report(works[1], map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "Synced"}, nil)
		waitControllerIdle(t, pullmodel.ControllerName)
		assert.Equal(t, propagated.count, latency(t, hubmetrics.PullPropagation).count)
		assert.Equal(t, returned.count, latency(t, hubmetrics.PullStatusReturn).count)
	})
	t.Run("a spec change: one more of each, once applied and once its status is back", func(t *testing.T) {
		s := s.with(t)
		app := s.getApp(s.ns, "metrics-2")
		require.NoError(t, unstructured.SetNestedField(app.Object, "v2", "spec", "source", "targetRevision"))
		changed := time.Now()
		require.NoError(t, s.c.Update(s.ctx, app))
		w := s.waitWork(works[2].Namespace, s.ns, "metrics-2", func(w *workv1.ManifestWork) bool {
			rev, _, _ := unstructured.NestedString(spokeApp(t, w).Object, "spec", "source", "targetRevision")
			return rev == "v2"
		}, "targetRevision v2")
		waitControllerIdle(t, pullmodel.ControllerName)
		assert.Equal(t, propagated.count, latency(t, hubmetrics.PullPropagation).count, "not applied yet")
		s.markApplied(w)
		now := waitLatencyCount(t, hubmetrics.PullPropagation, propagated, 1)
		assert.LessOrEqual(t, now.sum-propagated.sum, time.Since(changed).Seconds(), "timed from the change, not the creation")
		s.report(w, map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "Synced", feedback.KeyRevision: "v2"}, nil)
		waitLatencyCount(t, hubmetrics.PullStatusReturn, returned, 1)
	})
}

// TestPullModelMetricsAcrossARestart stops the manager, so it runs on a pull hub of its
// own: a restarted manager invents no observation for what was applied before it started,
// and measures a change shipped before the restart and applied after it from its start.
func TestPullModelMetricsAcrossARestart(t *testing.T) {
	p := startPullHub(t, true)
	s := startPullScenario(p, "pull-metrics-restart")
	before := latency(t, hubmetrics.PullPropagation)
	created := time.Now()
	s.application(pullApp("applied-before", s.ns, s.cluster1), nil)
	s.application(pullApp("applied-after", s.ns, s.cluster1), nil)
	early := s.waitWork(s.cluster1, s.ns, "applied-before", func(*workv1.ManifestWork) bool { return true }, "created")
	late := s.waitWork(s.cluster1, s.ns, "applied-after", func(*workv1.ManifestWork) bool { return true }, "created")
	shipped := time.Now()
	s.markApplied(early)
	before = waitLatencyCount(t, hubmetrics.PullPropagation, before, 1)

	t.Run("restarted: nothing invented, the change in flight measured from its start", func(t *testing.T) {
		s := s.with(t)
		p.stop()
		waitReconcileAfter(t, pullmodel.ControllerName, func() { p.startManager(true) })
		assert.Equal(t, before.count, latency(t, hubmetrics.PullPropagation).count,
			"the work applied before the restart, listed at start, is not observed again")

		marked := time.Now()
		s.markApplied(late)
		now := waitLatencyCount(t, hubmetrics.PullPropagation, before, 1)
		// Measured from when the stopped manager saw the Application created (before
		// shipped), not from the restart or from when the new manager saw the work.
		assert.GreaterOrEqual(t, now.sum-before.sum, marked.Sub(shipped).Seconds(), "timed from before the restart")
		assert.LessOrEqual(t, now.sum-before.sum, time.Since(created).Seconds())
	})
}
