package addonstatus

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Publisher writes the Report's conditions onto the agent's own ManagedClusterAddOn on
// the hub, only when they change. The agent's hub Role allows exactly that.
type Publisher struct {
	Hub         client.Client
	ClusterName string
	AddonName   string
	Report      *Report
}

// Start publishes on every change until ctx is done; a failed publish is retried with
// backoff, since the hub may be briefly unreachable.
func (p *Publisher) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("routeguard-publisher")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.Report.Changed():
		}
		for attempt := 0; ; attempt++ {
			err := p.Publish(ctx)
			if err == nil {
				break
			}
			log.Error(err, "publishing conditions to the hub", "attempt", attempt)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(min(time.Duration(1<<min(attempt, 5))*time.Second, 30*time.Second)):
			}
		}
	}
}

// NeedLeaderElection: only the leading agent replica reports.
func (p *Publisher) NeedLeaderElection() bool { return true }

// Publish merges the conditions into the ManagedClusterAddOn status, with an optimistic
// lock so that concurrent writers of other conditions are never overwritten.
func (p *Publisher) Publish(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		addon := &addonv1beta1.ManagedClusterAddOn{}
		if err := p.Hub.Get(ctx, client.ObjectKey{Namespace: p.ClusterName, Name: p.AddonName}, addon); err != nil {
			return fmt.Errorf("reading ManagedClusterAddOn %s/%s: %w", p.ClusterName, p.AddonName, err)
		}
		original := addon.DeepCopy()
		changed := false
		for _, c := range p.Report.Conditions() {
			c.ObservedGeneration = addon.Generation
			changed = meta.SetStatusCondition(&addon.Status.Conditions, c) || changed
		}
		for _, t := range p.Report.Withdrawn() {
			changed = meta.RemoveStatusCondition(&addon.Status.Conditions, t) || changed
		}
		if !changed {
			return nil
		}
		patch := client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})
		if err := p.Hub.Status().Patch(ctx, addon, patch); err != nil {
			return fmt.Errorf("patching ManagedClusterAddOn %s/%s status: %w", p.ClusterName, p.AddonName, err)
		}
		return nil
	})
}
