// Package teardown takes the Argo CD instance gitops-addon delivered off a spoke in the
// order its finalizer needs: it runs as the addon's pre-delete hook Job, which OCM's
// addon framework applies when the cluster's ManagedClusterAddOn is deleted and waits
// for before it deletes the addon's ManifestWork. Deleting the ArgoCD CR together with
// the GitOps operator (one ManifestWork) lets the operator's Pod stop before it has
// cleared the CR's finalizer, leaving the CR and the ManifestWork Terminating for good;
// here the CR goes first, while the operator still runs. And the Argo CD itself goes only
// once the Applications being deleted in its namespace are gone: only it can prune their
// resources and release resources-finalizer.argocd.argoproj.io.
package teardown

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/existingargocd"
)

// ApplicationGVK is the kind whose deletions the instance must outlive.
var ApplicationGVK = contract.ApplicationGVK

// Options says which instance to remove and how long to wait for its finalizers.
type Options struct {
	Namespace, Name string
	// RecordNamespace is the agent's namespace, which holds the creation record
	// (contract.CreationRecordConfigMap): only the instance whose UID it holds is deleted.
	RecordNamespace string
	Timeout         time.Duration
	// DrainTimeout bounds the wait for Applications being deleted in Namespace; past it
	// the instance goes anyway and the log names the ones left.
	DrainTimeout time.Duration
	// Logf reports each step.
	Logf func(format string, args ...any)
}

// Run deletes the ArgoCD instance if gitops-addon created it (the agent's creation record
// holds its UID; any other instance stays, whatever its labels say: a server-side apply
// merges our label into an instance someone else created) and waits until it is gone, then the client certificate
// gitops-addon kept there for argocd-agent in Argo CD Agent mode. A missing instance, or
// a cluster without the ArgoCD API, is already torn down.
func Run(ctx context.Context, c client.WithWatch, o Options) error {
	record, err := existingargocd.ReadRecord(ctx, c, o.RecordNamespace)
	if err != nil {
		return err
	}
	if record.ArgoCDUID == "" {
		// Only the agent was shipped here (another Argo CD runs, or the agent never found
		// out): nothing of ours is in openshift-gitops, where the hook has no Role then.
		o.Logf("the creation record %s/%s holds no ArgoCD: gitops-addon created none here; nothing to tear down", o.RecordNamespace, contract.CreationRecordConfigMap)
		return nil
	}
	foreign, err := removeArgoCD(ctx, c, o, record)
	if err != nil || foreign {
		return err // beside an instance someone else created, nothing there is ours
	}
	removed, err := argocdagent.RemoveClientTLS(ctx, c, o.Namespace)
	if err != nil {
		return err
	}
	if removed {
		o.Logf("deleted Secret %s/%s, argocd-agent's client certificate gitops-addon kept", o.Namespace, argocdagent.ClientTLSSecret)
	}
	return nil
}

// removeArgoCD deletes the instance gitops-addon created and waits until it is gone;
// foreign says the instance there is someone else's, and stays.
func removeArgoCD(ctx context.Context, c client.WithWatch, o Options, record existingargocd.Record) (foreign bool, err error) {
	list := argoCDList()
	err = c.List(ctx, list, client.InNamespace(o.Namespace), client.MatchingFields{"metadata.name": o.Name})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		o.Logf("no ArgoCD API on this cluster: nothing to tear down")
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading ArgoCD %s/%s: %w", o.Namespace, o.Name, err)
	case len(list.Items) == 0:
		o.Logf("ArgoCD %s/%s is already gone", o.Namespace, o.Name)
		return false, nil
	}
	instance := &list.Items[0]
	if !record.Ours(instance.GetUID()) {
		o.Logf("ArgoCD %s/%s (UID %s) was not created by gitops-addon: the creation record %s/%s holds UID %s; it stays, with its Applications",
			o.Namespace, o.Name, instance.GetUID(), o.RecordNamespace, contract.CreationRecordConfigMap, record.ArgoCDUID)
		return true, nil
	}
	if instance.GetDeletionTimestamp() == nil {
		if err := drainApplications(ctx, c, o); err != nil {
			return false, err
		}
		uid := instance.GetUID()
		if err := c.Delete(ctx, instance, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting ArgoCD %s/%s: %w", o.Namespace, o.Name, err)
		}
		o.Logf("deleted ArgoCD %s/%s; waiting for the GitOps operator to finalize it (finalizers %v)", o.Namespace, o.Name, instance.GetFinalizers())
	}
	return false, waitGone(ctx, c, o)
}

