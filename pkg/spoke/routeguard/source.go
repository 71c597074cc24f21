package routeguard

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// EnqueueAlways maps every event to one request: for controllers that look at the whole
// picture again on any change.
func EnqueueAlways(request reconcile.Request) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{request}
	})
}

func sourceFor(mgr manager.Manager, obj client.Object, h handler.EventHandler) source.Source {
	return source.Kind(mgr.GetCache(), obj, h)
}
