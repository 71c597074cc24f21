package ownership

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// Outcome says what Ensure found about an object.
type Outcome struct {
	// Problem is a sentence for the status when the object belongs to someone else.
	Problem string
	// Conflict is true when that someone else is another GitOpsCluster.
	Conflict bool
	// Existing is the object as it is on the apiserver when it is not ours.
	Existing client.Object
}

// UpdateFunc brings current to desired in the fields its owner keeps and tells whether it
// changed anything.
type UpdateFunc func(current, desired client.Object) bool

// Store writes the objects GitOpsClusters own on the hub, across namespaces (recorded in
// owner labels, see Labels), and never one that someone else created: it creates what is
// missing, updates what is its owner's and differs, adopts on request, and says who holds
// a name it cannot have. It remembers what it created until its cache shows it, and the
// names held by others (invisible to a cache filtered on our label), so that reconciles
// neither create twice nor ask the apiserver again and again.
type Store struct {
	// Client reads through the label-filtered cache and writes.
	Client client.Client
	// APIReader reads uncached, only to name the holder of an object it could not create.
	APIReader client.Reader
	// Recorder records the Adopted Event on the GitOpsCluster; nil records nothing.
	Recorder events.EventRecorder

	recent  recentCreates
	foreign foreignObjects
}

// Ensure makes an object created for a GitOpsCluster look as desired: it creates it
// when missing, updates it when ours and different (update returns whether it changed
// anything), and never touches one created by anybody else. The cached client only sees
// objects labelled as ours, so a name taken by a foreign object shows up as AlreadyExists
// on create; it is then read uncached to say who holds it.
func (r *Store) Ensure(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object, update UpdateFunc) (Outcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := KindOf(desired)
	err := r.Client.Get(ctx, key, current)
	switch {
	case apierrors.IsNotFound(err) && r.recent.created(kind, key):
		// Created by an earlier reconcile; the next one after the cache catches up checks it.
		return Outcome{}, nil
	case apierrors.IsNotFound(err) && r.foreign.known(kind, key):
		// Known to be held by someone else (invisible to our label-filtered cache): look
		// it up instead of sending a create that fails.
		return r.readForeign(ctx, gc, desired, current, update)
	case apierrors.IsNotFound(err):
		return r.create(ctx, gc, desired, current, update)
	case err != nil:
		return Outcome{}, fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	r.recent.seen(kind, key)
	if outcome, foreign := foreignOutcome(current, gc, kind); foreign {
		if !outcome.Conflict && gc.Adopts() {
			return r.adopt(ctx, gc, desired, current, update)
		}
		return outcome, nil
	}
	return Outcome{}, r.UpdateIfChanged(ctx, current, desired, update)
}

// UpdateIfChanged writes current once update has brought it to desired, if that changed it.
func (r *Store) UpdateIfChanged(ctx context.Context, current, desired client.Object, update UpdateFunc) error {
	return UpdateIfChanged(ctx, r.Client, current, desired, update)
}

// UpdateIfChanged brings current to desired with update and writes it only if that changed
// it, so that a steady state makes no writes.
func UpdateIfChanged(ctx context.Context, c client.Writer, current, desired client.Object, update UpdateFunc) error {
	if !update(current, desired) {
		return nil
	}
	if err := c.Update(ctx, current); err != nil {
		return fmt.Errorf("updating %s %s: %w", KindOf(desired), client.ObjectKeyFromObject(desired), err)
	}
	return nil
}

func (r *Store) create(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object, update UpdateFunc) (Outcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := KindOf(desired)
	err := r.Client.Create(ctx, desired)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return Outcome{}, fmt.Errorf("creating %s %s: %w", kind, key, err)
		}
		r.recent.add(kind, key)
		return Outcome{}, nil
	}
	return r.readForeign(ctx, gc, desired, current, update)
}