// waitGone waits until the instance is deleted.
func waitGone(ctx context.Context, c client.WithWatch, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	last, err := waitFor(ctx, c, argoCDList, []client.ListOption{client.InNamespace(o.Namespace), client.MatchingFields{"metadata.name": o.Name}},
		func(l *unstructured.UnstructuredList) bool { return len(l.Items) == 0 })
	if err != nil {
		var finalizers []string
		if last != nil && len(last.Items) > 0 {
			finalizers = last.Items[0].GetFinalizers()
		}
		return stillThere(o, finalizers, err)
	}
	o.Logf("ArgoCD %s/%s is gone", o.Namespace, o.Name)
	return nil
}

// drainApplications waits, at most DrainTimeout, until no Application in the namespace is
// being deleted. A cluster that leaves a Placement loses its addon and the Applications
// an ApplicationSet generated for it at about the same time; their pruning needs this
// Argo CD. Timing out is no failure: the hub has waited for them already (the
// GitOpsCluster's WaitingForApplications), and the instance must go.
func drainApplications(ctx context.Context, c client.WithWatch, o Options) error {
	if o.DrainTimeout <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.DrainTimeout)
	defer cancel()
	last, err := waitFor(ctx, c, applicationList, []client.ListOption{client.InNamespace(o.Namespace)},
		func(l *unstructured.UnstructuredList) bool { return len(deleting(l)) == 0 })
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil // no Application API: nothing to prune
	case ctx.Err() == nil:
		return fmt.Errorf("reading the Applications in %s: %w", o.Namespace, err)
	}
	o.Logf("Applications %v in %s are still being deleted after %v; removing Argo CD anyway: remove "+
		"resources-finalizer.argocd.argoproj.io from them to let them go (their resources stay)", deleting(last), o.Namespace, o.DrainTimeout)
	return nil
}

func deleting(l *unstructured.UnstructuredList) []string {
	var names []string
	if l == nil {
		return nil
	}
	for _, item := range l.Items {
		if item.GetDeletionTimestamp() != nil {
			names = append(names, item.GetName())
		}
	}
	return names
}

// waitFor lists until done is true: a list tells where things stand, a watch from its
// version tells when something changed, and the next list looks again. It returns the
// last list it read.
func waitFor(ctx context.Context, c client.WithWatch, newList func() *unstructured.UnstructuredList, opts []client.ListOption,
	done func(*unstructured.UnstructuredList) bool) (*unstructured.UnstructuredList, error) {
	var last *unstructured.UnstructuredList
	for {
		list := newList()
		if err := c.List(ctx, list, opts...); err != nil {
			return last, err
		}
		last = list
		if done(list) {
			return list, nil
		}
		watchOpts := append(slices.Clone(opts), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		w, err := c.Watch(ctx, newList(), watchOpts...)
		if err != nil {
			return last, err
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
		}
		w.Stop()
		if ctx.Err() != nil {
			return last, ctx.Err()
		}
	}
}

func applicationList() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ApplicationGVK.GroupVersion().WithKind(ApplicationGVK.Kind + "List"))
	return list
}

func argoCDList() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(contract.ArgoCDGVK.GroupVersion().WithKind(contract.ArgoCDGVK.Kind + "List"))
	return list
}

func stillThere(o Options, finalizers []string, cause error) error {
	return fmt.Errorf("ArgoCD %s/%s is still there after %v, waiting for its finalizers %v (%v): the GitOps operator "+
		"(Deployment %s/%s) must run to finalize it; check its pods. The addon's removal waits for this hook, so the "+
		"operator stays until the instance is gone", o.Namespace, o.Name, o.Timeout, finalizers, cause,
		contract.GitOpsNamespace, contract.OperatorDeployment)
}
