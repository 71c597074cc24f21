package gitopscluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// imageSettings are spec.gitopsAddon's image choices, which the addon's values functions
// render the cluster's manifests with.
func imageSettings(gc *appsv1beta1.GitOpsCluster) contract.Images {
	a := gc.Spec.GitOpsAddon
	if a == nil {
		return contract.Images{}
	}
	images := contract.Images{Operator: a.GitOpsOperatorImage, ArgoCD: a.GitOpsImage, Redis: a.RedisImage}
	if agent := a.ArgoCDAgent; agent != nil {
		images.ArgoCDAgent = agent.Image
	}
	return images
}

// desiredAddon is the ManagedClusterAddOn a GitOpsCluster creates on a cluster. When the
// ClusterManagementAddOn is known it carries the controller reference to it that OCM's
// addon manager would add right after the create (identical, so OCM finds nothing to
// change): addon-framework's registration and deploy controllers wait for that reference,
// and OCM's addon manager adds it at its own pace (2 workers; at 1,000 clusters about a
// minute behind the creates). It also carries addon-framework's pre-delete hook finalizer,
// which the framework's deploy controller would otherwise add in a sync and an update of
// its own before it deploys anything (the agent chart has a pre-delete hook, and the
// framework removes the finalizer once the hook has run, as it does the one it adds).
func desiredAddon(
	gc *appsv1beta1.GitOpsCluster, cluster string, settings contract.AddonSettings, cma *metav1.OwnerReference,
) *addonv1beta1.ManagedClusterAddOn {
	annotations := settings.Annotations()
	maps.Copy(annotations, ownership.Annotations(gc))
	addon := &addonv1beta1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{
			Name:        contract.AddonName,
			Namespace:   cluster,
			Labels:      ownership.Labels(gc),
			Annotations: annotations,
		},
	}
	if cma != nil {
		addon.OwnerReferences = []metav1.OwnerReference{*cma}
		addon.Finalizers = []string{addonv1beta1.AddonPreDeleteHookFinalizer}
	}
	return addon
}

// managementAddonRef is the controller reference of a ManagedClusterAddOn to the
// gitops-addon ClusterManagementAddOn, as OCM's addon manager writes it; nil when the
// ClusterManagementAddOn does not exist (OCM then adds the reference once it does).
func (r *Reconciler) managementAddonRef(ctx context.Context) (*metav1.OwnerReference, error) {
	cma := &addonv1beta1.ClusterManagementAddOn{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: contract.AddonName}, cma)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ClusterManagementAddOn %s: %w", contract.AddonName, err)
	}
	return metav1.NewControllerRef(
		cma,
		schema.GroupVersionKind{Group: addonv1alpha1.GroupName, Version: addonv1alpha1.GroupVersion.Version, Kind: "ClusterManagementAddOn"},
	), nil
}

// addonDeliverer names what delivers the addon when this installation does not: the
// ClusterManagementAddOn gitops-addon's installer, "" when there is none.
func (r *Reconciler) addonDeliverer(ctx context.Context) (string, error) {
	cma := &addonv1beta1.ClusterManagementAddOn{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: contract.AddonName}, cma)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading ClusterManagementAddOn %s: %w", contract.AddonName, err)
	}
	return DescribeManagementAddon(cma), nil
}

// DescribeManagementAddon says who delivers the addon through a ClusterManagementAddOn
// gitops-addon: Red Hat ACM's AddOnTemplate addon, this chart, or another installer.
func DescribeManagementAddon(cma *addonv1beta1.ClusterManagementAddOn) string {
	if IsTemplateAddon(cma) {
		return "an AddOnTemplate addon, as Red Hat ACM delivers its gitops-addon"
	}
	if by := cma.Labels["app.kubernetes.io/managed-by"]; by != "" {
		return "installed by " + by
	}
	return "installed by another installer"
}

// IsTemplateAddon tells whether a ClusterManagementAddOn is delivered through
// AddOnTemplates (Red Hat ACM's gitops-addon is): OCM's addon manager then renders its
// ManifestWorks, and removing it runs the template's pre-delete hooks on every cluster.
// ACM writes it as v1alpha1 supportedConfigs with a defaultConfig, which OCM serves as
// v1beta1 defaultConfigs.
func IsTemplateAddon(cma *addonv1beta1.ClusterManagementAddOn) bool {
	isTemplate := func(c addonv1beta1.AddOnConfig) bool {
		return c.Group == addonv1beta1.GroupName && c.Resource == "addontemplates"
	}
	return slices.ContainsFunc(cma.Spec.DefaultConfigs, isTemplate) ||
		slices.ContainsFunc(cma.Spec.InstallStrategy.Placements, func(p addonv1beta1.PlacementStrategy) bool {
			return slices.ContainsFunc(p.Configs, isTemplate)
		})
}

