// Package uninstall takes gitops-addon off a hub without losing anything and without
// leaving anything stuck: `helm uninstall` alone removes the manager while every
// GitOpsCluster still carries its finalizer (deleting one, or its namespace, then hangs
// forever), and removing the ClusterManagementAddOn lets OCM delete every cluster's
// ManifestWorks, which can take the GitOps operator away before the ArgoCD CR it must
// finalize.
//
// What it does, in order (each step printed; nothing written on a dry run):
//  1. stops the manager (scales its Deployment to 0) and waits until its leader Lease is
//     released or expired, so that nothing re-adds a finalizer or reverts a ManifestWork;
//  2. marks every gitops-addon ManifestWork to orphan its objects: the spokes keep their
//     GitOps operator, Argo CD and applications running as they are;
//  3. releases every GitOpsCluster (removes the manager's finalizer);
//  4. deletes the ManagedClusterAddOns gitops-addon created, releases their spoke
//     teardown hook (the spokes keep their stack), and waits until OCM removed them,
//     naming any that does not go and what it waits for;
//  5. deletes the pull-model ManifestWorks (now orphaning): the spoke Applications stay,
//     running as they are, and nothing re-applies a hub Application the manager no longer
//     follows beside whatever delivers it next (Red Hat ACM's pull controller on a hub
//     moved back to ACM, or gitops-addon installed again, which writes its own);
//  6. deletes the ClusterManagementAddOn, last, only when this chart installed it: a
//     hub-only installation leaves the addon to another one's (Red Hat ACM's AddOnTemplate
//     gitops-addon), and removing that would take its addon off every cluster.
//
// It keeps the CRDs, the GitOpsClusters, the hub's Argo CD Applications, the Argo CD
// cluster Secrets and the ApplicationSet placement ConfigMap and RBAC (the hub's Argo CD
// keeps working with the fleet), and on the spokes everything the addon installed.
package uninstall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
)

const (
	// ChartNameLabel and ChartNameValue mark what the manager chart installed, the
	// ClusterManagementAddOn included.
	ChartNameLabel = "app.kubernetes.io/name"
	ChartNameValue = "gitops-addon-manager"
	// ManagerName is the manager's Deployment and leader election Lease, as the chart names them.
	ManagerName = "gitops-addon-manager"
	// pollInterval paces the waits of a command a person runs once.
	pollInterval = time.Second
)

// Options configures an uninstall.
type Options struct {
	// Namespace is the manager's release namespace.
	Namespace string
	// Yes performs the steps; false only prints them (the default: a dry run).
	Yes bool
	// Timeout bounds each wait (the manager stopping, the ManagedClusterAddOns going).
	Timeout time.Duration
	// Out receives the plan and the progress.
	Out io.Writer
}

// uninstaller runs the steps with one client.
type uninstaller struct {
	c client.Client
	o Options
}

