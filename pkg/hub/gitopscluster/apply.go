package gitopscluster

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
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
	case apierrors.IsNotFound(err):
		return r.create(ctx, gc, desired, current)
	case err != nil:
		return applyOutcome{}, fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	r.recent.seen(kind, key)
	if outcome, foreign := foreignOutcome(current, gc, kind); foreign {
		return outcome, nil
	}
	if !update(current, desired) {
		return applyOutcome{}, nil
	}
	if err := r.Client.Update(ctx, current); err != nil {
		return applyOutcome{}, fmt.Errorf("updating %s %s: %w", kind, key, err)
	}
	return applyOutcome{}, nil
}

func (r *Reconciler) create(ctx context.Context, gc *appsv1beta1.GitOpsCluster, desired, current client.Object) (applyOutcome, error) {
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
	if err := r.APIReader.Get(ctx, key, current); err != nil {
		return applyOutcome{}, fmt.Errorf("reading existing %s %s: %w", kind, key, err)
	}
	outcome, _ := foreignOutcome(current, gc, kind)
	return outcome, nil
}

// foreignOutcome describes an object that is not ours; foreign is false when it is ours.
func foreignOutcome(current client.Object, gc *appsv1beta1.GitOpsCluster, kind string) (applyOutcome, bool) {
	key := client.ObjectKeyFromObject(current)
	switch who, other := classifyOwnership(current, gc); who {
	case ownedByUs:
		return applyOutcome{}, false
	case ownedByOtherGitOpsCluster:
		return applyOutcome{
			conflict: true, existing: current,
			problem: fmt.Sprintf("%s %s belongs to GitOpsCluster %s, which selects the same cluster; it is left unchanged. Fix: make the Placements of the two GitOpsClusters disjoint, or delete one of them.",
				kind, key, other),
		}, true
	default:
		return applyOutcome{
			existing: current,
			problem: fmt.Sprintf("%s %s already exists and was not created by gitops-addon; it is left unchanged. Fix: delete it to let GitOpsCluster %s/%s manage it, or remove the cluster from the Placement.",
				kind, key, gc.Namespace, gc.Name),
		}, true
	}
}

// kindOf names an object's Go type for messages (typed objects from the cache carry no TypeMeta).
func kindOf(obj client.Object) string {
	t := fmt.Sprintf("%T", obj)
	return t[strings.LastIndex(t, ".")+1:]
}
