// Package teardown takes the Argo CD instance gitops-addon delivered off a spoke in the
// order its finalizer needs: it runs as the addon's pre-delete hook Job, which OCM's
// addon framework applies when the cluster's ManagedClusterAddOn is deleted and waits
// for before it deletes the addon's ManifestWork. Deleting the ArgoCD CR together with
// the GitOps operator (one ManifestWork) lets the operator's Pod stop before it has
// cleared the CR's finalizer, leaving the CR and the ManifestWork Terminating for good;
// here the CR goes first, while the operator still runs.
package teardown

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// ArgoCDGVK is the kind of the Argo CD instance the addon delivers.
var ArgoCDGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1beta1", Kind: "ArgoCD"}

// Options says which instance to remove and how long to wait for its finalizers.
type Options struct {
	Namespace, Name string
	Timeout         time.Duration
	// Logf reports each step.
	Logf func(format string, args ...any)
}

// Run deletes the ArgoCD instance if gitops-addon delivered it (an instance without our
// label is the user's and stays) and waits until it is gone. A missing instance, or a
// cluster without the ArgoCD API, is already torn down.
func Run(ctx context.Context, c client.WithWatch, o Options) error {
	list := argoCDList()
	err := c.List(ctx, list, client.InNamespace(o.Namespace), client.MatchingFields{"metadata.name": o.Name})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		o.Logf("no ArgoCD API on this cluster: nothing to tear down")
		return nil
	case err != nil:
		return fmt.Errorf("reading ArgoCD %s/%s: %w", o.Namespace, o.Name, err)
	case len(list.Items) == 0:
		o.Logf("ArgoCD %s/%s is already gone", o.Namespace, o.Name)
		return nil
	}
	instance := &list.Items[0]
	if instance.GetLabels()[constants.LabelManagedBy] != constants.ManagedByValue {
		o.Logf("ArgoCD %s/%s was not delivered by gitops-addon (no label %s=%s): it stays", o.Namespace, o.Name,
			constants.LabelManagedBy, constants.ManagedByValue)
		return nil
	}
	if instance.GetDeletionTimestamp() == nil {
		uid := instance.GetUID()
		if err := c.Delete(ctx, instance, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ArgoCD %s/%s: %w", o.Namespace, o.Name, err)
		}
		o.Logf("deleted ArgoCD %s/%s; waiting for the GitOps operator to finalize it (finalizers %v)", o.Namespace, o.Name, instance.GetFinalizers())
	}
	return waitGone(ctx, c, o)
}

// waitGone waits until the instance is deleted: a list tells where it stands, a watch
// from that version tells when it goes; a watch that ends early starts over with a list.
func waitGone(ctx context.Context, c client.WithWatch, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var finalizers []string
	for {
		list := argoCDList()
		if err := c.List(ctx, list, client.InNamespace(o.Namespace), client.MatchingFields{"metadata.name": o.Name}); err != nil {
			return stillThere(o, finalizers, err)
		}
		if len(list.Items) == 0 {
			o.Logf("ArgoCD %s/%s is gone", o.Namespace, o.Name)
			return nil
		}
		finalizers = list.Items[0].GetFinalizers()
		w, err := c.Watch(ctx, argoCDList(), client.InNamespace(o.Namespace), client.MatchingFields{"metadata.name": o.Name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if err != nil {
			return stillThere(o, finalizers, err)
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				gone = true
				break
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				finalizers = u.GetFinalizers()
			}
		}
		w.Stop()
		if gone {
			o.Logf("ArgoCD %s/%s is gone", o.Namespace, o.Name)
			return nil
		}
		if ctx.Err() != nil {
			return stillThere(o, finalizers, ctx.Err())
		}
	}
}

func argoCDList() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ArgoCDGVK.GroupVersion().WithKind(ArgoCDGVK.Kind + "List"))
	return list
}

func stillThere(o Options, finalizers []string, cause error) error {
	return fmt.Errorf("ArgoCD %s/%s is still there after %v, waiting for its finalizers %v (%v): the GitOps operator "+
		"(Deployment %s/%s) must run to finalize it; check its pods. The addon's removal waits for this hook, so the "+
		"operator stays until the instance is gone", o.Namespace, o.Name, o.Timeout, finalizers, cause,
		constants.GitOpsNamespace, constants.OperatorDeployment)
}
