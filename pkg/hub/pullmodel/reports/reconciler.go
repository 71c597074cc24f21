// Package reports keeps one MulticlusterApplicationSetReport per ApplicationSet with pull
// Applications (the report Red Hat ACM's pull controller writes, wire-compatible),
// built from their pull ManifestWorks' feedback alone: each Application's health, sync
// and operation on its cluster, its resources (bounded), and the errors and warnings
// its hub Application shows too (pullmodel/feedback explains them alike). A report ACM
// wrote is taken over in place (pullmodel/acmtakeover).
package reports

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/acmtakeover"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/clusterwake"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// ControllerName names the report controller in logs and metrics.
const ControllerName = "appsetreport"

// indexWorkByAppSet indexes the pull ManifestWorks by "<namespace>/<name>" of the
// ApplicationSet that generated their Application.
const indexWorkByAppSet = "pullmodel.applicationSet"

// RegisterIndex adds to the pull model's cache the index of pull ManifestWorks by
// ApplicationSet that Reconcile lists a report's works from.
func RegisterIndex(ctx context.Context, c client.FieldIndexer) error {
	return c.IndexField(ctx, &workv1.ManifestWork{}, indexWorkByAppSet, func(o client.Object) []string {
		if v := o.GetAnnotations()[pullnames.AnnotationHostingAppSet]; v != "" {
			return []string{v}
		}
		return nil
	})
}

// Reconciler keeps one MulticlusterApplicationSetReport per ApplicationSet that has
// pull Applications, built from their ManifestWorks' feedback alone.
type Reconciler struct {
	Client client.Client
	// Cache holds the pull ManifestWorks and our reports.
	Cache cache.Cache
	// APIReader reads uncached: a report of the ApplicationSet's name that is not ours
	// (Red Hat ACM's), which the cache does not hold.
	APIReader client.Reader
	// ApplyTimeout is how long a ManifestWork may stay unapplied before its entry says so.
	ApplyTimeout time.Duration
	// HubOnly: no spoke agent of ours summarises the Applications' resources.
	HubOnly bool
	// Now is the clock (tests set it).
	Now func() time.Time

	// schemaDropsResources is set once the served report schema is seen to prune each
	// cluster's resources (Red Hat ACM's CRD serving the reports, left alone by the
	// manager): they are left out from then on, so that an unchanged report is not
	// written again and again for fields the apiserver throws away.
	schemaDropsResources atomic.Bool
}

// Reconcile rebuilds the report of one ApplicationSet (the request's namespace/name).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	works := &workv1.ManifestWorkList{}
	if err := r.Cache.List(ctx, works, client.MatchingFields{indexWorkByAppSet: req.String()}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the ManifestWorks of ApplicationSet %s: %w", req, err)
	}
	live := slices.DeleteFunc(slices.Clone(works.Items), func(w workv1.ManifestWork) bool { return !w.DeletionTimestamp.IsZero() })
	existing := &v1alpha1.MulticlusterApplicationSetReport{}
	err := r.Cache.Get(ctx, req.NamespacedName, existing)
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading report %s: %w", req, err)
	}
	if len(live) == 0 {
		if len(works.Items) > 0 {
			// Every ManifestWork is being deleted (the ApplicationSet going, most often,
			// and the garbage collector taking the report with it): wait until they are gone.
			return ctrl.Result{}, nil
		}
		// No pull Application left: the report goes (its ApplicationSet may live on, with
		// Applications no cluster pulls). Only our own report is ever deleted.
		if existing != nil {
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}))
		}
		return ctrl.Result{}, nil
	}
	desired, requeue, err := r.buildReport(ctx, req.NamespacedName, live)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.schemaDropsResources.Load() {
		withoutClusterResources(desired)
	}
	return ctrl.Result{RequeueAfter: requeue}, r.write(ctx, existing, desired)
}

// noticePruning records that the apiserver dropped the clusters' resources of a report
// it stored (its schema lacks them).
func (r *Reconciler) noticePruning(ctx context.Context, sent, stored *v1alpha1.MulticlusterApplicationSetReport) {
	if hasClusterResources(sent) && !hasClusterResources(stored) && !r.schemaDropsResources.Swap(true) {
		ctrl.LoggerFrom(ctx).Info("the MulticlusterApplicationSetReport CRD this hub serves (not gitops-addon's: Red Hat ACM's?) has no " +
			"statuses.clusterConditions[].resources; reports carry the clusters' resource errors as conditions only")
	}
}

