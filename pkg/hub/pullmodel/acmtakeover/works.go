// Package acmtakeover takes over from Red Hat ACM's pull controller on a hub moving to
// gitops-addon, without the spoke Applications or their resources ever going away: ACM's
// pull ManifestWorks are retired (the one beside ours orphaned once ours is applied, every
// other deleted with its spoke Application), and the MulticlusterApplicationSetReports ACM
// wrote are made ours in place. The propagation and report controllers call it; it
// decides nothing about what is delivered.
package acmtakeover

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

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// Red Hat ACM's pull controller writes, for each hub Application, a ManifestWork
// <app>-<first 5 characters of its UID>, labelled pullnames.LabelPull and annotated with
// the hub Application like ours. On a hub moving from ACM those keep applying the spoke
// Application beside ours (two payloads, flapping) and keep it alive after the hub
// Application is deleted. gitops-addon takes each over: once its own ManifestWork is
// applied, ACM's is deleted with the Orphan policy, so the spoke Application (same UID)
// and its resources never go away; ACM's ManifestWorks of an Application deleted, moved
// or no longer pulled are deleted as ours are, with the spoke's copy.

// Recorder records an Event on a hub Application: the propagation controller's, so that
// the retirements are told where its own Events are.
type Recorder func(app *unstructured.Unstructured, eventType, reason, format string, args ...any)

// Works indexes ACM's pull ManifestWorks by hub Application, and retires them. They are
// listed once (metadata only, uncached: the manager's cache holds only its own
// ManifestWorks): ACM's pull controller is stopped before gitops-addon takes over, so no
// new one appears. A nil *Works has none.
type Works struct {
	// client writes: the Orphan policy, the deletes.
	client client.Client
	// reader reads uncached: ACM's ManifestWorks are not in the manager's cache.
	reader client.Reader
	record Recorder

	mu     sync.Mutex
	loaded bool
	byApp  map[types.NamespacedName][]client.ObjectKey
}

// NewWorks returns the index of ACM's ManifestWorks, loaded at its first use.
func NewWorks(c client.Client, apiReader client.Reader, record Recorder) *Works {
	return &Works{client: c, reader: apiReader, record: record, byApp: map[types.NamespacedName][]client.ObjectKey{}}
}

// fate is what becomes of one of ACM's ManifestWorks. The zero fate deletes it with its
// spoke Application.
type fate struct {
	// carrier, when set, is our ManifestWork that now carries the spoke Application:
	// ACM's is deleted with the Orphan policy.
	carrier string
	// wait keeps it until ours on its cluster is applied.
	wait bool
}

func (f fate) how() string {
	if f.carrier != "" {
		return "deleted with the Orphan policy: the spoke Application stays, now carried by " + f.carrier
	}
	return "deleted with its spoke Application"
}

// retired is one of ACM's ManifestWorks retired, and how.
type retired struct {
	key  client.ObjectKey
	fate fate
}

// RetireOfGone deletes, each with its spoke Application, ACM's ManifestWorks of a hub
// Application that is gone: nothing is left to tell of it.
func (w *Works) RetireOfGone(ctx context.Context, app types.NamespacedName) error {
	_, err := w.retire(ctx, app, func(client.ObjectKey) fate { return fate{} })
	return err
}

// RetireAll deletes, each with its spoke Application, ACM's ManifestWorks of a hub
// Application being deleted or delivered nowhere, and says so on it.
func (w *Works) RetireAll(ctx context.Context, app *unstructured.Unstructured) error {
	done, err := w.retire(ctx, client.ObjectKeyFromObject(app), func(client.ObjectKey) fate { return fate{} })
	w.announce(app, done)
	return err
}

// HandOver retires ACM's ManifestWorks of a hub Application delivered to cluster by ours
// (nil while not created yet): the one on that cluster is orphaned once ours is applied,
// so that the spoke Application passes from one to the other; every other is deleted
// with its spoke Application. It says so on the Application.
func (w *Works) HandOver(ctx context.Context, app *unstructured.Unstructured, cluster string, ours *workv1.ManifestWork) error {
	done, err := w.retire(ctx, client.ObjectKeyFromObject(app), func(key client.ObjectKey) fate {
		switch {
		case key.Namespace != cluster:
			return fate{}
		case !applied(ours):
			return fate{wait: true} // ours first: the reconcile that sees it applied comes back here
		default:
			return fate{carrier: ours.Name}
		}
	})
	w.announce(app, done)
	return err
}

