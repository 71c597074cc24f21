package gitopscluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// finalize tears down, in order, what a deleted GitOpsCluster created: first its
// ManagedClusterAddOns, waiting until OCM has removed them (and with them the addon's
// workloads on the spokes; CRDs and the namespace stay, they are orphaned), then its
// Argo CD cluster secrets, and only then the finalizer. Nothing it did not create is
// touched. The shared ApplicationSet objects are not its own: pkg/hub/appsetaccess
// removes those no other GitOpsCluster needs once it is being deleted.
func (r *Reconciler) finalize(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(gc, Finalizer) {
		return ctrl.Result{}, nil
	}
	remaining, err := r.deleteOwnedAddons(ctx, gc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(remaining) > 0 {
		// The ManagedClusterAddOn watch requeues us as each one goes away.
		log := ctrl.LoggerFrom(ctx)
		log.Info("waiting for ManagedClusterAddOns to be removed", "remaining", len(remaining))
		return r.explainWait(ctx, gc, remaining)
	}
	if err := r.removeStaleSecrets(ctx, gc, nil); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.removeManagedServiceAccounts(ctx, gc, nil); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(gc, Finalizer)
	if err := r.Client.Update(ctx, gc); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of %s/%s: %w", gc.Namespace, gc.Name, err)
	}
	r.forgetLastWrite(client.ObjectKeyFromObject(gc))
	return ctrl.Result{}, nil
}

// deleteOwnedAddons lets go of every ManagedClusterAddOn of a GitOpsCluster being
// deleted (handed over to another GitOpsCluster that selects its cluster too, or deleted)
// and returns the ones being deleted (finalized by OCM).
func (r *Reconciler) deleteOwnedAddons(ctx context.Context, gc *appsv1beta1.GitOpsCluster) ([]addonv1beta1.ManagedClusterAddOn, error) {
	removal, err := r.removeAddons(ctx, gc, nil, false)
	return append(removal.terminating, removal.deleted...), err
}

// StuckAfter is how long a GitOpsCluster may wait for its ManagedClusterAddOns to go
// before its status and an Event say what it waits for.
const StuckAfter = 5 * time.Minute

// explainWait says, once a deletion has waited longer than StuckAfter, on the status (the
// Ready condition, and status.message and phase, which a CRD without conditions keeps too)
// and in a Warning Event, which clusters' ManagedClusterAddOns it waits for and why they
// may not go; once, not at each wake. Before that it only asks to be woken when the
// threshold passes: the ManagedClusterAddOn watch wakes it as each one goes.
func (r *Reconciler) explainWait(ctx context.Context, gc *appsv1beta1.GitOpsCluster, remaining []addonv1beta1.ManagedClusterAddOn) (ctrl.Result, error) {
	waited := time.Since(gc.DeletionTimestamp.Time)
	if waited < StuckAfter {
		return ctrl.Result{RequeueAfter: StuckAfter - waited}, nil
	}
	message := fmt.Sprintf("Deleting for more than %v: waiting for OCM to remove the ManagedClusterAddOns on %s. "+
		"Each waits for its finalizers, which OCM removes once the cluster's klusterlet has uninstalled the addon; a cluster "+
		"that is offline keeps its own until it returns or is detached from the hub (then remove the finalizer by hand).",
		StuckAfter, WaitingAddOns(remaining))
	status := r.lastStatus(gc)
	if !meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: appsv1beta1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: gc.Generation,
		Reason: appsv1beta1.ReasonWaitingForAddOnRemoval, Message: message,
	}) {
		return ctrl.Result{}, nil
	}
	status.Phase, status.Message = "failed", message
	r.event(gc, corev1.EventTypeWarning, appsv1beta1.ReasonWaitingForAddOnRemoval, "%s", message)
	if err := r.updateStatus(ctx, gc, status); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// WaitingAddOns names each cluster with the finalizers its ManagedClusterAddOn waits for,
// at most 10: the words of every message about a removal that does not finish.
func WaitingAddOns(addons []addonv1beta1.ManagedClusterAddOn) string {
	const shown = 10
	var parts []string
	for i, a := range addons {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more clusters", len(addons)-shown))
			break
		}
		finalizers := "no finalizer, being removed"
		if len(a.Finalizers) > 0 {
			finalizers = "finalizers " + strings.Join(a.Finalizers, ", ")
		}
		parts = append(parts, fmt.Sprintf("cluster %s (%s)", a.Namespace, finalizers))
	}
	return strings.Join(parts, "; ")
}

func (r *Reconciler) otherLiveGitOpsClusters(ctx context.Context, gc *appsv1beta1.GitOpsCluster) ([]appsv1beta1.GitOpsCluster, error) {
	all := &appsv1beta1.GitOpsClusterList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil, fmt.Errorf("listing GitOpsClusters: %w", err)
	}
	var others []appsv1beta1.GitOpsCluster
	for _, o := range all.Items {
		if o.UID != gc.UID && o.DeletionTimestamp.IsZero() {
			others = append(others, o)
		}
	}
	return others, nil
}
