package pullmodel

import (
	"context"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// changeSeenLayout is pullnames.AnnotationChangeSeenAt's format: RFC 3339 to the millisecond, since
// a propagation takes tens of milliseconds on a quiet hub.
const changeSeenLayout = "2006-01-02T15:04:05.000Z07:00"

// latencies measures each change of a pulled hub Application: from the manager seeing it
// until the work agent reports its ManifestWork applied (gitops_addon_pull_propagation_seconds),
// and until the hub Application holds the spoke's status after that apply
// (gitops_addon_pull_status_return_seconds). It holds in memory only what is in flight;
// once shipped, a change's start is on its ManifestWork (pullnames.AnnotationChangeSeenAt), so a
// change shipped before a manager restart and applied after it is measured from its start.
// An apply is observed when this manager sees the work agent's report turn to Applied for
// the work's generation, once per work and generation: a manager that starts takes the
// works it lists as they are, and observes nothing for them.
type latencies struct {
	now func() time.Time
	mu  sync.Mutex
	// seen is when the manager saw the oldest change of an Application not shipped yet.
	seen map[types.NamespacedName]time.Time
	// applied is the generation of each ManifestWork (by UID) whose apply was observed.
	applied map[types.UID]int64
	// returning are the applied changes whose spoke status the hub Application awaits.
	returning map[types.NamespacedName]statusReturn
	// shippedOver is what the spoke reported when the manager last wrote an
	// Application's ManifestWork: the status the change's own status differs from. The
	// work agent writes its status feedback and its Applied condition from different
	// controllers, so the new status may reach the work before Applied does; taken at the
	// apply, "before" would already be the new status, and nothing would be observed.
	shippedOver map[types.NamespacedName]map[string]string
}

// statusReturn is an applied change whose spoke status is awaited on the hub.
type statusReturn struct {
	work       types.UID
	generation int64
	start      time.Time
	// before is what the spoke reported when the change was shipped: the status after it
	// differs.
	before map[string]string
}

func newLatencies(now func() time.Time) *latencies {
	return &latencies{now: now, seen: map[types.NamespacedName]time.Time{}, applied: map[types.UID]int64{},
		returning: map[types.NamespacedName]statusReturn{}, shippedOver: map[types.NamespacedName]map[string]string{}}
}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// noteChanges records when the manager sees each change of an Application that can change
// what is shipped (applicationChanged lets only those through), before next enqueues it,
// so that the reconcile it triggers finds it.
func (l *latencies) noteChanges(
	next handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request]) handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] {
	if l == nil {
		return next
	}
	type u = *unstructured.Unstructured
	return handler.TypedFuncs[u, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[u], q requestQueue) {
			// The initial list holds changes made before this manager started, at a time it
			// cannot know: what it ships for them counts from shipping.
			if !e.IsInInitialList {
				l.sawChange(client.ObjectKeyFromObject(e.Object))
			}
			next.Create(ctx, e, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[u], q requestQueue) {
			l.sawChange(client.ObjectKeyFromObject(e.ObjectNew))
			next.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[u], q requestQueue) {
			l.forget(client.ObjectKeyFromObject(e.Object))
			next.Delete(ctx, e, q)
		},
		GenericFunc: next.Generic,
	}
}

// watchApplies observes the applies the work agent reports, before next enqueues the
// Application, so that the reconcile it triggers can observe the status return.
func (l *latencies) watchApplies(
	next handler.TypedEventHandler[*workv1.ManifestWork, reconcile.Request]) handler.TypedEventHandler[*workv1.ManifestWork, reconcile.Request] {
	if l == nil {
		return next
	}
	type w = *workv1.ManifestWork
	return handler.TypedFuncs[w, reconcile.Request]{
		CreateFunc: next.Create,
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[w], q requestQueue) {
			l.workUpdated(e.ObjectOld, e.ObjectNew)
			next.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[w], q requestQueue) {
			l.workGone(e.Object)
			next.Delete(ctx, e, q)
		},
		GenericFunc: next.Generic,
	}
}

