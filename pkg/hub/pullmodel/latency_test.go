package pullmodel

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func TestStampChangeSeen(t *testing.T) {
	now := t0.Add(time.Minute)
	tests := []struct {
		name     string
		existing *workv1.ManifestWork
		seen     time.Time
		want     string
	}{
		{name: "a new work, the change seen: from the change", seen: t0.Add(12 * time.Millisecond), want: "2026-11-26T10:00:00.012Z"},
		{name: "no change seen (restart, AppProject, placement): from shipping", want: "2026-11-26T10:01:00.000Z"},
		{name: "the current spec applied: the new change's start replaces the old",
			existing: shippedWork(1, t0.Add(-time.Hour), appliedAt(1)), seen: t0, want: "2026-11-26T10:00:00.000Z"},
		{name: "the current spec not applied yet: its older start stays, that change is still in flight",
			existing: shippedWork(2, t0.Add(-time.Hour), appliedAt(1)), seen: t0, want: "2026-11-26T09:00:00.000Z"},
		{name: "apply failed for the current spec: still in flight",
			existing: shippedWork(2, t0.Add(-time.Hour), failedAt(2)), seen: t0, want: "2026-11-26T09:00:00.000Z"},
		{name: "a work shipped by a manager without the annotation: from the change",
			existing: shippedWork(2, time.Time{}, appliedAt(1)), seen: t0, want: "2026-11-26T10:00:00.000Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &workv1.ManifestWork{}
			stampChangeSeen(w, tt.existing, tt.seen, now)
			assert.Equal(t, tt.want, w.Annotations[pullnames.AnnotationChangeSeenAt])
			start, ok := changeSeenAt(w)
			require.True(t, ok)
			assert.Equal(t, tt.want, start.UTC().Format(changeSeenLayout), "read back to the millisecond")
		})
	}
}

// TestPropagationIsObservedOncePerAppliedSpec follows one ManifestWork through the
// reports of its work agent: each spec it ships is observed once, when the agent first
// reports it applied, from the start recorded on the work.
func TestPropagationIsObservedOncePerAppliedSpec(t *testing.T) {
	now := t0.Add(250 * time.Millisecond)
	l := newLatencies(func() time.Time { return now })
	gen1 := shippedWork(1, t0, nil)
	applied1 := shippedWork(1, t0, appliedAt(1))
	gen2 := shippedWork(2, t0.Add(100*time.Millisecond), appliedAt(1))
	applied2 := shippedWork(2, t0.Add(100*time.Millisecond), appliedAt(2))
	steps := []struct {
		name     string
		old, new *workv1.ManifestWork
		want     int
		wantSum  float64
	}{
		{"shipped, not applied yet: nothing", gen1, gen1, 0, 0},
		{"the agent reports it applied: observed from the change", gen1, applied1, 1, 0.25},
		{"a resync of the same object: nothing", applied1, applied1, 0, 0},
		{"a failure then applied again, same spec: nothing", shippedWork(1, t0, failedAt(1)), applied1, 0, 0},
		{"a new spec shipped, the old one's report: nothing", applied1, gen2, 0, 0},
		{"the new spec applied: observed from its own change", gen2, applied2, 1, 0.15},
		{"not reported as Applied True: nothing", gen2, shippedWork(2, t0, failedAt(2)), 0, 0},
	}
	for _, s := range steps {
		before := histogram(t, hubmetrics.PullPropagation)
		l.workUpdated(s.old, s.new)
		after := histogram(t, hubmetrics.PullPropagation)
		assert.Equal(t, uint64(s.want), after.GetSampleCount()-before.GetSampleCount(), s.name)
		assert.InDelta(t, s.wantSum, after.GetSampleSum()-before.GetSampleSum(), 1e-9, s.name)
	}

	t.Run("two specs between two events (a relist): the newer one observed", func(t *testing.T) {
		before := histogram(t, hubmetrics.PullPropagation).GetSampleCount()
		l.workUpdated(withUID(applied1, "w2"), withUID(applied2, "w2"))
		assert.Equal(t, before+1, histogram(t, hubmetrics.PullPropagation).GetSampleCount())
	})
	t.Run("a work without a recorded start (an older manager's): nothing invented", func(t *testing.T) {
		before := histogram(t, hubmetrics.PullPropagation).GetSampleCount()
		l.workUpdated(withUID(shippedWork(1, time.Time{}, nil), "w3"), withUID(shippedWork(1, time.Time{}, appliedAt(1)), "w3"))
		assert.Equal(t, before, histogram(t, hubmetrics.PullPropagation).GetSampleCount())
	})
	t.Run("a work deleted and created again under the same name: observed anew", func(t *testing.T) {
		l.workGone(applied1)
		before := histogram(t, hubmetrics.PullPropagation).GetSampleCount()
		l.workUpdated(gen1, applied1)
		assert.Equal(t, before+1, histogram(t, hubmetrics.PullPropagation).GetSampleCount())
	})
}