// Run performs (or, without Yes, prints) the uninstall.
func Run(ctx context.Context, c client.Client, o Options) error {
	if o.Namespace == "" {
		return errors.New("the manager's namespace is required (--namespace)")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	u := uninstaller{c: c, o: o}
	if !o.Yes {
		u.printf("Dry run: nothing is changed. Run again with --yes to do this.\n")
	}
	for _, step := range []func(context.Context) error{
		u.stopManager, u.orphanWorks, u.releaseGitOpsClusters, u.releasePulledApplications, u.removeAddons, u.removePullWorks, u.removeManagementAddon,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	u.printf("Kept: the CRDs, every GitOpsCluster, the hub's Argo CD Applications, the Argo CD cluster Secrets and the ApplicationSet placement ConfigMap and " +
		"RBAC; on the spokes, the GitOps operator, Argo CD and their applications, running as they are.\n")
	return nil
}

func (u uninstaller) printf(format string, args ...any) {
	if u.o.Out != nil {
		fmt.Fprintf(u.o.Out, format, args...)
	}
}

// stopManager scales the manager to 0 and waits for its leader Lease to be free.
func (u uninstaller) stopManager(ctx context.Context) error {
	key := types.NamespacedName{Namespace: u.o.Namespace, Name: ManagerName}
	d := &appsv1.Deployment{}
	switch err := u.c.Get(ctx, key, d); {
	case apierrors.IsNotFound(err):
		u.printf("1. The manager Deployment %s is not there: nothing to stop.\n", key)
	case err != nil:
		return fmt.Errorf("reading the manager Deployment %s: %w", key, err)
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0:
		u.printf("1. The manager Deployment %s is already scaled to 0.\n", key)
	default:
		u.printf("1. Scale the manager Deployment %s to 0, and wait until its leader Lease is released.\n", key)
		if u.o.Yes {
			patch := client.MergeFrom(d.DeepCopy())
			d.Spec.Replicas = new(int32)
			if err := u.c.Patch(ctx, d, patch); err != nil {
				return fmt.Errorf("scaling the manager Deployment %s to 0: %w", key, err)
			}
		}
	}
	if !u.o.Yes {
		return nil
	}
	var holder string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, u.o.Timeout, true, func(ctx context.Context) (bool, error) {
		h, free, err := u.leaseFree(ctx, key)
		if err != nil {
			return false, err
		}
		holder = h
		if !free {
			return false, nil
		}
		// Without leader election there is no Lease: the pods must be gone too.
		d := &appsv1.Deployment{}
		if err := u.c.Get(ctx, key, d); err != nil {
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
		if d.Status.Replicas > 0 {
			holder = fmt.Sprintf("%d manager pod(s)", d.Status.Replicas)
			return false, nil
		}
		return true, nil
	})
	switch {
	case err != nil && holder != "":
		return fmt.Errorf("the manager's leader Lease %s is still held by %s after %v: a manager is still running (check its pods and that nothing scales it up "+
			"again), so its finalizers and ManifestWorks cannot be released safely", key, holder, u.o.Timeout)
	case err != nil:
		return fmt.Errorf("waiting for the manager to stop: %w", err)
	}
	u.printf("   The manager is stopped.\n")
	return nil
}

// leaseFree says whether no manager holds the leader Lease: it is missing, released
// (LeaderElectionReleaseOnCancel empties the holder) or expired.
func (u uninstaller) leaseFree(ctx context.Context, key types.NamespacedName) (holder string, free bool, err error) {
	lease := &coordinationv1.Lease{}
	switch err := u.c.Get(ctx, key, lease); {
	case apierrors.IsNotFound(err):
		return "", true, nil
	case err != nil:
		return "", false, fmt.Errorf("reading the manager's leader Lease %s: %w", key, err)
	}
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" {
		return "", true, nil
	}
	if spec.RenewTime != nil && spec.LeaseDurationSeconds != nil &&
		time.Since(spec.RenewTime.Time) > time.Duration(*spec.LeaseDurationSeconds)*time.Second {
		return *spec.HolderIdentity, true, nil
	}
	return *spec.HolderIdentity, false, nil
}

// orphanWorks makes every gitops-addon ManifestWork leave its objects on its spoke when
// it is deleted: the addon's (unless another installation's ClusterManagementAddOn
// delivers the addon, whose ManifestWorks are not ours) and the pull model's.
func (u uninstaller) orphanWorks(ctx context.Context) error {
	_, foreign, err := u.managementAddon(ctx)
	if err != nil {
		return err
	}
	withAddon := !foreign
	works, err := u.ourWorks(ctx, withAddon)
	if err != nil {
		return err
	}
	var toOrphan []*workv1.ManifestWork
	for _, w := range works {
		if w.Spec.DeleteOption == nil || w.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan {
			toOrphan = append(toOrphan, w)
		}
	}
	u.printf("2. Mark %d gitops-addon ManifestWork(s) to orphan their objects, so that every spoke keeps its GitOps stack and its Applications "+
		"running%s, and wait until each cluster's work agent has applied that.\n", len(toOrphan), names(toOrphan))
	if !u.o.Yes {
		return nil
	}
	for _, w := range toOrphan {
		patch := client.MergeFrom(w.DeepCopy())
		w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
		if err := u.c.Patch(ctx, w, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("marking ManifestWork %s/%s to orphan its objects: %w", w.Namespace, w.Name, err)
		}
	}
	return u.waitOrphaningApplied(ctx, withAddon)
}

// ourWorks lists the ManifestWorks gitops-addon wrote: the pull model's, and with withAddon
// the addon's (false when the ClusterManagementAddOn is another installation's).
func (u uninstaller) ourWorks(ctx context.Context, withAddon bool) ([]*workv1.ManifestWork, error) {
	out, err := u.pullWorks(ctx)
	if err != nil || !withAddon {
		return out, err
	}
	addon := &workv1.ManifestWorkList{}
	if err := u.c.List(ctx, addon, client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}); err != nil {
		return nil, fmt.Errorf("listing gitops-addon ManifestWorks: %w", err)
	}
	for i := range addon.Items {
		out = append(out, &addon.Items[i])
	}
	return out, nil
}