// sawChange records that the manager saw a change of an Application, unless an older one
// is still unshipped: a ManifestWork that ships both is measured from the older.
func (l *latencies) sawChange(app types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[app]; !ok {
		l.seen[app] = l.now()
	}
}

// seenAt is when the manager saw the oldest unshipped change of an Application; zero if
// it saw none.
func (l *latencies) seenAt(app types.NamespacedName) time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[app]
}

// shipped says that the Application's ManifestWork carries the changes seen until seen
// (written now, or already there).
func (l *latencies) shipped(app types.NamespacedName, seen time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[app].Equal(seen) {
		delete(l.seen, app)
	}
}

// forget drops what is in flight for an Application that is gone or cannot be shipped:
// a change that cannot propagate is not measured, the one that lets it ship is.
func (l *latencies) forget(app types.NamespacedName) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, app)
	delete(l.returning, app)
	delete(l.shippedOver, app)
}

// workUpdated observes the propagation of a work whose report turned to Applied for its
// current generation, and then awaits its status on the hub.
func (l *latencies) workUpdated(old, w *workv1.ManifestWork) {
	if !appliedCurrent(w) || appliedCurrent(old) && old.Generation == w.Generation {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.applied[w.UID]; ok && g >= w.Generation {
		return // applied again after a failure: that spec was measured once
	}
	l.applied[w.UID] = w.Generation
	start, ok := changeSeenAt(w)
	if !ok {
		return // shipped by a manager that did not record its start
	}
	hubmetrics.ObservePullPropagation(l.now().Sub(start))
	app := types.NamespacedName{Namespace: w.Annotations[pullnames.AnnotationHubAppNamespace], Name: w.Annotations[pullnames.AnnotationHubAppName]}
	before, ok := l.shippedOver[app]
	if !ok { // shipped by another manager (before a restart, or the previous leader)
		before = feedback.Of(old, feedback.WorkAppNamespace(old), app.Name).Values()
	}
	delete(l.shippedOver, app)
	l.returning[app] = statusReturn{work: w.UID, generation: w.Generation, start: start, before: before}
}

// wrote records what the spoke reported (in existing; nil for a new work) when the
// manager wrote an Application's ManifestWork.
func (l *latencies) wrote(app types.NamespacedName, existing *workv1.ManifestWork) {
	if l == nil {
		return
	}
	reported := map[string]string{}
	if existing != nil {
		reported = feedback.Of(existing, feedback.WorkAppNamespace(existing), app.Name).Values()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shippedOver[app] = reported
}

func (l *latencies) workGone(w *workv1.ManifestWork) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.applied, w.UID)
}

// statusOnHub observes the status return of an applied change once the hub Application
// holds a spoke status reported after the apply (one that differs from what the spoke
// reported before it), read from w: reported are the values the hub now holds.
func (l *latencies) statusOnHub(app types.NamespacedName, w *workv1.ManifestWork, reported map[string]string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.returning[app]
	switch {
	case !ok:
	case w == nil || w.UID != r.work || w.Generation != r.generation:
		delete(l.returning, app) // a newer change is in flight, and measured instead
	case len(reported) > 0 && !maps.Equal(reported, r.before):
		hubmetrics.ObservePullStatusReturn(l.now().Sub(r.start))
		delete(l.returning, app)
	}
}

// stampChangeSeen records on a ManifestWork being written the start of the change it
// ships: the start already on it while the work agent has not applied its current spec
// (that change is still in flight), else when the manager saw the change, else now.
func stampChangeSeen(w, existing *workv1.ManifestWork, seen, now time.Time) {
	start := now
	if !seen.IsZero() && seen.Before(start) {
		start = seen
	}
	if existing != nil && !appliedCurrent(existing) {
		if t, ok := changeSeenAt(existing); ok && t.Before(start) {
			start = t
		}
	}
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[pullnames.AnnotationChangeSeenAt] = start.UTC().Format(changeSeenLayout)
}

func changeSeenAt(w *workv1.ManifestWork) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, w.Annotations[pullnames.AnnotationChangeSeenAt])
	return t, err == nil
}

// appliedCurrent says whether the work agent reports the work's current spec applied.
func appliedCurrent(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= w.Generation
}