func hasClusterResources(r *v1alpha1.MulticlusterApplicationSetReport) bool {
	for _, c := range r.Statuses.ClusterConditions {
		if len(c.Resources) > 0 || c.ResourceCount != nil {
			return true
		}
	}
	return false
}

func withoutClusterResources(r *v1alpha1.MulticlusterApplicationSetReport) {
	for i := range r.Statuses.ClusterConditions {
		r.Statuses.ClusterConditions[i].Resources = nil
		r.Statuses.ClusterConditions[i].ResourceCount = nil
	}
}

// takeOver makes ours the report Red Hat ACM's pull controller wrote under the
// ApplicationSet's name, and notices whether the schema it is served with keeps the
// clusters' resources.
func (r *Reconciler) takeOver(ctx context.Context, desired *v1alpha1.MulticlusterApplicationSetReport) error {
	stored, err := acmtakeover.Report(ctx, r.Client, r.APIReader, desired)
	if stored != nil {
		r.noticePruning(ctx, desired, stored)
	}
	return err
}

// write creates the report, or updates it when it differs from the desired one.
func (r *Reconciler) write(ctx context.Context, existing, desired *v1alpha1.MulticlusterApplicationSetReport) error {
	key := client.ObjectKeyFromObject(desired)
	if existing == nil {
		sent := desired.DeepCopy()
		err := r.Client.Create(ctx, desired)
		if apierrors.IsAlreadyExists(err) && r.APIReader != nil {
			return r.takeOver(ctx, sent)
		}
		if err != nil {
			return fmt.Errorf("creating report %s: %w", key, err)
		}
		r.noticePruning(ctx, sent, desired)
		return nil
	}
	if equality.Semantic.DeepEqual(existing.Statuses, desired.Statuses) &&
		equality.Semantic.DeepEqual(existing.OwnerReferences, desired.OwnerReferences) &&
		existing.Labels[pullnames.LabelHostingAppSetReport] == desired.Labels[pullnames.LabelHostingAppSetReport] {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Statuses = desired.Statuses
	updated.OwnerReferences = desired.OwnerReferences
	updated.Labels[pullnames.LabelHostingAppSetReport] = desired.Labels[pullnames.LabelHostingAppSetReport]
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating report %s: %w", key, err)
	}
	r.noticePruning(ctx, desired, updated)
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the report controller on the pull ManifestWorks and reports.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, skipNameValidation bool) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: &skipNameValidation}).
		WatchesRawSource(source.Kind(r.Cache, &workv1.ManifestWork{}, handler.TypedEnqueueRequestsFromMapFunc(forWorkAppSet))).
		WatchesRawSource(source.Kind(r.Cache, &v1alpha1.MulticlusterApplicationSetReport{},
			&handler.TypedEnqueueRequestForObject[*v1alpha1.MulticlusterApplicationSetReport]{})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &clusterv1.ManagedCluster{}, clusterwake.OnClusterChanges(r.appSetsOn))).
		WatchesRawSource(source.Kind(mgr.GetCache(), &addonv1beta1.ManagedClusterAddOn{}, clusterwake.OnAddonChanges(r.appSetsOn))).
		Complete(r)
}

// appSetsOn are the ApplicationSets with a pull Application on cluster.
func (r *Reconciler) appSetsOn(ctx context.Context, cluster string) []reconcile.Request {
	works := &workv1.ManifestWorkList{}
	if err := r.Cache.List(ctx, works, client.InNamespace(cluster)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the pull ManifestWorks of a cluster", "cluster", cluster)
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var out []reconcile.Request
	for i := range works.Items {
		for _, req := range forWorkAppSet(ctx, &works.Items[i]) {
			if !seen[req] {
				seen[req] = true
				out = append(out, req)
			}
		}
	}
	return out
}

func forWorkAppSet(_ context.Context, w *workv1.ManifestWork) []reconcile.Request {
	ns, name, ok := strings.Cut(w.Annotations[pullnames.AnnotationHostingAppSet], "/")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
