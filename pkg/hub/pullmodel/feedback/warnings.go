package feedback

import (
	"context"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// Explainer says, with what the hub knows of a cluster, what a report cannot: why a
// ManifestWork is not applied, why no resources come. The propagation and report
// controllers explain alike, so the hub Application and the report say the same.
type Explainer struct {
	// Reader reads ManagedClusters and gitops-addon ManagedClusterAddOns (the manager's
	// cache); nothing is written.
	Reader client.Reader
	// HubOnly: no spoke agent of ours summarises the Applications' resources.
	HubOnly bool
	// ApplyTimeout is how long a ManifestWork may stay unapplied before it is a warning.
	ApplyTimeout time.Duration
}

// Warnings are the warnings about what a cluster reports of an Application in w: its
// ManifestWork not applied in time (and, until then, when to look again), and what the
// hub cannot show of its resources. A work not created yet has none.
func (e Explainer) Warnings(ctx context.Context, now time.Time, w *workv1.ManifestWork, spoke Status) ([]pullnames.Problem, time.Duration, error) {
	if w == nil {
		return nil, 0, nil
	}
	var out []pullnames.Problem
	pending := PendingApplyOf(w)
	overdue, wait := pending.overdue(now, e.ApplyTimeout)
	if overdue {
		state, err := clusterState(ctx, e.Reader, w.Namespace)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, notAppliedProblem(w, pending.Since, state))
	}
	resources, err := resourceProblems(ctx, e.Reader, e.HubOnly, w.Namespace, WorkAppNamespace(w), spoke)
	if err != nil {
		return nil, 0, err
	}
	return append(out, resources...), wait, nil
}

// WorkAppNamespace is the namespace of the Application a pull ManifestWork carries, read
// from its manifest config (the spoke namespace may differ from the hub's).
func WorkAppNamespace(w *workv1.ManifestWork) string {
	for _, c := range w.Spec.ManifestConfigs {
		if c.ResourceIdentifier.Resource == "applications" {
			return c.ResourceIdentifier.Namespace
		}
	}
	return w.Annotations[pullnames.AnnotationHubAppNamespace]
}