// pullWorks lists the pull model's ManifestWorks.
func (u uninstaller) pullWorks(ctx context.Context) ([]*workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	if err := u.c.List(ctx, list, client.MatchingLabels{contract.LabelPullWork: "true", contract.LabelManagedBy: contract.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing pull-model ManifestWorks: %w", err)
	}
	works := make([]*workv1.ManifestWork, 0, len(list.Items))
	for i := range list.Items {
		works = append(works, &list.Items[i])
	}
	return works, nil
}

// managementAddon reads the ClusterManagementAddOn gitops-addon (nil when there is none)
// and tells whether another installation made it (this chart labels its own).
func (u uninstaller) managementAddon(ctx context.Context) (*addonv1beta1.ClusterManagementAddOn, bool, error) {
	cma := &addonv1beta1.ClusterManagementAddOn{}
	switch err := u.c.Get(ctx, types.NamespacedName{Name: contract.AddonName}, cma); {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading ClusterManagementAddOn %s: %w", contract.AddonName, err)
	}
	return cma, cma.Labels[ChartNameLabel] != ChartNameValue, nil
}

// waitOrphaningApplied waits until the work agent of every cluster has applied its
// ManifestWork's current spec: the agent orphans an object by dropping its owner reference
// to the work when it applies the delete option, so a ManifestWork deleted before that
// would still take the spoke's GitOps stack with it.
func (u uninstaller) waitOrphaningApplied(ctx context.Context, withAddon bool) error {
	var pending []*workv1.ManifestWork
	err := wait.PollUntilContextTimeout(ctx, pollInterval, u.o.Timeout, true, func(ctx context.Context) (bool, error) {
		works, err := u.ourWorks(ctx, withAddon)
		if err != nil {
			return false, err
		}
		pending = pending[:0]
		for _, w := range works {
			applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
			if applied == nil || applied.ObservedGeneration < w.Generation {
				pending = append(pending, w)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the work agent has not applied the orphaning of %d ManifestWork(s) after %v%s: their clusters are probably offline, and deleting "+
			"them now would remove those clusters' GitOps stack when they return. Nothing was deleted or released; the manager stays scaled to 0 (scale it "+
			"back up to resume as before). Bring the clusters back (or detach them from the hub) and run this again", len(pending), u.o.Timeout, names(pending))
	}
	return nil
}

// releaseGitOpsClusters removes the manager's finalizer from every GitOpsCluster.
func (u uninstaller) releaseGitOpsClusters(ctx context.Context) error {
	list := &appsv1beta1.GitOpsClusterList{}
	if err := u.c.List(ctx, list); err != nil {
		return fmt.Errorf("listing GitOpsClusters: %w", err)
	}
	var held []*appsv1beta1.GitOpsCluster
	for i := range list.Items {
		if slices.Contains(list.Items[i].Finalizers, appsv1beta1.Finalizer) {
			held = append(held, &list.Items[i])
		}
	}
	u.printf("3. Release %d GitOpsCluster(s): remove the finalizer %s (they stay; deleting one afterwards finishes at once)%s.\n",
		len(held), appsv1beta1.Finalizer, names(held))
	if !u.o.Yes {
		return nil
	}
	for _, gc := range held {
		patch := client.MergeFromWithOptions(gc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		gc.Finalizers = slices.DeleteFunc(gc.Finalizers, func(f string) bool { return f == appsv1beta1.Finalizer })
		if err := u.c.Patch(ctx, gc, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing GitOpsCluster %s/%s: %w", gc.Namespace, gc.Name, err)
		}
	}
	return nil
}

// releasePulledApplications removes Argo CD's resource finalizers from the hub's pull-model
// Applications: the hub's Argo CD skips them and the manager, which released them once
// the spoke had pruned, is going; left in place, deleting such an Application (or its
// namespace) would hang. Their spoke copies and ManifestWorks stay.
func (u uninstaller) releasePulledApplications(ctx context.Context) error {
	apps := &unstructured.UnstructuredList{}
	apps.SetGroupVersionKind(contract.ApplicationGVK.GroupVersion().WithKind(contract.ApplicationGVK.Kind + "List"))
	err := u.c.List(ctx, apps, client.MatchingLabels{contract.LabelPull: "true"})
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		u.printf("   No Argo CD Applications on the hub: no pull-model Application to release.\n")
		return nil
	case err != nil:
		return fmt.Errorf("listing the hub's pull-model Applications: %w", err)
	}
	var held []*unstructured.Unstructured
	for i := range apps.Items {
		if len(contract.WithoutArgoCDResourcesFinalizers(apps.Items[i].GetFinalizers())) != len(apps.Items[i].GetFinalizers()) {
			held = append(held, &apps.Items[i])
		}
	}
	u.printf("   Release %d pull-model Application(s) on the hub: remove Argo CD's resource finalizer, which only the manager removes (their spoke copies "+
		"stay)%s.\n",
		len(held), names(held))
	if !u.o.Yes {
		return nil
	}
	for _, app := range held {
		patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
		app.SetFinalizers(contract.WithoutArgoCDResourcesFinalizers(app.GetFinalizers()))
		if err := u.c.Patch(ctx, app, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
		}
	}
	return nil
}

// removeAddons deletes the ManagedClusterAddOns gitops-addon created and waits until
// OCM removed them with their (now orphaning) ManifestWorks.
func (u uninstaller) removeAddons(ctx context.Context) error {
	ours := client.MatchingLabels{contract.LabelManagedBy: contract.ManagedByValue}
	list := &addonv1beta1.ManagedClusterAddOnList{}
	if err := u.c.List(ctx, list, ours); err != nil {
		return fmt.Errorf("listing gitops-addon ManagedClusterAddOns: %w", err)
	}
	var addons []*addonv1beta1.ManagedClusterAddOn
	for i := range list.Items {
		if list.Items[i].Name == contract.AddonName {
			addons = append(addons, &list.Items[i])
		}
	}
	u.printf("4. Delete the %d ManagedClusterAddOn(s) gitops-addon created, and wait until OCM removed them%s.\n", len(addons), names(addons))
	if !u.o.Yes {
		return nil
	}
	for _, a := range addons {
		if err := u.c.Delete(ctx, a); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ManagedClusterAddOn %s/%s: %w", a.Namespace, a.Name, err)
		}
		if err := releasePreDeleteHook(ctx, u.c, a); err != nil {
			return err
		}
	}
	var remaining []addonv1beta1.ManagedClusterAddOn
	err := wait.PollUntilContextTimeout(ctx, pollInterval, u.o.Timeout, true, func(ctx context.Context) (bool, error) {
		left := &addonv1beta1.ManagedClusterAddOnList{}
		if err := u.c.List(ctx, left, ours); err != nil {
			return false, err
		}
		remaining = slices.DeleteFunc(left.Items, func(a addonv1beta1.ManagedClusterAddOn) bool { return a.Name != contract.AddonName })
		return len(remaining) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d ManagedClusterAddOn(s) still there after %v: %s. Each waits for its finalizers, removed by OCM once the cluster's klusterlet has "+
			"cleaned up; "+
			"a cluster that is offline keeps its own until it returns or is detached: %w", len(remaining), u.o.Timeout, gitopscluster.WaitingAddOns(remaining), err)
	}
	return nil
}

// releasePreDeleteHook removes the finalizer with which addon-framework (in the stopped
// manager) would run the spoke teardown hook: the spoke keeps its GitOps stack, so there
// is nothing to tear down, and no manager runs to complete the hook.
func releasePreDeleteHook(ctx context.Context, c client.Client, a *addonv1beta1.ManagedClusterAddOn) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &addonv1beta1.ManagedClusterAddOn{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(a), current); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !slices.Contains(current.Finalizers, addonv1beta1.AddonPreDeleteHookFinalizer) {
			return nil
		}
		patch := client.MergeFromWithOptions(current.DeepCopy(), client.MergeFromWithOptimisticLock{})
		current.Finalizers = slices.DeleteFunc(current.Finalizers, func(f string) bool { return f == addonv1beta1.AddonPreDeleteHookFinalizer })
		if err := c.Patch(ctx, current, patch); err != nil {
			return fmt.Errorf("releasing the pre-delete hook of ManagedClusterAddOn %s/%s: %w", a.Namespace, a.Name, err)
		}
		return nil
	})
}

