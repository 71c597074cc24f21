// Package appsetaccess is the one owner, per namespace, of the objects GitOpsClusters share so that ApplicationSets can read OCM placements.
package appsetaccess

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "appsetaccess"

// Reconciler alone creates, updates, adopts and removes the shared ApplicationSet
// objects: the placement ConfigMap in an Argo CD namespace, and the Role and RoleBindings
// that let each Argo CD's ApplicationSet controller read the Placements of a GitOpsCluster
// namespace. Several GitOpsClusters share each of them, so a request is a namespace
// (req.Name), and the objects in it follow the GitOpsClusters that need them now.
type Reconciler struct {
	// Client reads through the manager's cache, label-filtered for these kinds (so it
	// sees only gitops-addon's objects), and writes to the apiserver.
	Client client.Client
	// APIReader reads uncached, only the object of a wanted name that someone else created.
	APIReader client.Reader
	// Recorder emits Events on the GitOpsClusters concerned.
	Recorder events.EventRecorder
	// ArgoNamespaces are the only argoNamespaces the manager may work in (its ConfigMaps
	// are granted and cached there only); empty allows any.
	ArgoNamespaces []string

	mu sync.Mutex
	// states are, per namespace, what its last reconcile found about each wanted object.
	states map[string]map[objectKey]objectState
	// changed carries the GitOpsClusters whose Problems changed; nil until Changed.
	changed chan event.GenericEvent
}

// Reconcile brings the shared objects of one namespace to what the GitOpsClusters
// concerning it need: each wanted one created, or updated when ours and different, or
// adopted when someone else's and a GitOpsCluster that needs it adopts; ours that nobody
// needs any more removed. Every object is tried; the errors are returned together.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Name
	gcs, err := r.concerning(ctx, ns)
	if err != nil {
		return ctrl.Result{}, err
	}
	want := wantedIn(ns, gcs, r.allowed)
	previous := r.previousStates(ns)
	current := make(map[objectKey]objectState, len(want))
	var errs []error
	for _, key := range sortedKeys(want) {
		w := want[key]
		found, err := r.ensure(ctx, w, previous[key].holder != ours)
		state := objectState{users: stubs(w.users), holder: found}
		if err != nil && !apierrors.IsConflict(err) {
			state.failure = err // a conflict is a stale read, retried at once: nothing to tell
		}
		current[key] = state
		errs = append(errs, err)
	}
	errs = append(errs, r.removeUnwanted(ctx, ns, want, previous, current))
	r.record(ctx, ns, previous, current)
	return ctrl.Result{}, errors.Join(errs...)
}

// allowed tells whether the manager may work in an argoNamespace.
func (r *Reconciler) allowed(argoNamespace string) bool {
	return len(r.ArgoNamespaces) == 0 || slices.Contains(r.ArgoNamespaces, argoNamespace)
}

// ensure creates a wanted object, or brings ours to the desired state, and says who holds
// its name. knownForeign: the last reconcile found someone else's object there, which our
// label-filtered cache cannot see: it is read instead of sending a create that fails.
func (r *Reconciler) ensure(ctx context.Context, w *wanted, knownForeign bool) (holder, error) {
	current := w.empty()
	err := r.Client.Get(ctx, w.key.objectKey(), current)
	switch {
	case err == nil:
		return ours, r.updateIfChanged(ctx, w, current)
	case !apierrors.IsNotFound(err):
		return ours, fmt.Errorf("reading %s: %w", w.key, err)
	case !knownForeign:
		if created, err := r.create(ctx, w); created || err != nil {
			return ours, err
		}
	}
	return r.ensureExisting(ctx, w)
}

// create creates a wanted object; created is false when its name is taken.
func (r *Reconciler) create(ctx context.Context, w *wanted) (created bool, err error) {
	err = r.Client.Create(ctx, w.desired.DeepCopyObject().(client.Object))
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	}
	return false, fmt.Errorf("creating %s: %w", w.key, err)
}

