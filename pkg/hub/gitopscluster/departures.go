package gitopscluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// Departures names the Applications that are leaving a cluster (pruned by its Argo CD
// as they go), which the cluster's addon, and with it that Argo CD, must outlive.
type Departures interface {
	Leaving(ctx context.Context, cluster string) ([]string, error)
}

// DefaultDrainTimeout bounds how long a cluster's addon removal waits for the
// Applications leaving the cluster with it. An ApplicationSet deletes its Applications at
// its next pass, by default up to 3 minutes after the Placement changed.
const DefaultDrainTimeout = 5 * time.Minute

// drainRecheck is how often a held removal looks again: the Applications are in another
// controller's cache, whose events do not reach this controller.
const drainRecheck = 5 * time.Second

// drains remembers since when each cluster's addon removal has been held, per
// GitOpsCluster. It is lost on restart, which only lets a removal wait longer.
type drains struct {
	mu    sync.Mutex
	since map[string]time.Time
}

func (d *drains) start(key string, now time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.since == nil {
		d.since = map[string]time.Time{}
	}
	if t, ok := d.since[key]; ok {
		return t
	}
	d.since[key] = now
	return now
}

func (d *drains) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.since, key)
}

// holdRemoval tells whether a cluster's addon removal must wait for Applications leaving
// the cluster, and says which, for the status. Past the drain timeout it lets the
// removal go and says in a Warning Event which Applications may stay Terminating.
func (r *Reconciler) holdRemoval(ctx context.Context, gc *appsv1beta1.GitOpsCluster, cluster string) (string, bool, error) {
	key := string(gc.UID) + "/" + cluster
	if r.Departures == nil {
		return "", false, nil
	}
	leaving, err := r.Departures.Leaving(ctx, cluster)
	if err != nil {
		return "", false, fmt.Errorf("finding the Applications leaving cluster %s: %w", cluster, err)
	}
	if len(leaving) == 0 {
		r.drains.forget(key)
		return "", false, nil
	}
	timeout := r.DrainTimeout
	if timeout == 0 {
		timeout = DefaultDrainTimeout
	}
	since := r.drains.start(key, time.Now())
	if waited := time.Since(since); waited >= timeout {
		r.drains.forget(key)
		r.event(gc, corev1.EventTypeWarning, appsv1beta1.ReasonWaitingForApplications,
			"Removing the addon from cluster %s after waiting %v for Applications leaving it: %s. Their spoke Applications "+
				"may stay Terminating with resources-finalizer.argocd.argoproj.io, since no Argo CD is left to prune them; "+
				"remove that finalizer on the spoke, or delete such Applications before the cluster leaves the Placement.",
			cluster, timeout.Round(time.Second), listNames(leaving))
		return "", false, nil
	}
	return fmt.Sprintf("Cluster %s left the Placement; its addon stays until its Argo CD has pruned the Applications leaving with it (%s), at most %v.",
		cluster, listNames(leaving), timeout.Round(time.Second)), true, nil
}