// TestStatusReturnIsObservedOnceTheNewStatusIsOnTheHub: after an apply, the first spoke
// status that differs from the one before it, once on the hub, is observed, once.
func TestStatusReturnIsObservedOnceTheNewStatusIsOnTheHub(t *testing.T) {
	now := t0.Add(2 * time.Second)
	l := newLatencies(func() time.Time { return now })
	app := types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook-cluster1"}
	old := withFeedback(shippedWork(2, t0, appliedAt(1)), map[string]string{feedback.KeySync: "Synced", feedback.KeyRevision: "v1"})
	applied := withFeedback(shippedWork(2, t0, appliedAt(2)), map[string]string{feedback.KeySync: "Synced", feedback.KeyRevision: "v1"})
	l.workUpdated(old, applied)

	steps := []struct {
		name  string
		work  *workv1.ManifestWork
		spoke map[string]string
		want  int
	}{
		{"the spoke still reports what it did before the apply: waiting", applied, map[string]string{feedback.KeySync: "Synced", feedback.KeyRevision: "v1"}, 0},
		{"the spoke's status after the change, on the hub: observed", applied, map[string]string{feedback.KeySync: "OutOfSync", feedback.KeyRevision: "v1"}, 1},
		{"later statuses: nothing more", applied, map[string]string{feedback.KeySync: "Synced", feedback.KeyRevision: "v2"}, 0},
	}
	for _, s := range steps {
		before := histogram(t, hubmetrics.PullStatusReturn)
		l.statusOnHub(app, s.work, s.spoke)
		after := histogram(t, hubmetrics.PullStatusReturn)
		assert.Equal(t, uint64(s.want), after.GetSampleCount()-before.GetSampleCount(), s.name)
		assert.InDelta(t, 2*float64(s.want), after.GetSampleSum()-before.GetSampleSum(), 1e-9, s.name)
	}

	t.Run("a newer spec shipped before the status came back: that one is measured instead", func(t *testing.T) {
		l.workUpdated(withUID(shippedWork(1, t0, nil), "w4"), withUID(shippedWork(1, t0, appliedAt(1)), "w4"))
		before := histogram(t, hubmetrics.PullStatusReturn).GetSampleCount()
		l.statusOnHub(app, withUID(shippedWork(2, t0, appliedAt(1)), "w4"), map[string]string{feedback.KeySync: "Synced"})
		l.statusOnHub(app, withUID(shippedWork(1, t0, appliedAt(1)), "w4"), map[string]string{feedback.KeySync: "Synced"})
		assert.Equal(t, before, histogram(t, hubmetrics.PullStatusReturn).GetSampleCount())
	})
	t.Run("the new status on the work before the work agent reports it applied: observed", func(t *testing.T) {
		// The work agent's feedback and its Applied condition come from different
		// controllers: the spoke's new status may be on the work first.
		l.wrote(app, withFeedback(shippedWork(1, t0, appliedAt(1)), map[string]string{feedback.KeySync: "Synced"}))
		reported := map[string]string{feedback.KeySync: "OutOfSync"}
		l.workUpdated(withUID(withFeedback(shippedWork(2, t0, appliedAt(1)), reported), "w6"),
			withUID(withFeedback(shippedWork(2, t0, appliedAt(2)), reported), "w6"))
		before := histogram(t, hubmetrics.PullStatusReturn).GetSampleCount()
		l.statusOnHub(app, withUID(withFeedback(shippedWork(2, t0, appliedAt(2)), reported), "w6"), reported)
		assert.Equal(t, before+1, histogram(t, hubmetrics.PullStatusReturn).GetSampleCount())
	})
	t.Run("a first status for a new Application: observed", func(t *testing.T) {
		l.workUpdated(withUID(shippedWork(1, t0, nil), "w5"), withUID(shippedWork(1, t0, appliedAt(1)), "w5"))
		before := histogram(t, hubmetrics.PullStatusReturn).GetSampleCount()
		l.statusOnHub(app, withUID(shippedWork(1, t0, appliedAt(1)), "w5"), map[string]string{})
		l.statusOnHub(app, withUID(shippedWork(1, t0, appliedAt(1)), "w5"), map[string]string{feedback.KeyHealth: "Progressing"})
		assert.Equal(t, before+1, histogram(t, hubmetrics.PullStatusReturn).GetSampleCount())
	})
}