// readForeign reads, uncached, an object of the wanted name that our cache cannot see,
// remembers it as foreign, and adopts it when the GitOpsCluster asks for adoption.
func (r *Store) readForeign(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object, update UpdateFunc) (Outcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := KindOf(desired)
	if err := r.APIReader.Get(ctx, key, current); err != nil {
		if apierrors.IsNotFound(err) {
			r.foreign.forget(kind, key) // gone: the next reconcile creates ours
			return r.create(ctx, gc, desired, desired.DeepCopyObject().(client.Object), update)
		}
		return Outcome{}, fmt.Errorf("reading existing %s %s: %w", kind, key, err)
	}
	outcome, foreign := foreignOutcome(current, gc, kind)
	if !foreign {
		r.foreign.forget(kind, key)
		return Outcome{}, r.UpdateIfChanged(ctx, current, desired, update)
	}
	if !outcome.Conflict && gc.Adopts() {
		return r.adopt(ctx, gc, desired, current, update)
	}
	r.foreign.add(kind, key)
	return outcome, nil
}

// adopt puts our owner labels on an object nobody's GitOpsCluster owns and brings it to
// the desired state; from then on it is ours (updated, and removed with its cluster).
func (r *Store) adopt(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object, update UpdateFunc) (Outcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := KindOf(desired)
	before := current.DeepCopyObject().(client.Object)
	labels := maps.Clone(current.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	current.SetLabels(labels)
	update(current, desired)
	write := func() error { return r.Client.Update(ctx, current) }
	if _, metadataOnly := current.(*metav1.PartialObjectMetadata); metadataOnly {
		// Only the labels are known and written (an Update would need the whole object).
		write = func() error { return r.Client.Patch(ctx, current, client.MergeFrom(before)) }
	}
	if err := write(); err != nil {
		return Outcome{}, fmt.Errorf("adopting %s %s: %w", kind, key, err)
	}
	r.foreign.forget(kind, key)
	r.recent.add(kind, key) // the cache sees it only now
	r.event(gc, corev1.EventTypeNormal, appsv1beta1.ReasonAdopted, "Adopted %s %s (it was not created by gitops-addon; %s is \"true\")",
		kind, key, appsv1beta1.AnnotationAdopt)
	return Outcome{}, nil
}

// foreignOutcome describes an object that is not ours; foreign is false when it is ours.
func foreignOutcome(current client.Object, gc *appsv1beta1.GitOpsCluster, kind string) (Outcome, bool) {
	key := client.ObjectKeyFromObject(current)
	switch who, other := Classify(current, gc); who {
	case OwnedByIt:
		return Outcome{}, false
	case OwnedByOther:
		return Outcome{
			Conflict: true, Existing: current,
			Problem: fmt.Sprintf("%s %s belongs to GitOpsCluster %s, which selects the same cluster; it is left unchanged. Fix: make the Placements of the two "+
				"GitOpsClusters disjoint, or delete one of them.",
				kind, key, other),
		}, true
	default:
		return Outcome{
			Existing: current,
			Problem: fmt.Sprintf("%s %s already exists and was not created by gitops-addon; it is left unchanged. Fix: annotate GitOpsCluster %s/%s with %s=true to "+
				"adopt it (as when migrating from Red Hat ACM), delete it, or remove the cluster from the Placement.",
				kind, key, gc.Namespace, gc.Name, appsv1beta1.AnnotationAdopt),
		}, true
	}
}

// KindOf names an object's kind for messages: its Go type (typed objects from the cache
// carry no TypeMeta), or for an unstructured or metadata-only object the kind it says.
func KindOf(obj client.Object) string {
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		switch obj.(type) {
		case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
			return kind
		}
	}
	t := fmt.Sprintf("%T", obj)
	return t[strings.LastIndex(t, ".")+1:]
}

// RecentlyCreated tells whether the Store created the object within recentCreateTTL and
// its cache may not show it yet.
func (r *Store) RecentlyCreated(kind string, key client.ObjectKey) bool {
	return r.recent.created(kind, key)
}

// DeleteExact deletes an object only if it is still the one read (UID precondition), so
// that a same-named object created meanwhile by someone else survives.
func (r *Store) DeleteExact(ctx context.Context, obj client.Object) error {
	uid := obj.GetUID()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", KindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

func (r *Store) event(gc *appsv1beta1.GitOpsCluster, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(gc, nil, eventType, reason, "Reconcile", format, args...)
	}
}
