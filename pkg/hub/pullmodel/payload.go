package pullmodel

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// InClusterServer is the destination every pulled Application gets on its spoke: Argo
// CD's in-cluster address.
const InClusterServer = localcluster.InClusterServer

// hubOnlyAnnotations are meaningful on the hub only and never reach the spoke: the OCM
// routing, and skip-reconcile, which would stop the spoke's Argo CD too.
var hubOnlyAnnotations = []string{
	pullnames.AnnotationCluster, pullnames.AnnotationAppNamespace, pullnames.AnnotationSkipReconcile,
	"kubectl.kubernetes.io/last-applied-configuration",
}

// spokeRequest says which one-shot requests of the hub Application go along this time.
type spokeRequest struct {
	// operation ships the hub's .operation (a manual sync), named operationName.
	operation     bool
	operationName string
	// refresh ships the hub's refresh annotation.
	refresh bool
}

// spokeApplication is the Application the spoke receives: the hub Application's spec,
// labels, annotations and finalizers, in the spoke namespace, aimed at the cluster it runs
// on. It reports the destination name it removed, if any, so the caller can tell the user.
func spokeApplication(hub *unstructured.Unstructured, req spokeRequest) (app *unstructured.Unstructured, clearedDestName string) {
	app = &unstructured.Unstructured{Object: map[string]any{}}
	app.SetAPIVersion(pullnames.ApplicationGVK.GroupVersion().String())
	app.SetKind(pullnames.ApplicationGVK.Kind)
	app.SetName(hub.GetName())
	app.SetNamespace(spokeNamespace(hub))
	if labels := spokeLabels(hub.GetLabels()); len(labels) > 0 {
		app.SetLabels(labels)
	}
	if annotations := spokeAnnotations(hub.GetAnnotations(), req.refresh); len(annotations) > 0 {
		app.SetAnnotations(annotations)
	}
	if finalizers := hub.GetFinalizers(); len(finalizers) > 0 {
		app.SetFinalizers(slices.Clone(finalizers))
	}
	spec, _, _ := unstructured.NestedMap(hub.Object, "spec")
	spec = runtime.DeepCopyJSON(orEmpty(spec))
	clearedDestName = aimInCluster(spec)
	app.Object["spec"] = spec
	if op, ok, _ := unstructured.NestedMap(hub.Object, "operation"); ok && req.operation {
		app.Object["operation"] = namedOperation(runtime.DeepCopyJSON(op), req.operationName)
	}
	return app, clearedDestName
}

// aimInCluster points the destination at the cluster the Application runs on. Argo CD
// rejects a destination with both a server and a name, so a name (the hub's name for
// the cluster) is removed; it is returned for the Event that says so.
func aimInCluster(spec map[string]any) (clearedName string) {
	dest, _, _ := unstructured.NestedMap(spec, "destination")
	dest = orEmpty(dest)
	if name, ok := dest["name"].(string); ok {
		clearedName = name
		delete(dest, "name")
	}
	dest["server"] = InClusterServer
	spec["destination"] = dest
	return clearedName
}

// spokeNamespace is the namespace of the Application on the spoke.
func spokeNamespace(hub *unstructured.Unstructured) string {
	if ns := hub.GetAnnotations()[pullnames.AnnotationAppNamespace]; ns != "" {
		return ns
	}
	return hub.GetNamespace()
}

func spokeLabels(hub map[string]string) map[string]string {
	labels := maps.Clone(hub)
	delete(labels, pullnames.LabelPull)
	return labels
}

func spokeAnnotations(hub map[string]string, refresh bool) map[string]string {
	annotations := maps.Clone(hub)
	for _, k := range hubOnlyAnnotations {
		delete(annotations, k)
	}
	if !refresh {
		delete(annotations, pullnames.AnnotationRefresh)
	}
	return annotations
}

// spokeAppProject is the hub AppProject, as the spoke receives it, in the namespace of
// the spoke Application.
func spokeAppProject(hub *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]any{}}
	p.SetAPIVersion(pullnames.AppProjectGVK.GroupVersion().String())
	p.SetKind(pullnames.AppProjectGVK.Kind)
	p.SetName(hub.GetName())
	p.SetNamespace(namespace)
	if labels := hub.GetLabels(); len(labels) > 0 {
		p.SetLabels(maps.Clone(labels))
	}
	spec, _, _ := unstructured.NestedMap(hub.Object, "spec")
	p.Object["spec"] = runtime.DeepCopyJSON(orEmpty(spec))
	return p
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// namedOperation puts the request's name first in the operation's info, where Argo CD
// keeps it for status.operationState and the spoke's report names it (feedback
// KeyOperationRequest). The hub's own info entries follow, unchanged.
func namedOperation(op map[string]any, name string) map[string]any {
	info, _, _ := unstructured.NestedSlice(op, "info")
	op["info"] = append([]any{map[string]any{"name": pullnames.InfoOperationRequest, "value": name}}, info...)
	return op
}
