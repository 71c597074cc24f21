package stackstatus

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "stackstatus"

// Reconciler writes, per cluster, the StackApplied condition of the gitops-addon
// ManagedClusterAddOn from the status of the addon's ManifestWorks; it writes only when
// the condition changes, so a steady fleet costs no writes.
type Reconciler struct {
	// Works reads the addon's ManifestWorks from a cache of their status alone.
	Works client.Reader
	// Client reads ManagedClusterAddOns from the manager's cache and patches their status.
	Client client.Client
}

// worksSelector selects the ManifestWorks addon-framework writes for gitops-addon (the
// deploy work and the pre-delete hook's).
var worksSelector = labels.SelectorFromSet(labels.Set{addonv1beta1.AddonLabelKey: contract.AddonName})

// SetupWithManager registers the controller with a cache of its own: the addon's
// ManifestWorks, label-filtered and stripped to their status (their spec, the whole
// stack, is 20 KiB a cluster, which nothing here reads).
func SetupWithManager(mgr manager.Manager, cfg *rest.Config) error {
	works, err := cache.New(cfg, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&workv1.ManifestWork{}: {Label: worksSelector, Transform: statusOnly}},
	})
	if err != nil {
		return fmt.Errorf("creating the addon works' cache: %w", err)
	}
	if err := mgr.Add(works); err != nil {
		return err
	}
	r := &Reconciler{Works: works, Client: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(works, client.Object(&workv1.ManifestWork{}), handler.EnqueueRequestsFromMapFunc(byCluster),
			predicate.Funcs{UpdateFunc: statusChanged})).
		Watches(&addonv1beta1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(byCluster),
			builder.WithPredicates(predicate.NewPredicateFuncs(isOurAddon), predicate.Funcs{UpdateFunc: conditionLost})).
		Complete(r)
}

// Reconcile brings one cluster's StackApplied condition to what its works say.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := req.Namespace
	list := &workv1.ManifestWorkList{}
	if err := r.Works.List(ctx, list, client.InNamespace(cluster), client.MatchingLabelsSelector{Selector: worksSelector}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the addon's ManifestWorks of %s: %w", cluster, err)
	}
	addon := &addonv1beta1.ManagedClusterAddOn{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, addon); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if len(list.Items) == 0 || !addon.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // nothing applied yet, or going: nothing to say
	}
	original := addon.DeepCopy()
	c := condition(list.Items)
	c.ObservedGeneration = addon.Generation
	if !meta.SetStatusCondition(&addon.Status.Conditions, c) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Status().Patch(ctx, addon, patch); err != nil {
		// A conflict (another writer of the status) is retried with backoff, from a fresh read.
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching ManagedClusterAddOn %s/%s status: %w", cluster, contract.AddonName, err))
	}
	return ctrl.Result{}, nil
}

// byCluster maps an object of a cluster namespace to that cluster.
func byCluster(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: contract.AddonName}}}
}

func isOurAddon(o client.Object) bool { return o.GetName() == contract.AddonName }

// statusChanged passes a ManifestWork update only when the work agent's report changed.
func statusChanged(e event.UpdateEvent) bool {
	old, okOld := e.ObjectOld.(*workv1.ManifestWork)
	updated, okNew := e.ObjectNew.(*workv1.ManifestWork)
	if !okOld || !okNew {
		return true
	}
	a, b := condition([]workv1.ManifestWork{*old}), condition([]workv1.ManifestWork{*updated})
	return a.Status != b.Status || a.Message != b.Message
}

// conditionLost passes a ManagedClusterAddOn update that changed or dropped StackApplied
// (another writer of its status replaced the conditions), so it is written again.
func conditionLost(e event.UpdateEvent) bool {
	old, okOld := e.ObjectOld.(*addonv1beta1.ManagedClusterAddOn)
	updated, okNew := e.ObjectNew.(*addonv1beta1.ManagedClusterAddOn)
	if !okOld || !okNew {
		return true
	}
	was := meta.FindStatusCondition(old.Status.Conditions, contract.ConditionStackApplied)
	is := meta.FindStatusCondition(updated.Status.Conditions, contract.ConditionStackApplied)
	return (was == nil) != (is == nil) || (was != nil && (was.Status != is.Status || was.Message != is.Message))
}

// statusOnly keeps of a cached ManifestWork its identity and its status conditions, and
// of each manifest's status only its identity and Applied condition.
func statusOnly(obj any) (any, error) {
	w, ok := obj.(*workv1.ManifestWork)
	if !ok {
		return obj, nil
	}
	slim := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: w.Name, Namespace: w.Namespace, UID: w.UID, ResourceVersion: w.ResourceVersion, Generation: w.Generation, Labels: w.Labels,
	}}
	slim.Status.Conditions = w.Status.Conditions
	for _, m := range w.Status.ResourceStatus.Manifests {
		kept := workv1.ManifestCondition{ResourceMeta: m.ResourceMeta}
		if c := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied); c != nil {
			kept.Conditions = []metav1.Condition{*c}
		}
		slim.Status.ResourceStatus.Manifests = append(slim.Status.ResourceStatus.Manifests, kept)
	}
	return slim, nil
}
