package pullmodel

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/repocreds"
)

// credentialSelector selects, in the pull cache, the hub Secrets that may follow pulled
// Applications: Argo CD repositories and credential templates their owner opted in.
// Every other Secret of the hub stays out of the cache (and out of the manager's memory).
func credentialSelector() labels.Selector {
	optIn, _ := labels.NewRequirement(contract.LabelPullCredentials, selection.Equals, []string{"true"})
	kind, _ := labels.NewRequirement(contract.LabelArgoCDSecretType, selection.In,
		[]string{contract.ArgoCDSecretTypeRepository, contract.ArgoCDSecretTypeRepoCreds})
	return labels.NewSelector().Add(*optIn, *kind)
}

// stagedCredentials are the staged copies of the hub credentials an Application uses,
// as its ManifestWork carries them into the spoke's Argo CD namespace. The credentials
// are those of the Application's own namespace, the hub Argo CD's namespace for an
// Application in it: the Secrets the hub's Argo CD would use for it. On a hub-only
// installation no agent of ours materialises them, so none are carried.
func (r *Reconciler) stagedCredentials(ctx context.Context, app *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if r.HubOnly {
		return nil, nil
	}
	urls := repocreds.RepoURLs(app)
	if len(urls) == 0 {
		return nil, nil
	}
	secrets := &corev1.SecretList{}
	if err := r.Cache.List(ctx, secrets, client.InNamespace(app.GetNamespace())); err != nil {
		return nil, fmt.Errorf("listing the repository credentials of namespace %s: %w", app.GetNamespace(), err)
	}
	var opted []corev1.Secret
	for _, s := range secrets.Items {
		if repocreds.OptedIn(&s) {
			opted = append(opted, s)
		}
	}
	used := repocreds.Select(opted, urls, projectName(app))
	staged := make([]*unstructured.Unstructured, 0, len(used))
	for i := range used {
		staged = append(staged, repocreds.Staged(&used[i], contract.GitOpsNamespace, app.GetNamespace(), app.GetName()))
	}
	return staged, nil
}

// forCredentialChanges wakes the pulled Applications of a credential Secret's namespace
// that may use it, before or after the change: their ManifestWorks then carry the new
// data, or drop the copy. Nothing polls: a Secret that does not change wakes nothing.
func (r *Reconciler) forCredentialChanges() handler.TypedEventHandler[*corev1.Secret, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	wake := func(ctx context.Context, q queue, secrets ...*corev1.Secret) {
		enqueueAll(q, r.applicationsUsing(ctx, secrets...))
	}
	return handler.TypedFuncs[*corev1.Secret, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*corev1.Secret], q queue) {
			// At start every Application is reconciled anyway.
			if !e.IsInInitialList {
				wake(ctx, q, e.Object)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*corev1.Secret], q queue) { wake(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*corev1.Secret], q queue) {
			if e.ObjectOld.ResourceVersion != e.ObjectNew.ResourceVersion {
				wake(ctx, q, e.ObjectOld, e.ObjectNew)
			}
		},
	}
}

// applicationsUsing are the pulled Applications in the Secrets' namespace whose sources
// the Secrets may serve.
func (r *Reconciler) applicationsUsing(ctx context.Context, secrets ...*corev1.Secret) []reconcile.Request {
	if len(secrets) == 0 {
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(pullnames.ApplicationGVK.GroupVersion().WithKind(pullnames.ApplicationGVK.Kind + "List"))
	// Read only: the namespace's Applications (thousands, on a large hub) are not copied.
	if err := r.Cache.List(ctx, list, client.InNamespace(secrets[0].Namespace), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the Applications a repository credential may serve", "namespace", secrets[0].Namespace)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		app := &list.Items[i]
		if !isCandidate(app) {
			continue
		}
		urls := repocreds.RepoURLs(app)
		for _, s := range secrets {
			if repocreds.Concerns(s, urls) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)})
				break
			}
		}
	}
	return reqs
}
