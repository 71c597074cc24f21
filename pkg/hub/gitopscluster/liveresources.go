package gitopscluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/hub/liveresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// liveResult is what the live resources step found for one GitOpsCluster
// (spec.gitopsAddon.liveResources).
type liveResult struct {
	// requested: liveResources.enabled, with the addon enabled and delivered here.
	requested bool
	// credentials are the cluster Secret's server and config of each cluster that has
	// its token, while cluster-proxy is installed.
	credentials map[string]liveCredentials
	// readers are the spoke ServiceAccounts the clusters' addons bind the read-only role to.
	readers map[string]contract.ServiceAccountRef
	// managerOff: the manager runs without live resources: with --live-resources=false
	// (chart liveResources.enabled), or for managerOffWhy.
	managerOff    bool
	managerOffWhy string
	// notInstalled says which addon of OCM is missing on the hub, nil when both are there.
	notInstalled *liveresources.ErrNotInstalled
	// pending are the clusters without a token yet.
	pending []string
	// problems are sentences for the condition: a ManagedServiceAccount's name held by
	// someone else.
	problems []string
	// tokenProblems are sentences on tokens that are not the ServiceAccount's.
	tokenProblems []string
	// clusters is how many clusters were asked for.
	clusters int
	// skipped are the clusters left out: their own Argo CD is skipped (existingArgoCD Skip),
	// so no pulled Application runs there and the spoke binds no reader.
	skipped []string
}

// liveRecheck is how often a GitOpsCluster looks again while an addon of OCM that live
// resources need is not installed: installing managed-serviceaccount creates nothing
// this controller watches (cluster-proxy's CA Secret, which it does watch, wakes it at once).
const liveRecheck = 2 * time.Minute

// recheckAfter is when to look again for what is not installed yet (only set when live
// resources are asked for); 0: not needed.
func (l liveResult) recheckAfter() time.Duration {
	if l.notInstalled != nil {
		return liveRecheck
	}
	return 0
}

// liveCredentials are what a cluster Secret carries to read its cluster's live resources.
type liveCredentials struct {
	server string
	config []byte
}

// reconcileLiveResources keeps a ManagedServiceAccount in the namespace of each cluster
// of a GitOpsCluster that asks for live resources (clusters: those its addon goes to),
// removes those it no longer wants, and reads each cluster's token and cluster-proxy's
// address for its cluster Secret.
func (r *Reconciler) reconcileLiveResources(ctx context.Context, gc *appsv1beta1.GitOpsCluster, clusters []string) (liveResult, error) {
	res := liveResult{requested: gc.LiveResourcesEnabled() && !r.HubOnly}
	if r.LiveResources == nil {
		res.managerOff, res.managerOffWhy = res.requested, r.LiveResourcesOff
		return res, nil
	}
	wanted := map[string]bool{}
	if res.requested {
		var err error
		if clusters, res.skipped, err = r.withoutSkipped(ctx, clusters); err != nil {
			return res, err
		}
		res.clusters = len(clusters)
		if err := r.ensureManagedServiceAccounts(ctx, gc, clusters, wanted, &res); err != nil {
			return res, err
		}
		// Without managed-serviceaccount there are no tokens to read, nor anything to write them into.
		if res.notInstalled == nil {
			if err := r.readCredentials(ctx, clusters, &res); err != nil {
				return res, err
			}
		}
	}
	return res, r.removeManagedServiceAccounts(ctx, gc, wanted)
}

// withoutSkipped leaves out the clusters whose addon reports an Argo CD gitops-addon did
// not create and whose stack is the agent alone (the choice Skip): nothing of ours runs an
// Application there, the agent chart binds no reader, and a token would only be a
// credential that reads nothing. A cluster whose addon has not reported yet is kept, so a
// new cluster is not held back a round trip; its ManagedServiceAccount goes if the report
// then says Skip.
func (r *Reconciler) withoutSkipped(ctx context.Context, clusters []string) (kept, skipped []string, err error) {
	for _, cluster := range clusters {
		skip, err := r.existingArgoCDSkipped(ctx, cluster)
		if err != nil {
			return nil, nil, err
		}
		if skip {
			skipped = append(skipped, cluster)
		} else {
			kept = append(kept, cluster)
		}
	}
	return kept, skipped, nil
}

