// Package workstandin stands in for OCM's work agents on hubs that have no klusterlets
// (integration tests, the fleet benchmark): it completes the addon's pre-delete hook
// ManifestWorks, as a spoke whose teardown Job succeeded would, so that a
// ManagedClusterAddOn's removal can finish.
package workstandin

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// preDeleteWorkName is the ManifestWork addon-framework applies with the addon's
// pre-delete hook (the spoke teardown Job) when a ManagedClusterAddOn is deleted.
const preDeleteWorkName = "addon-gitops-addon-pre-delete"

// CompleteHookWorks stands in for the spokes' work agents until ctx ends: each pre-delete
// hook ManifestWork is reported applied, with its Job complete (the well-known status
// feedback addon-framework waits for), as a spoke whose teardown Job succeeded would.
// It returns the clusters whose hook it completed so far. Each hook ManifestWork (by UID)
// is completed once: a cluster's addon enabled and removed again gets its new hook done too.
func CompleteHookWorks(ctx context.Context, c client.Client) func() []string {
	done := map[types.UID]bool{}
	results := make(chan []string, 1)
	results <- nil
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			works := &workv1.ManifestWorkList{}
			if err := c.List(ctx, works, client.MatchingFields{"metadata.name": preDeleteWorkName}); err != nil {
				return false, nil
			}
			for i := range works.Items {
				w := &works.Items[i]
				if done[w.UID] || reportJobsComplete(ctx, c, w) != nil {
					continue
				}
				done[w.UID] = true
				clusters := <-results
				if !slices.Contains(clusters, w.Namespace) {
					clusters = append(clusters, w.Namespace)
				}
				results <- clusters
			}
			return false, nil
		})
	}()
	return func() []string {
		clusters := <-results
		results <- clusters
		return clusters
	}
}

// MarkApplied sets a ManifestWork's Applied and Available conditions True for its
// generation, as the work agent reports a work it applied.
func MarkApplied(w *workv1.ManifestWork) {
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "ByTest",
			ObservedGeneration: w.Generation, LastTransitionTime: metav1.Now()})
	}
}

func reportJobsComplete(ctx context.Context, c client.Client, w *workv1.ManifestWork) error {
	now := metav1.Now()
	MarkApplied(w)
	w.Status.ResourceStatus.Manifests = nil
	for i, cfg := range w.Spec.ManifestConfigs {
		id := cfg.ResourceIdentifier
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: id.Group, Version: "v1", Kind: "Job",
				Resource: id.Resource, Name: id.Name, Namespace: id.Namespace},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				{Name: "JobComplete", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("True")}},
			}},
			Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "ByTest", LastTransitionTime: now}},
		})
	}
	return c.Status().Update(ctx, w)
}
