package pullmodel

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
)

// DefaultStatusStaleAfter is Options.StatusStaleAfter's default: twice the apply timeout,
// longer than the 5 minutes after which OCM marks a silent cluster's lease lost.
const DefaultStatusStaleAfter = 10 * time.Minute

// reportStatusAges serves statusAges as the pull status gauges once the pull cache has
// synced, until the manager stops; on the leader, like the pull model.
func (r *Reconciler) reportStatusAges(c cache.Cache, staleAfter time.Duration) manager.Runnable {
	report := hubmetrics.ReportPullStatus(r.statusAges, staleAfter)
	return manager.RunnableFunc(func(ctx context.Context) error {
		if !c.WaitForCacheSync(ctx) {
			return nil // stopped before it synced
		}
		return report.Start(ctx)
	})
}

// statusAges are the ages of the status the hub holds for each pulled Application (one
// per pull ManifestWork not being deleted), read from the caches at scrape time: the
// pull status gauges of hubmetrics.
func (r *Reconciler) statusAges(ctx context.Context, now time.Time) ([]time.Duration, error) {
	clusters := &clusterv1.ManagedClusterList{}
	// Read only: the caches' objects are not copied at every scrape.
	if err := r.Client.List(ctx, clusters, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	available := make(map[string]*metav1.Condition, len(clusters.Items))
	for i := range clusters.Items {
		available[clusters.Items[i].Name] = meta.FindStatusCondition(clusters.Items[i].Status.Conditions,
			clusterv1.ManagedClusterConditionAvailable)
	}
	works := &workv1.ManifestWorkList{}
	if err := r.Cache.List(ctx, works, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pull ManifestWorks: %w", err)
	}
	ages := make([]time.Duration, 0, len(works.Items))
	for i := range works.Items {
		w := &works.Items[i]
		if w.DeletionTimestamp.IsZero() {
			ages = append(ages, statusAge(w, available[w.Namespace], now))
		}
	}
	return ages, nil
}

// statusAge is how old the status the hub holds for a work's Application is: how long
// since the work agent was last known to report it. With a watch on the spoke Application
// it reports every change as it happens, so an unchanged status is current while the
// agent reports at all: while the cluster is Available (OCM's lease, renewed every
// minute) and has applied the work's current spec. Otherwise the status is as old as the
// moment the cluster's Available condition left True, or the current spec was shipped;
// for a cluster without the condition (gone, or never joined), the last change the work
// agent made to the work's conditions.
func statusAge(w *workv1.ManifestWork, available *metav1.Condition, now time.Time) time.Duration {
	confirmed := now
	if p := feedback.PendingApplyOf(w); p.Pending {
		confirmed = earliest(confirmed, p.Since)
	}
	switch {
	case available == nil:
		confirmed = earliest(confirmed, lastReported(w))
	case available.Status != metav1.ConditionTrue:
		confirmed = earliest(confirmed, available.LastTransitionTime.Time)
	}
	return max(now.Sub(confirmed), 0)
}

// lastReported is when the work agent last changed one of the work's conditions; the
// work's creation when it never reported.
func lastReported(w *workv1.ManifestWork) time.Time {
	t := w.CreationTimestamp.Time
	for _, c := range w.Status.Conditions {
		if c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime.Time
		}
	}
	return t
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