// existingArgoCDSkipped decides as the agent chart's render does (addon.StackOf, from the
// addon's report and the choice its annotations carry), so the hub keeps a token exactly
// where the spoke binds its reader.
func (r *Reconciler) existingArgoCDSkipped(ctx context.Context, cluster string) (bool, error) {
	current := &addonv1beta1.ManagedClusterAddOn{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, current)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading ManagedClusterAddOn %s/%s: %w", cluster, contract.AddonName, err)
	}
	return contract.ExistingArgoCDOf(current.Status.Conditions).Found && addon.StackOf(current) == addon.StackAgentOnly, nil
}

// ensureManagedServiceAccounts creates each cluster's ManagedServiceAccount; an API that
// is not served says managed-serviceaccount is not installed.
func (r *Reconciler) ensureManagedServiceAccounts(
	ctx context.Context, gc *appsv1beta1.GitOpsCluster, clusters []string, wanted map[string]bool, res *liveResult,
) error {
	for _, cluster := range clusters {
		current := &metav1.PartialObjectMetadata{}
		current.SetGroupVersionKind(liveresources.ManagedServiceAccountGVK)
		desired := liveresources.DesiredManagedServiceAccount(cluster)
		desired.SetLabels(ownership.Labels(gc))
		desired.SetAnnotations(ownership.Annotations(gc))
		outcome, err := r.owned().Ensure(ctx, gc, desired, current, keepAsCreated)
		switch {
		case meta.IsNoMatchError(err):
			res.notInstalled = &liveresources.ErrNotInstalled{Addon: "managed-serviceaccount", Detail: fmt.Sprintf(
				"OCM's managed-serviceaccount is not installed on the hub: %s is not served", liveresources.ManagedServiceAccountGVK.GroupVersion())}
			return nil
		case err != nil:
			return err
		case outcome.Problem != "":
			res.problems = append(res.problems, outcome.Problem)
		}
		wanted[cluster] = true
	}
	return nil
}

// keepAsCreated leaves a ManagedServiceAccount as it was created: its spec is constant,
// and the cache holds only its metadata (a thousand clusters' objects, of which the
// controller needs to know only that they are there and whose they are).
func keepAsCreated(_, _ client.Object) bool { return false }

// readCredentials reads cluster-proxy's address and each cluster's token.
func (r *Reconciler) readCredentials(ctx context.Context, clusters []string, res *liveResult) error {
	proxy, err := r.LiveResources.Proxy(ctx)
	var missing *liveresources.ErrNotInstalled
	switch {
	case errors.As(err, &missing):
		if res.notInstalled == nil {
			res.notInstalled = missing
		}
	case err != nil:
		return err
	}
	for _, cluster := range clusters {
		token, ok, err := r.LiveResources.TokenOf(ctx, cluster)
		if err != nil {
			if !isTokenProblem(err) {
				return err
			}
			res.pending = append(res.pending, cluster)
			res.tokenProblems = append(res.tokenProblems, sentence(err.Error()))
			continue
		}
		if !ok {
			res.pending = append(res.pending, cluster)
			continue
		}
		res.readers = setKey(res.readers, cluster, token.Reader)
		if res.notInstalled != nil {
			continue
		}
		config, err := proxy.ClusterConfig(token.Token)
		if err != nil {
			return fmt.Errorf("writing the cluster config of %s: %w", cluster, err)
		}
		res.credentials = setKey(res.credentials, cluster, liveCredentials{server: proxy.Server(cluster), config: config})
	}
	return nil
}

// isTokenProblem tells a token that is not the ServiceAccount's (reported, not retried)
// from a failed read.
func isTokenProblem(err error) bool {
	return errors.Is(err, liveresources.ErrForeignToken)
}

