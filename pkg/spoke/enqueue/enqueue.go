// Package enqueue holds the agent's one event handler shared by its controllers that look
// at the whole picture again on any change (the Route API guard, the CRD installer, the
// existing-Argo CD detector): every event becomes the same single request.
package enqueue

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Always maps every event to request.
func Always(request reconcile.Request) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{request}
	})
}