// retire retires each of ACM's ManifestWorks of a hub Application by its fate. It returns
// those it retired, before an error too.
func (w *Works) retire(ctx context.Context, app types.NamespacedName, fateOf func(client.ObjectKey) fate) ([]retired, error) {
	keys, err := w.of(ctx, app)
	if err != nil {
		return nil, err
	}
	var done []retired
	for _, key := range keys {
		f := fateOf(key)
		if f.wait {
			continue
		}
		if err := w.retireOne(ctx, key, f.carrier != ""); err != nil {
			return done, err
		}
		w.forget(app, key)
		done = append(done, retired{key: key, fate: f})
	}
	return done, nil
}

// announce records an Event on app for each of ACM's ManifestWorks retired.
func (w *Works) announce(app *unstructured.Unstructured, done []retired) {
	for _, r := range done {
		workKey, how := r.key, r.fate.how()
		w.event(app, corev1.EventTypeNormal, v1alpha1.ReasonACMWorkRetired, "Red Hat ACM's ManifestWork %s %s", workKey, how)
	}
}

func (w *Works) event(app *unstructured.Unstructured, eventType, reason, format string, args ...any) {
	if w.record != nil {
		w.record(app, eventType, reason, format, args...)
	}
}

// retireOne deletes one of ACM's ManifestWorks, first setting the Orphan policy when
// orphan, so that OCM's work agent leaves what it applied on the spoke.
func (w *Works) retireOne(ctx context.Context, key client.ObjectKey, orphan bool) error {
	work := &workv1.ManifestWork{}
	if err := w.reader.Get(ctx, key, work); err != nil {
		return client.IgnoreNotFound(err)
	}
	if orphan && (work.Spec.DeleteOption == nil || work.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan) {
		work.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
		if err := w.client.Update(ctx, work); err != nil {
			return fmt.Errorf("setting the Orphan policy on Red Hat ACM's ManifestWork %s: %w", key, err)
		}
	}
	if err := w.client.Delete(ctx, work, client.Preconditions{UID: &work.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Red Hat ACM's ManifestWork %s: %w", key, err)
	}
	ctrl.LoggerFrom(ctx).Info("retired Red Hat ACM's pull ManifestWork", "manifestWork", key.String(), "orphan", orphan)
	return nil
}

// of returns the keys of ACM's ManifestWorks of a hub Application.
func (w *Works) of(ctx context.Context, app types.NamespacedName) ([]client.ObjectKey, error) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.loaded {
		if err := w.load(ctx); err != nil {
			return nil, err
		}
		w.loaded = true
	}
	return append([]client.ObjectKey(nil), w.byApp[app]...), nil
}

func (w *Works) load(ctx context.Context) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersion(workv1.GroupVersion).WithKind("ManifestWorkList"))
	if err := w.reader.List(ctx, list, client.MatchingLabels{pullnames.LabelPull: "true"}); err != nil {
		return fmt.Errorf("listing Red Hat ACM's pull ManifestWorks: %w", err)
	}
	for _, work := range list.Items {
		annotations := work.GetAnnotations()
		app := types.NamespacedName{Namespace: annotations[pullnames.AnnotationHubAppNamespace], Name: annotations[pullnames.AnnotationHubAppName]}
		if work.GetLabels()[pullnames.LabelPullWork] == "true" || app.Name == "" {
			continue // ours, or not a pull ManifestWork of a hub Application
		}
		w.byApp[app] = append(w.byApp[app], client.ObjectKeyFromObject(&work))
	}
	return nil
}

// forget drops a retired ManifestWork from the index.
func (w *Works) forget(app types.NamespacedName, key client.ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.byApp[app][:0]
	for _, k := range w.byApp[app] {
		if k != key {
			kept = append(kept, k)
		}
	}
	if len(kept) == 0 {
		delete(w.byApp, app)
		return
	}
	w.byApp[app] = kept
}

// applied tells whether OCM's work agent applied the current generation of a ManifestWork.
func applied(w *workv1.ManifestWork) bool {
	if w == nil {
		return false
	}
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}
