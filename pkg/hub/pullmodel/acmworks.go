package pullmodel

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// Red Hat ACM's pull controller writes, for each hub Application, a ManifestWork
// <app>-<first 5 characters of its UID>, labelled pullnames.LabelPull and annotated with the hub
// Application like ours. On a hub moving from ACM those keep applying the spoke
// Application beside ours (two payloads, flapping) and keep it alive after the hub
// Application is deleted. gitops-addon takes each over: once its own ManifestWork is
// applied, ACM's is deleted with the Orphan policy, so the spoke Application (same UID)
// and its resources never go away; ACM's ManifestWorks of an Application deleted, moved
// or no longer pulled are deleted as ours are, with the spoke's copy.

// ReasonACMWorkRetired is the Event reason when ACM's ManifestWork of an Application goes.
const ReasonACMWorkRetired = "ACMManifestWorkRetired"

// acmWorks indexes ACM's pull ManifestWorks by hub Application. They are listed once
// (metadata only, uncached: the manager's cache holds only its own ManifestWorks): ACM's
// pull controller is stopped before gitops-addon takes over, so no new one appears.
type acmWorks struct {
	reader client.Reader

	mu     sync.Mutex
	loaded bool
	byApp  map[types.NamespacedName][]client.ObjectKey
}

func newACMWorks(reader client.Reader) *acmWorks {
	return &acmWorks{reader: reader, byApp: map[types.NamespacedName][]client.ObjectKey{}}
}

// of returns the keys of ACM's ManifestWorks of a hub Application.
func (a *acmWorks) of(ctx context.Context, app types.NamespacedName) ([]client.ObjectKey, error) {
	if a == nil {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.loaded {
		if err := a.load(ctx); err != nil {
			return nil, err
		}
		a.loaded = true
	}
	return append([]client.ObjectKey(nil), a.byApp[app]...), nil
}

func (a *acmWorks) load(ctx context.Context) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersion(workv1.GroupVersion).WithKind("ManifestWorkList"))
	if err := a.reader.List(ctx, list, client.MatchingLabels{pullnames.LabelPull: "true"}); err != nil {
		return fmt.Errorf("listing Red Hat ACM's pull ManifestWorks: %w", err)
	}
	for _, w := range list.Items {
		annotations := w.GetAnnotations()
		app := types.NamespacedName{Namespace: annotations[pullnames.AnnotationHubAppNamespace], Name: annotations[pullnames.AnnotationHubAppName]}
		if w.GetLabels()[pullnames.LabelPullWork] == "true" || app.Name == "" {
			continue // ours, or not a pull ManifestWork of a hub Application
		}
		a.byApp[app] = append(a.byApp[app], client.ObjectKeyFromObject(&w))
	}
	return nil
}

// forget drops a retired ManifestWork from the index.
func (a *acmWorks) forget(app types.NamespacedName, key client.ObjectKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.byApp[app][:0]
	for _, k := range a.byApp[app] {
		if k != key {
			kept = append(kept, k)
		}
	}
	if len(kept) == 0 {
		delete(a.byApp, app)
		return
	}
	a.byApp[app] = kept
}

// retireACMWorks takes over ACM's ManifestWorks of a hub Application: the one in
// keepCluster's namespace is orphaned and deleted once ours there is applied (ours nil:
// not yet); every other is deleted with its spoke Application. keepCluster "" deletes all.
func (r *Reconciler) retireACMWorks(ctx context.Context, app *unstructured.Unstructured, key types.NamespacedName, keepCluster string,
	ours *workv1.ManifestWork) error {
	keys, err := r.acm.of(ctx, key)
	if err != nil {
		return err
	}
	for _, workKey := range keys {
		orphan := workKey.Namespace == keepCluster
		if orphan && !applied(ours) {
			continue // ours first: the reconcile that sees it applied comes back here
		}
		if err := r.retireACMWork(ctx, workKey, orphan); err != nil {
			return err
		}
		r.acm.forget(key, workKey)
		if app != nil {
			how := "deleted with its spoke Application"
			if orphan {
				how = "deleted with the Orphan policy: the spoke Application stays, now carried by " + ours.Name
			}
			r.event(app, corev1.EventTypeNormal, ReasonACMWorkRetired, "Red Hat ACM's ManifestWork %s %s", workKey, how)
		}
	}
	return nil
}

// retireACMWork deletes one of ACM's ManifestWorks, first setting the Orphan policy when
// orphan, so that OCM's work agent leaves what it applied on the spoke.
func (r *Reconciler) retireACMWork(ctx context.Context, key client.ObjectKey, orphan bool) error {
	w := &workv1.ManifestWork{}
	if err := r.APIReader.Get(ctx, key, w); err != nil {
		return client.IgnoreNotFound(err)
	}
	if orphan && (w.Spec.DeleteOption == nil || w.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan) {
		w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
		if err := r.Client.Update(ctx, w); err != nil {
			return fmt.Errorf("setting the Orphan policy on Red Hat ACM's ManifestWork %s: %w", key, err)
		}
	}
	if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Red Hat ACM's ManifestWork %s: %w", key, err)
	}
	ctrl.LoggerFrom(ctx).Info("retired Red Hat ACM's pull ManifestWork", "manifestWork", key.String(), "orphan", orphan)
	return nil
}

// applied tells whether OCM's work agent applied the current generation of a ManifestWork.
func applied(w *workv1.ManifestWork) bool {
	if w == nil {
		return false
	}
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}