// removePullWorks deletes the pull-model ManifestWorks, which orphan their objects by now:
// each spoke keeps its Applications as they are.
func (u uninstaller) removePullWorks(ctx context.Context) error {
	works, err := u.pullWorks(ctx)
	if err != nil {
		return err
	}
	u.printf("5. Delete the %d pull-model ManifestWork(s), which orphan their objects: each spoke keeps its Applications running as they are, and "+
		"nothing re-applies a hub Application beside what delivers it next (Red Hat ACM's pull controller, or gitops-addon installed again)%s.\n",
		len(works), names(works))
	if !u.o.Yes {
		return nil
	}
	for _, w := range works {
		if w.Spec.DeleteOption == nil || w.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan {
			// Made after step 2 listed (a manager still running would do that): not ours to
			// delete with its objects.
			return fmt.Errorf("pull-model ManifestWork %s/%s does not orphan its objects: something wrote it after step 2 (is a manager still "+
				"running?); nothing deleted, run this again", w.Namespace, w.Name)
		}
		if err := u.c.Delete(ctx, w, client.Preconditions{UID: &w.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pull-model ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
		}
	}
	return nil
}

// removeManagementAddon deletes the ClusterManagementAddOn, last, when this chart made it.
func (u uninstaller) removeManagementAddon(ctx context.Context) error {
	cma, foreign, err := u.managementAddon(ctx)
	switch {
	case err != nil:
		return err
	case cma == nil:
		u.printf("6. The ClusterManagementAddOn %s is not there.\n", contract.AddonName)
		return nil
	case foreign:
		u.printf("6. The ClusterManagementAddOn %s is not this chart's (%s): left as it is, since deleting it would take its addon off every cluster.\n",
			contract.AddonName, gitopscluster.DescribeManagementAddon(cma))
		return nil
	}
	u.printf("6. Delete the ClusterManagementAddOn %s, last.\n", contract.AddonName)
	if !u.o.Yes {
		return nil
	}
	if err := u.c.Delete(ctx, cma, client.Preconditions{UID: &cma.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ClusterManagementAddOn %s: %w", contract.AddonName, err)
	}
	return nil
}

// names lists objects as ": ns/name, ..." (at most 10), or nothing.
func names[T client.Object](objects []T) string {
	if len(objects) == 0 {
		return ""
	}
	var out []string
	for i, o := range objects {
		if i == 10 {
			out = append(out, fmt.Sprintf("and %d more", len(objects)-10))
			break
		}
		out = append(out, client.ObjectKeyFromObject(o).String())
	}
	return ": " + strings.Join(out, ", ")
}
