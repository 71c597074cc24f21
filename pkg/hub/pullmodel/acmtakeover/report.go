package acmtakeover

import (
	"context"
	"fmt"
	"maps"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Report makes ours the report of an ApplicationSet that Red Hat ACM's pull controller
// wrote (same name, same schema; desired could not be created over it): our labels,
// statuses and owner on it, in place, so that whoever reads the report never sees it
// missing. From then on the report controller's cache holds it. It returns the report as
// the apiserver stored it, nil when the report is ours already (created moments ago: the
// cache has not caught up, and the next reconcile writes it). reader reads uncached: the
// cache holds our reports only.
func Report(ctx context.Context, c client.Writer, reader client.Reader,
	desired *v1alpha1.MulticlusterApplicationSetReport) (*v1alpha1.MulticlusterApplicationSetReport, error) {
	key := client.ObjectKeyFromObject(desired)
	existing := &v1alpha1.MulticlusterApplicationSetReport{}
	if err := reader.Get(ctx, key, existing); err != nil {
		return nil, fmt.Errorf("reading the existing report %s: %w", key, err)
	}
	if existing.Labels[contract.LabelManagedBy] == contract.ManagedByValue {
		return nil, nil
	}
	updated := existing.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	maps.Copy(updated.Labels, desired.Labels)
	updated.Statuses = desired.Statuses
	updated.OwnerReferences = desired.OwnerReferences
	if err := c.Update(ctx, updated); err != nil {
		return nil, fmt.Errorf("taking over report %s (not written by gitops-addon, Red Hat ACM's): %w", key, err)
	}
	ctrl.LoggerFrom(ctx).Info("took over the MulticlusterApplicationSetReport of another writer (Red Hat ACM)", "report", key.String())
	return updated, nil
}