// updateAddon sets our labels and image annotations on an owned ManagedClusterAddOn and
// leaves everything else (spec.configs, annotations of OCM or users) as it is.
func updateAddon(current, desired client.Object) bool {
	changed := false
	labels := current.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range desired.GetLabels() {
		if labels[k] != v {
			labels[k], changed = v, true
		}
	}
	want := desired.GetAnnotations()
	annotations := contract.WithSettings(current.GetAnnotations(), contract.SettingsOf(want))
	changed = changed || !maps.Equal(annotations, current.GetAnnotations())
	if owner, ok := want[ownership.AnnotationOwner]; ok && annotations[ownership.AnnotationOwner] != owner {
		annotations[ownership.AnnotationOwner], changed = owner, true
	}
	current.SetLabels(labels)
	current.SetAnnotations(annotations)
	return changed
}

// reconcileAddons ensures a gitops-addon ManagedClusterAddOn on every decided cluster when
// the addon is enabled, and removes the ones this GitOpsCluster created that are no longer
// wanted. ManagedClusterAddOns created by users or other GitOpsClusters are never touched.
func (r *Reconciler) reconcileAddons(
	ctx context.Context, gc *appsv1beta1.GitOpsCluster, clusters []string, trust argocdagent.Trust, readers map[string]contract.ServiceAccountRef,
) (addonResult, error) {
	res := addonResult{enabled: gc.AddonEnabled()}
	if r.HubOnly {
		res.hubOnly = true
		if res.enabled {
			deliverer, err := r.addonDeliverer(ctx)
			res.deliverer = deliverer
			return res, err
		}
		return res, nil
	}
	wanted := map[string]bool{}
	if res.enabled {
		cma, err := r.managementAddonRef(ctx)
		if err != nil {
			return res, err
		}
		states, err := forEachCluster(ctx, clusters, func(ctx context.Context, cluster string) (addonState, error) {
			return r.ensureAddon(ctx, gc, cluster, trust, cma, readers[cluster])
		})
		if err != nil {
			return res, err
		}
		for i, cluster := range clusters {
			wanted[cluster] = true
			res.add(cluster, states[i])
		}
	}
	removal, err := r.removeStaleAddons(ctx, gc, wanted)
	res.problems = append(res.problems, removal.stuck...)
	res.draining = removal.draining
	res.recheckAfter = removal.recheckAfter
	return res, err
}

// addonState is what ensureAddon found on one cluster.
type addonState struct {
	outcome   ownership.Outcome
	available bool
	// modeProblem says why the cluster's Argo CD Agent mode label was not used.
	modeProblem string
	// argoCDAgentMode: the cluster is in Argo CD Agent mode; argoCDAgentCertificate: its agent
	// reported the client certificate in place; argoCDAgentConnected: that argocd-agent is
	// connected to the principal.
	argoCDAgentMode, argoCDAgentCertificate, argoCDAgentConnected bool
	// existing is what the cluster's addon reports of an Argo CD gitops-addon did not
	// create there (its ExistingArgoCD condition True), and the choice in force; nil when
	// it reports none.
	existing *existingArgoCD
	// choiceProblem says why the cluster's existing-argocd label was not used.
	choiceProblem string
	// applyProblem names the objects OCM's work agent could not apply on the cluster,
	// with its message (the StackApplied condition pkg/hub/stackstatus writes).
	applyProblem string
}

// managedCluster reads a decided cluster's ManagedCluster from the cache; nil when it has
// none (registration reports that).
func (r *Reconciler) managedCluster(ctx context.Context, cluster string) (*clusterv1.ManagedCluster, error) {
	mc := &clusterv1.ManagedCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, mc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
	}
	return mc, nil
}

// argoCDAgentModeOf is the Argo CD Agent mode of one cluster: its ManagedCluster's
// ArgoCDAgentMode label when set to a valid mode, else the GitOpsCluster's; "" when agent
// mode is off. A label with another value is reported (problem) and not used.
func argoCDAgentModeOf(gc *appsv1beta1.GitOpsCluster, mc *clusterv1.ManagedCluster) (mode, problem string) {
	mode = gc.ArgoCDAgentMode()
	if mode == "" || mc == nil {
		return mode, ""
	}
	switch label, set := mc.Labels[contract.ArgoCDAgentMode]; {
	case !set:
		return mode, ""
	case label == appsv1beta1.ArgoCDAgentModeManaged || label == appsv1beta1.ArgoCDAgentModeAutonomous:
		return label, ""
	default:
		return mode, fmt.Sprintf("ManagedCluster %s has label %s=%q, which is not an Argo CD Agent mode: using the GitOpsCluster's mode %q. Fix: set the label to "+
			"%s or %s, or remove it.",
			mc.Name, contract.ArgoCDAgentMode, label, mode, appsv1beta1.ArgoCDAgentModeManaged, appsv1beta1.ArgoCDAgentModeAutonomous)
	}
}