// TestChangesAreNotedBeforeTheyAreEnqueued: the reconcile an Application event triggers
// finds the time the manager saw it; the initial list's events are not changes it saw.
func TestChangesAreNotedBeforeTheyAreEnqueued(t *testing.T) {
	now := t0
	l := newLatencies(func() time.Time { return now })
	app := pulltest.App(pulltest.SeedApp)
	key := types.NamespacedName{Namespace: app.GetNamespace(), Name: app.GetName()}
	var seenWhenEnqueued []time.Time
	record := func() { seenWhenEnqueued = append(seenWhenEnqueued, l.seenAt(key)) }
	h := l.noteChanges(handler.TypedFuncs[*unstructured.Unstructured, reconcile.Request]{
		CreateFunc: func(context.Context, event.TypedCreateEvent[*unstructured.Unstructured], requestQueue) { record() },
		UpdateFunc: func(context.Context, event.TypedUpdateEvent[*unstructured.Unstructured], requestQueue) { record() },
		DeleteFunc: func(context.Context, event.TypedDeleteEvent[*unstructured.Unstructured], requestQueue) { record() },
	})
	ctx := context.Background()

	h.Create(ctx, event.TypedCreateEvent[*unstructured.Unstructured]{Object: app, IsInInitialList: true}, nil)
	h.Create(ctx, event.TypedCreateEvent[*unstructured.Unstructured]{Object: app}, nil)
	now = t0.Add(time.Second)
	h.Update(ctx, event.TypedUpdateEvent[*unstructured.Unstructured]{ObjectOld: app, ObjectNew: app}, nil)
	l.shipped(key, t0)
	h.Update(ctx, event.TypedUpdateEvent[*unstructured.Unstructured]{ObjectOld: app, ObjectNew: app}, nil)
	h.Delete(ctx, event.TypedDeleteEvent[*unstructured.Unstructured]{Object: app}, nil)

	assert.Equal(t, []time.Time{
		{},                  // the initial list: not seen changing
		t0,                  // created
		t0,                  // changed again before shipping: the older change counts
		t0.Add(time.Second), // changed after shipping: a new start
		{},                  // deleted: nothing in flight
	}, seenWhenEnqueued)
}

func TestNoLatenciesWithoutAMeasurer(t *testing.T) {
	var l *latencies
	next := &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{}
	assert.Same(t, next, l.noteChanges(next))
	assert.Zero(t, l.seenAt(types.NamespacedName{Name: "a"}))
	l.shipped(types.NamespacedName{Name: "a"}, t0)
	l.forget(types.NamespacedName{Name: "a"})
	l.statusOnHub(types.NamespacedName{Name: "a"}, nil, nil)
}

// shippedWork is the pull ManifestWork of guestbook-cluster1 at a generation, with the
// start of its change (none when zero) and its Applied condition (none when nil).
func shippedWork(generation int64, changeSeen time.Time, applied *metav1.Condition) *workv1.ManifestWork {
	w := pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", nil)
	w.UID = "w1"
	w.Generation = generation
	w.Status.Conditions = nil
	if applied != nil {
		w.Status.Conditions = []metav1.Condition{*applied}
	}
	if !changeSeen.IsZero() {
		w.Annotations[pullnames.AnnotationChangeSeenAt] = changeSeen.Format(changeSeenLayout)
	}
	return w
}

func appliedAt(generation int64) *metav1.Condition {
	return &metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", ObservedGeneration: generation}
}

func failedAt(generation int64) *metav1.Condition {
	return &metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed", ObservedGeneration: generation}
}

func withUID(w *workv1.ManifestWork, uid types.UID) *workv1.ManifestWork {
	c := w.DeepCopy()
	c.UID = uid
	return c
}

func withFeedback(w *workv1.ManifestWork, values map[string]string) *workv1.ManifestWork {
	r := pulltest.ReportedWork(w.Namespace, "openshift-gitops", "guestbook-cluster1", values)
	w.Status.ResourceStatus = r.Status.ResourceStatus
	return w
}

// histogram is a histogram of controller-runtime's registry, where the manager serves it.
func histogram(t *testing.T, name string) *dto.Histogram {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1)
			return f.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("no metric %s on controller-runtime's registry", name)
	return nil
}