// ensureExisting reads, uncached, the object that holds a wanted name: one our cache does
// not show yet, or one someone else created (Red Hat ACM's, when moving from it), which
// is never changed unless a GitOpsCluster that needs it adopts it.
func (r *Reconciler) ensureExisting(ctx context.Context, w *wanted) (holder, error) {
	current := w.empty()
	if err := r.APIReader.Get(ctx, w.key.objectKey(), current); err != nil {
		if !apierrors.IsNotFound(err) {
			return ours, fmt.Errorf("reading the existing %s: %w", w.key, err)
		}
		// Deleted since: the name is free for ours.
		if created, err := r.create(ctx, w); created || err != nil {
			return ours, err
		}
		return ours, fmt.Errorf("creating %s: taken again while it was being created", w.key)
	}
	if current.GetLabels()[contract.LabelManagedBy] == contract.ManagedByValue {
		return ours, r.updateIfChanged(ctx, w, current) // ours, not in the cache yet
	}
	if adopter := firstAdopter(w.users); adopter != nil {
		return ours, r.adopt(ctx, w, current, adopter)
	}
	if w.update(current, w.desired) {
		return foreignDiffers, nil
	}
	return foreignAsNeeded, nil
}

func (r *Reconciler) updateIfChanged(ctx context.Context, w *wanted, current client.Object) error {
	return ownership.UpdateIfChanged(ctx, r.Client, current, w.desired, w.update)
}

// firstAdopter is the first of the GitOpsClusters that need an object that adopts.
func firstAdopter(users []*appsv1beta1.GitOpsCluster) *appsv1beta1.GitOpsCluster {
	if i := slices.IndexFunc(users, (*appsv1beta1.GitOpsCluster).Adopts); i >= 0 {
		return users[i]
	}
	return nil
}

// adopt puts our label on someone else's object and brings it to the desired state; from
// then on it is ours (updated, and removed once no GitOpsCluster needs it). Other tools'
// labels stay.
func (r *Reconciler) adopt(ctx context.Context, w *wanted, current client.Object, adopter *appsv1beta1.GitOpsCluster) error {
	labels := current.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, sharedLabels())
	current.SetLabels(labels)
	w.update(current, w.desired)
	if err := r.Client.Update(ctx, current); err != nil {
		return fmt.Errorf("adopting %s: %w", w.key, err)
	}
	r.event(adopter, corev1.EventTypeNormal, appsv1beta1.ReasonAdopted, "Adopted %s (it was not created by gitops-addon; %s is \"true\")",
		w.key, appsv1beta1.AnnotationAdopt)
	return nil
}

