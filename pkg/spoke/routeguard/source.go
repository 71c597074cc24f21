package routeguard

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

func sourceFor(mgr manager.Manager, obj client.Object, h handler.EventHandler) source.Source {
	return source.Kind(mgr.GetCache(), obj, h)
}