// add counts one cluster's addon into the result.
func (res *addonResult) add(cluster string, state addonState) {
	// A user's own ManagedClusterAddOn still delivers the stack, so it counts and is no
	// problem; it is simply not ours to change. Another GitOpsCluster's is a conflict.
	if state.outcome.Conflict {
		res.problems = append(res.problems, state.outcome.Problem)
		res.conflict = true
	}
	for _, problem := range []string{state.modeProblem, state.choiceProblem, state.applyProblem} {
		if problem != "" {
			res.problems = append(res.problems, problem)
		}
	}
	if state.existing != nil {
		res.existing = append(res.existing, *state.existing)
	}
	// Where an Argo CD gitops-addon did not create runs, the stack (argocd-agent with it)
	// is withheld on purpose: an argocd-agent without a certificate or a connection there
	// is no fault, and counting it would keep AddOnsReady, and Ready, False for as long as
	// that Argo CD runs. Available still counts: the spoke agent runs and reports either
	// way, and an addon that is not Available is a fault there like anywhere.
	if state.argoCDAgentMode && state.existing == nil {
		res.argoCDAgentMode++
		if state.argoCDAgentCertificate {
			res.argoCDAgentCertificates++
		} else {
			res.argoCDAgentWithoutCertificate = append(res.argoCDAgentWithoutCertificate, cluster)
		}
		if state.argoCDAgentConnected {
			res.argoCDAgentConnected++
		} else {
			res.agentNotConnected = append(res.agentNotConnected, cluster)
		}
	}
	res.withAddon++
	if state.available {
		res.available++
	} else {
		res.notAvailable = append(res.notAvailable, cluster)
	}
}

func (r *Reconciler) ensureAddon(
	ctx context.Context,
	gc *appsv1beta1.GitOpsCluster,
	cluster string,
	trust argocdagent.Trust,
	cma *metav1.OwnerReference,
	reader contract.ServiceAccountRef,
) (addonState, error) {
	mc, err := r.managedCluster(ctx, cluster)
	if err != nil {
		return addonState{}, err
	}
	mode, modeProblem := argoCDAgentModeOf(gc, mc)
	choice, choiceProblem := existingArgoCDChoiceOf(gc, mc)
	settings := addonSettings(gc, mode, trust)
	settings.ExistingArgoCD = choice.setting()
	settings.LiveResourcesReader = reader
	current := &addonv1beta1.ManagedClusterAddOn{}
	outcome, err := r.owned().Ensure(ctx, gc, desiredAddon(gc, cluster, settings, cma), current, updateAddon)
	if err != nil {
		return addonState{}, err
	}

	if outcome.Existing != nil {
		current = outcome.Existing.(*addonv1beta1.ManagedClusterAddOn)
	}
	available := meta.IsStatusConditionTrue(current.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)
	state := addonState{outcome: outcome, available: available, modeProblem: modeProblem, argoCDAgentMode: mode != "", choiceProblem: choiceProblem,
		existing: existingArgoCDReported(cluster, current, choice)}
	if failure := stackApplyFailure(current); failure != "" {
		state.applyProblem = fmt.Sprintf("Cluster %s: %s", cluster, failure)
	}
	if state.argoCDAgentMode {
		state.argoCDAgentCertificate = meta.IsStatusConditionTrue(current.Status.Conditions, contract.ConditionArgoCDAgentCertificate)
		state.argoCDAgentConnected = meta.IsStatusConditionTrue(current.Status.Conditions, contract.ConditionArgoCDAgentConnected)
	}
	return state, nil
}

// removalResult is what removing the unwanted ManagedClusterAddOns found.
type removalResult struct {
	// stuck is a problem for each removal that has waited longer than StuckAfter.
	stuck []string
	// draining is, for each removal held for departing Applications, what it waits for.
	draining []string
	// recheckAfter is when to look again at the removals under way.
	recheckAfter time.Duration
}