// removeUnwanted deletes the shared objects of namespace ns that we created and no
// GitOpsCluster needs any more: a deleted GitOpsCluster's, and those left behind when an
// argoNamespace changed. Objects without our label are invisible to the cached client
// and therefore never deleted. One that could not be deleted stays in current with the
// GitOpsClusters that needed it, whom the retry's Events are about too.
func (r *Reconciler) removeUnwanted(ctx context.Context, ns string, want map[objectKey]*wanted, previous, current map[objectKey]objectState) error {
	lists := []client.ObjectList{&rbacv1.RoleList{}, &rbacv1.RoleBindingList{}}
	if r.allowed(ns) {
		// ConfigMaps are granted and cached in the argoNamespaces only.
		lists = append(lists, &corev1.ConfigMapList{})
	}
	var errs []error
	for _, list := range lists {
		objs, err := r.listShared(ctx, ns, list)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			key := keyOf(obj)
			if want[key] != nil {
				continue
			}
			if err := r.remove(ctx, obj, previous[key].users); err != nil {
				current[key] = objectState{users: previous[key].users}
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// remove deletes a shared object nobody needs if it is still the one listed (a
// same-named object created meanwhile survives), and tells the GitOpsClusters that
// needed it in an Event: a failure too, since no status names an object nobody needs.
func (r *Reconciler) remove(ctx context.Context, obj client.Object, users []*appsv1beta1.GitOpsCluster) error {
	key := keyOf(obj)
	uid := obj.GetUID()
	err := client.IgnoreNotFound(r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}))
	for _, regarding := range concerned(obj, users) {
		if err != nil {
			r.event(regarding, corev1.EventTypeWarning, appsv1beta1.ReasonSharedObjectNotRemoved, "Could not remove %s, which no GitOpsCluster needs any more: %v. "+
				"Retrying with backoff.", key, err)
			continue
		}
		r.event(regarding, corev1.EventTypeNormal, appsv1beta1.ReasonSharedObjectRemoved, "Removed %s, which no GitOpsCluster needs any more", key)
	}
	if err != nil {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	return nil
}

// listShared lists the shared ApplicationSet objects of one kind that we created in ns
// (objects a GitOpsCluster owns, or of other names, are not).
func (r *Reconciler) listShared(ctx context.Context, ns string, list client.ObjectList) ([]client.Object, error) {
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(sharedLabels())); err != nil {
		return nil, fmt.Errorf("listing the shared objects in namespace %s: %w", ns, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("reading the shared objects in namespace %s: %w", ns, err)
	}
	var out []client.Object
	for _, item := range items {
		obj, ok := item.(client.Object)
		if _, owned := ownership.Recorded(obj); ok && isSharedPlacementObject(obj) && !owned {
			out = append(out, obj)
		}
	}
	return out, nil
}

// concerned are the objects an Event about a removed object goes on: the GitOpsClusters
// that needed it at the last reconcile, or, when none is known (the manager restarted
// since), the object itself, so that the Event is in its namespace.
func concerned(obj client.Object, users []*appsv1beta1.GitOpsCluster) []runtime.Object {
	if len(users) == 0 {
		return []runtime.Object{obj}
	}
	out := make([]runtime.Object, 0, len(users))
	for _, gc := range users {
		out = append(out, gc)
	}
	return out
}

func stubs(gcs []*appsv1beta1.GitOpsCluster) []*appsv1beta1.GitOpsCluster {
	out := make([]*appsv1beta1.GitOpsCluster, 0, len(gcs))
	for _, gc := range gcs {
		out = append(out, stub(gc))
	}
	return out
}

func (r *Reconciler) event(regarding runtime.Object, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(regarding, nil, eventType, reason, "Reconcile", format, args...)
	}
}

// SetupWithManager registers the controller, the GitOpsCluster index it lists by, and its
// watches: every GitOpsCluster event wakes its own namespace and its Argo CD namespace
// (an update also the old ones, so that what was left behind is removed), and a shared
// object created, changed or deleted wakes its namespace, so one edited or deleted by
// hand is restored.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &appsv1beta1.GitOpsCluster{}, indexArgoNamespace, argoNamespaceOf); err != nil {
		return fmt.Errorf("indexing GitOpsClusters by argoNamespace: %w", err)
	}
	sharedOnly := builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
		_, owned := ownership.Recorded(obj)
		return isSharedPlacementObject(obj) && !owned
	}))
	toNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: obj.GetNamespace()}}}
	})
	// No predicate on GitOpsClusters: besides a spec, annotation (adopt) or deletion
	// change, a status change is when someone else's object of a wanted name is read
	// again (it is invisible to our caches), as the GitOpsCluster's own reconcile did.
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&appsv1beta1.GitOpsCluster{}, handler.EnqueueRequestsFromMapFunc(namespacesOf)).
		Watches(&corev1.ConfigMap{}, toNamespace, sharedOnly).
		Watches(&rbacv1.Role{}, toNamespace, sharedOnly).
		Watches(&rbacv1.RoleBinding{}, toNamespace, sharedOnly).
		Complete(r)
}

// namespacesOf maps a GitOpsCluster to the namespaces where it may need shared objects.
func namespacesOf(_ context.Context, obj client.Object) []reconcile.Request {
	gc, ok := obj.(*appsv1beta1.GitOpsCluster)
	if !ok {
		return nil
	}
	reqs := []reconcile.Request{{NamespacedName: client.ObjectKey{Name: gc.Namespace}}}
	if argoNS := gc.ArgoNamespace(); argoNS != gc.Namespace {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: argoNS}})
	}
	return reqs
}