// removeManagedServiceAccounts deletes the GitOpsCluster's ManagedServiceAccounts on the
// clusters not in wanted (all of them when wanted is empty): managed-serviceaccount then
// removes the ServiceAccount and its token from the spoke and the hub. Nothing to remove
// where the API is not served.
func (r *Reconciler) removeManagedServiceAccounts(ctx context.Context, gc *appsv1beta1.GitOpsCluster, wanted map[string]bool) error {
	if r.LiveResources == nil {
		return nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(liveresources.ManagedServiceAccountGVK.GroupVersion().WithKind(liveresources.ManagedServiceAccountGVK.Kind + "List"))
	err := r.Client.List(ctx, list, ownership.Selector(gc))
	switch {
	case meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("listing ManagedServiceAccounts of %s/%s: %w", gc.Namespace, gc.Name, err)
	}
	for i := range list.Items {
		msa := &list.Items[i]
		if wanted[msa.GetNamespace()] || msa.GetName() != liveresources.ServiceAccountName || !msa.GetDeletionTimestamp().IsZero() {
			continue
		}
		if err := r.owned().DeleteExact(ctx, msa); err != nil {
			return err
		}
		r.event(gc, corev1.EventTypeNormal, appsv1beta1.ReasonLiveResourcesRemoved,
			"Removed ManagedServiceAccount %s from cluster %s: the hub's Argo CD no longer reads its live resources", msa.GetName(), msa.GetNamespace())
	}
	return nil
}

// liveCondition is the LiveResources condition, present only when live resources are asked for.
func liveCondition(obs observation) metav1.Condition {
	c := metav1.Condition{Type: appsv1beta1.ConditionLiveResources}
	l := obs.live
	switch {
	case !obs.placement.resolved:
		c.Status, c.Reason = metav1.ConditionUnknown, appsv1beta1.ReasonPlacementUnresolved
		c.Message = "Not evaluated yet: the Placement must resolve first."
	case l.managerOff:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonLiveResourcesOffOnManager
		c.Message = managerOffMessage(l.managerOffWhy)
	case l.notInstalled != nil && l.notInstalled.Addon == "managed-serviceaccount":
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonMSANotInstalled
		c.Message = sentence(l.notInstalled.Detail) + " The cluster Secrets stay blank. Fix: install managed-serviceaccount on the hub and enable its addon " +
			"on the clusters, or set spec.gitopsAddon.liveResources.enabled to false."
	case l.notInstalled != nil:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonClusterProxyNotInstalled
		c.Message = sentence(l.notInstalled.Detail) + " The cluster Secrets stay blank. Fix: install cluster-proxy on the hub and enable its addon on the " +
			"clusters, or set spec.gitopsAddon.liveResources.enabled to false."
	case len(l.problems) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonOwnedByOther
		c.Message = joinProblems(l.problems)
	case len(l.pending) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonTokensPending
		c.Message = fmt.Sprintf("%d of %d cluster(s) readable; no token of ManagedServiceAccount %s yet on: %s. Their cluster Secrets stay blank until "+
			"managed-serviceaccount's agent reports it (enable the managed-serviceaccount addon there).",
			len(l.credentials), l.clusters, liveresources.ServiceAccountName, listNames(l.pending))
		if len(l.tokenProblems) > 0 {
			c.Message += " " + joinProblems(l.tokenProblems)
		}
	default:
		c.Status, c.Reason = metav1.ConditionTrue, appsv1beta1.ReasonLiveResourcesReadable
		c.Message = fmt.Sprintf("%d cluster(s) readable by the hub's Argo CD through cluster-proxy, each as ServiceAccount %s, bound to the read-only "+
			"ClusterRole %s.", len(l.credentials), liveresources.ServiceAccountName, contract.LiveResourcesClusterRole)
	}
	if len(l.skipped) > 0 && c.Reason != appsv1beta1.ReasonPlacementUnresolved && !l.managerOff {
		c.Message += fmt.Sprintf(" Not read: %s, whose own Argo CD is skipped (existingArgoCD Skip: no pulled Application runs there).", listNames(l.skipped))
	}
	return c
}

// managerOffMessage says why the manager runs without live resources, why being its own
// finding (empty: the flag), and the fix for that cause.
func managerOffMessage(why string) string {
	cause := "it runs with --live-resources=false (chart value liveResources.enabled: false)"
	fix := "set liveResources.enabled to true in the chart (the default)"
	if why != "" {
		cause = strings.TrimSuffix(why, ".")
		fix = "give the manager's ClusterRole the rules the chart's liveResources.enabled: true renders (helm upgrade), then restart the manager"
	}
	return "The manager runs without live resources: " + cause + ". It creates no ManagedServiceAccount and the cluster Secrets stay blank. " +
		"Fix: " + fix + "; or set spec.gitopsAddon.liveResources.enabled to false."
}

// forLiveResources maps a token or cluster-proxy CA Secret to the GitOpsClusters that
// ask for live resources.
func (r *Reconciler) forLiveResources(ctx context.Context, _ *corev1.Secret) []reconcile.Request {
	return r.requestsFor(ctx, (*appsv1beta1.GitOpsCluster).LiveResourcesEnabled)
}
