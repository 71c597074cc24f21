package appsetaccess

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// indexArgoNamespace indexes GitOpsClusters (in the manager's cache) by the namespace of
// their Argo CD, so that a namespace's reconcile finds the GitOpsClusters whose placement
// ConfigMap lives there without listing them all.
const indexArgoNamespace = "appsetaccess.argoNamespace"

func argoNamespaceOf(obj client.Object) []string {
	gc, ok := obj.(*appsv1beta1.GitOpsCluster)
	if !ok {
		return nil
	}
	return []string{gc.ArgoNamespace()}
}

// wanted is one shared object of a namespace with the live GitOpsClusters that need it,
// sorted by namespace and name (the first that adopts is the one that adopts).
type wanted struct {
	sharedObject
	users []*appsv1beta1.GitOpsCluster
}

// wantedIn is the desired set of namespace ns: of the objects each GitOpsCluster needs,
// those in ns. A GitOpsCluster being deleted needs none, and neither does one whose
// argoNamespace the manager may not work in (its reconciler refuses it and writes
// nothing for it). gcs are sorted by namespace and name.
func wantedIn(ns string, gcs []*appsv1beta1.GitOpsCluster, allowed func(argoNamespace string) bool) map[objectKey]*wanted {
	out := map[objectKey]*wanted{}
	for _, gc := range gcs {
		if !gc.DeletionTimestamp.IsZero() || !allowed(gc.ArgoNamespace()) {
			continue
		}
		for _, o := range needs(gc) {
			if o.key.namespace != ns {
				continue
			}
			if out[o.key] == nil {
				out[o.key] = &wanted{sharedObject: o}
			}
			out[o.key].users = append(out[o.key].users, gc)
		}
	}
	return out
}

// concerning lists the GitOpsClusters that may need an object in namespace ns: those
// living there (Role, RoleBindings) and those whose Argo CD is there (ConfigMap), sorted
// by namespace and name.
func (r *Reconciler) concerning(ctx context.Context, ns string) ([]*appsv1beta1.GitOpsCluster, error) {
	byKey := map[client.ObjectKey]*appsv1beta1.GitOpsCluster{}
	for _, opt := range []client.ListOption{client.InNamespace(ns), client.MatchingFields{indexArgoNamespace: ns}} {
		list := &appsv1beta1.GitOpsClusterList{}
		if err := r.Client.List(ctx, list, opt); err != nil {
			return nil, fmt.Errorf("listing the GitOpsClusters that use namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			byKey[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
		}
	}
	return slices.SortedFunc(maps.Values(byKey), func(a, b *appsv1beta1.GitOpsCluster) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}), nil
}

// sortedKeys orders a namespace's objects as a GitOpsCluster needs them (ConfigMap, Role,
// RoleBindings), so that writes, Events and messages come in a stable order.
func sortedKeys[V any](m map[objectKey]V) []objectKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b objectKey) int {
		return cmp.Or(cmp.Compare(kindOrder[a.kind], kindOrder[b.kind]), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
}

var kindOrder = map[string]int{"ConfigMap": 0, "Role": 1, "RoleBinding": 2}