// removeStaleAddons deletes the ManagedClusterAddOns this GitOpsCluster created for
// clusters that are not wanted any more, each once the Applications leaving its cluster
// are gone (see holdRemoval). It reports each removal that has waited longer than
// StuckAfter (naming its cluster and finalizers), and when to look again.
func (r *Reconciler) removeStaleAddons(ctx context.Context, gc *appsv1beta1.GitOpsCluster, wanted map[string]bool) (removalResult, error) {
	removal, err := r.removeAddons(ctx, gc, wanted, true)
	if err != nil {
		return removalResult{}, err
	}
	res := removalResult{draining: removal.draining}
	stuckAddons, recheckAfter := overdue(removal.terminating)
	if len(stuckAddons) > 0 {
		res.stuck = append(res.stuck, fmt.Sprintf("Removing the addon has taken more than %v on %s. OCM removes a ManagedClusterAddOn's finalizers once the "+
			"cluster's klusterlet "+
			"has uninstalled the addon; a cluster that is offline keeps its own until it returns or is detached from the hub.", StuckAfter, WaitingAddOns(stuckAddons)))
	}
	res.recheckAfter = recheckAfter
	if len(res.draining) > 0 && (res.recheckAfter == 0 || drainRecheck < res.recheckAfter) {
		res.recheckAfter = drainRecheck
	}
	return res, nil
}

// addonRemoval is what one pass of removeAddons left under way.
type addonRemoval struct {
	// terminating were already being deleted (finalized by OCM) when the pass began.
	terminating []addonv1beta1.ManagedClusterAddOn
	// deleted were deleted by this pass.
	deleted []addonv1beta1.ManagedClusterAddOn
	// draining is, for each removal held for departing Applications, what it waits for.
	draining []string
}

// removeAddons is the one loop that lets go of a GitOpsCluster's ManagedClusterAddOns on
// the clusters not in wanted (all of them when its GitOpsCluster is deleted): each goes to
// the next GitOpsCluster that selects its cluster too, or, with holdForDepartures, waits
// for the Applications leaving its cluster (holdRemoval), or is deleted. Those of users
// or other GitOpsClusters are never listed.
func (r *Reconciler) removeAddons(ctx context.Context, gc *appsv1beta1.GitOpsCluster, wanted map[string]bool, holdForDepartures bool) (addonRemoval, error) {
	var res addonRemoval
	addons := &addonv1beta1.ManagedClusterAddOnList{}
	if err := r.Client.List(ctx, addons, ownership.Selector(gc)); err != nil {
		return res, fmt.Errorf("listing ManagedClusterAddOns of %s/%s: %w", gc.Namespace, gc.Name, err)
	}
	claimants := r.claimants(gc)
	for i := range addons.Items {
		addon := &addons.Items[i]
		if wanted[addon.Namespace] {
			r.drains.forget(string(gc.UID) + "/" + addon.Namespace) // back before its removal
			continue
		}
		if !addon.DeletionTimestamp.IsZero() {
			res.terminating = append(res.terminating, *addon)
			continue
		}
		if handed, err := r.handOverUnlessHub(ctx, claimants, addon); err != nil || handed {
			if err != nil {
				return res, err
			}
			continue
		}
		if holdForDepartures {
			message, hold, err := r.holdRemoval(ctx, gc, addon.Namespace)
			if err != nil {
				return res, err
			}
			if hold {
				res.draining = append(res.draining, message)
				continue
			}
		}
		if err := r.owned().DeleteExact(ctx, addon); err != nil {
			return res, err
		}
		r.event(gc, corev1.EventTypeNormal, appsv1beta1.ReasonAddOnRemoved, "Removed ManagedClusterAddOn %s from cluster %s", addon.Name, addon.Namespace)
		res.deleted = append(res.deleted, *addon)
	}
	return res, nil
}

// handOverUnlessHub hands a ManagedClusterAddOn being let go to the next GitOpsCluster
// that wants the addon on its cluster, unless that cluster is the hub itself: no
// GitOpsCluster wants one there, and handing it over would only delay its removal.
func (r *Reconciler) handOverUnlessHub(ctx context.Context, claimants *claimants, addon *addonv1beta1.ManagedClusterAddOn) (bool, error) {
	hub, err := r.Hub.OfCluster(ctx, r.Client, addon.Namespace)
	if err != nil || hub.IsHub() {
		return false, err
	}
	return claimants.handOverIfClaimed(ctx, addon, addon.Namespace, wantsAddon)
}

// overdue splits terminating ManagedClusterAddOns into those deleted longer than
// StuckAfter ago and, for the others, the time until the first of them will be.
func overdue(terminating []addonv1beta1.ManagedClusterAddOn) ([]addonv1beta1.ManagedClusterAddOn, time.Duration) {
	var out []addonv1beta1.ManagedClusterAddOn
	var next time.Duration
	for _, a := range terminating {
		waited := time.Since(a.DeletionTimestamp.Time)
		if waited >= StuckAfter {
			out = append(out, a)
			continue
		}
		if left := StuckAfter - waited; next == 0 || left < next {
			next = left
		}
	}
	return out, next
}
