package gitopscluster

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// applyOutcome says what ensureOwned found about an object.
type applyOutcome struct {
	// problem is a sentence for the status when the object belongs to someone else.
	problem string
	// conflict is true when that someone else is another GitOpsCluster.
	conflict bool
	// existing is the object as it is on the apiserver when it is not ours.
	existing client.Object
}

// ensureOwned makes an object created for a GitOpsCluster look as desired: it creates it
// when missing, updates it when ours and different (update returns whether it changed
// anything), and never touches one created by anybody else. The cached client only sees
// objects labelled as ours, so a name taken by a foreign object shows up as AlreadyExists
// on create; it is then read uncached to say who holds it.
func (r *Reconciler) ensureOwned(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object,
	update func(current, desired client.Object) bool) (applyOutcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := kindOf(desired)
	err := r.Client.Get(ctx, key, current)
	switch {
	case apierrors.IsNotFound(err) && r.recent.created(kind, key):
		// Created by an earlier reconcile; the next one after the cache catches up checks it.
		return applyOutcome{}, nil
	case apierrors.IsNotFound(err) && r.foreign.known(kind, key):
		// Known to be held by someone else (invisible to our label-filtered cache): look
		// it up instead of sending a create that fails.
		return r.readForeign(ctx, gc, desired, current, update)
	case apierrors.IsNotFound(err):
		return r.create(ctx, gc, desired, current, update)
	case err != nil:
		return applyOutcome{}, fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	r.recent.seen(kind, key)
	if outcome, foreign := foreignOutcome(current, gc, kind); foreign {
		if !outcome.conflict && gc.Adopts() {
			return r.adopt(ctx, gc, desired, current, update)
		}
		return outcome, nil
	}
	return applyOutcome{}, r.updateIfChanged(ctx, current, desired, update)
}

func (r *Reconciler) updateIfChanged(ctx context.Context, current, desired client.Object, update func(current, desired client.Object) bool) error {
	if !update(current, desired) {
		return nil
	}
	if err := r.Client.Update(ctx, current); err != nil {
		return fmt.Errorf("updating %s %s: %w", kindOf(desired), client.ObjectKeyFromObject(desired), err)
	}
	return nil
}

func (r *Reconciler) create(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object,
	update func(current, desired client.Object) bool) (applyOutcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := kindOf(desired)
	err := r.Client.Create(ctx, desired)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return applyOutcome{}, fmt.Errorf("creating %s %s: %w", kind, key, err)
		}
		r.recent.add(kind, key)
		return applyOutcome{}, nil
	}
	return r.readForeign(ctx, gc, desired, current, update)
}

// readForeign reads, uncached, an object of the wanted name that our cache cannot see,
// remembers it as foreign, and adopts it when the GitOpsCluster asks for adoption.
func (r *Reconciler) readForeign(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object,
	update func(current, desired client.Object) bool) (applyOutcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := kindOf(desired)
	if err := r.APIReader.Get(ctx, key, current); err != nil {
		if apierrors.IsNotFound(err) {
			r.foreign.forget(kind, key) // gone: the next reconcile creates ours
			return r.create(ctx, gc, desired, desired.DeepCopyObject().(client.Object), update)
		}
		return applyOutcome{}, fmt.Errorf("reading existing %s %s: %w", kind, key, err)
	}
	outcome, foreign := foreignOutcome(current, gc, kind)
	if !foreign {
		r.foreign.forget(kind, key)
		return applyOutcome{}, r.updateIfChanged(ctx, current, desired, update)
	}
	if !outcome.conflict && gc.Adopts() {
		return r.adopt(ctx, gc, desired, current, update)
	}
	r.foreign.add(kind, key)
	return outcome, nil
}

// adopt puts our owner labels on an object nobody's GitOpsCluster owns and brings it to
// the desired state; from then on it is ours (updated, and removed with its cluster).
func (r *Reconciler) adopt(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object,
	update func(current, desired client.Object) bool) (applyOutcome, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := kindOf(desired)
	labels := maps.Clone(current.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	current.SetLabels(labels)
	update(current, desired)
	if err := r.Client.Update(ctx, current); err != nil {
		return applyOutcome{}, fmt.Errorf("adopting %s %s: %w", kind, key, err)
	}
	r.foreign.forget(kind, key)
	r.recent.add(kind, key) // the cache sees it only now
	r.event(gc, corev1.EventTypeNormal, "Adopted", "Adopted %s %s (it was not created by gitops-addon; %s is \"true\")", kind, key, appsv1beta1.AnnotationAdopt)
	return applyOutcome{}, nil
}

// foreignOutcome describes an object that is not ours; foreign is false when it is ours.
func foreignOutcome(current client.Object, gc *appsv1beta1.GitOpsCluster, kind string) (applyOutcome, bool) {
	key := client.ObjectKeyFromObject(current)
	switch who, other := ownership.Classify(current, gc); who {
	case ownership.OwnedByIt:
		return applyOutcome{}, false
	case ownership.OwnedByOther:
		return applyOutcome{
			conflict: true, existing: current,
			problem: fmt.Sprintf("%s %s belongs to GitOpsCluster %s, which selects the same cluster; it is left unchanged. Fix: make the Placements of the two "+
				"GitOpsClusters disjoint, or delete one of them.",
				kind, key, other),
		}, true
	default:
		return applyOutcome{
			existing: current,
			problem: fmt.Sprintf("%s %s already exists and was not created by gitops-addon; it is left unchanged. Fix: annotate GitOpsCluster %s/%s with %s=true to "+
				"adopt it (as when migrating from Red Hat ACM), delete it, or remove the cluster from the Placement.",
				kind, key, gc.Namespace, gc.Name, appsv1beta1.AnnotationAdopt),
		}, true
	}
}

// kindOf names an object's Go type for messages (typed objects from the cache carry no TypeMeta).
func kindOf(obj client.Object) string {
	t := fmt.Sprintf("%T", obj)
	return t[strings.LastIndex(t, ".")+1:]
}
