package pullmodel

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ownCreates remembers the ManifestWorks the propagation controller has just created, each
// with the resourceVersion the apiserver gave it, until the watch brings that create back.
// That echo tells the controller nothing it does not know (it wrote the object, and the
// reconcile that wrote it scheduled the apply-timeout check), so it wakes no reconcile:
// when many Applications are propagated at once, each would otherwise be reconciled twice.
// The zero value is ready to use.
type ownCreates struct {
	mu       sync.Mutex
	versions map[types.NamespacedName]string
}

// created records a ManifestWork as the apiserver returned it from the create.
func (o *ownCreates) created(w *workv1.ManifestWork) {
	if w.ResourceVersion == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.versions == nil {
		o.versions = map[types.NamespacedName]string{}
	}
	o.versions[client.ObjectKeyFromObject(w)] = w.ResourceVersion
}

// echo says whether a watched create is exactly one this controller made, and forgets it.
// Any other version (changed since, or created by someone else) is no echo.
func (o *ownCreates) echo(w *workv1.ManifestWork) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := client.ObjectKeyFromObject(w)
	v, ok := o.versions[key]
	if !ok {
		return false
	}
	delete(o.versions, key)
	return v == w.ResourceVersion
}

// forget drops what is remembered of a ManifestWork: a reconcile that reads it from the
// cache has seen the create, so an echo that came before the record (the watch can be
// faster than the create's response) leaves nothing behind.
func (o *ownCreates) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.versions, key)
}

// forWorkChanges wakes the hub Application of a pull ManifestWork that appears, changes or
// goes (on a change of its annotations, the Applications named before and after), except
// for the echo of a create of the controller's own.
func forWorkChanges(own *ownCreates) handler.TypedEventHandler[*workv1.ManifestWork, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[*workv1.ManifestWork, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*workv1.ManifestWork], q queue) {
			if !own.echo(e.Object) {
				enqueueAll(q, forWorkApplication(ctx, e.Object))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*workv1.ManifestWork], q queue) {
			enqueueAll(q, forWorkApplication(ctx, e.ObjectOld))
			enqueueAll(q, forWorkApplication(ctx, e.ObjectNew))
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*workv1.ManifestWork], q queue) {
			enqueueAll(q, forWorkApplication(ctx, e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[*workv1.ManifestWork], q queue) {
			enqueueAll(q, forWorkApplication(ctx, e.Object))
		},
	}
}
