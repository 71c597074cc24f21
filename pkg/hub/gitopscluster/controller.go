// Package gitopscluster reconciles GitOpsClusters: it resolves their Placement, registers
// the decided clusters with Argo CD on the hub, and creates a gitops-addon
// ManagedClusterAddOn per cluster when the addon is enabled.
package gitopscluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/bounded"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/hub/liveresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "gitopscluster"

// Reconciler reconciles GitOpsClusters.
type Reconciler struct {
	// Client reads through the manager's cache (label-filtered for the kinds we write)
	// and writes to the apiserver.
	Client client.Client
	// APIReader reads uncached: to name the holder of an object we could not create, and
	// to read back what the apiserver kept of a status write (lastStatus).
	APIReader client.Reader
	// Recorder emits Events on GitOpsClusters.
	Recorder events.EventRecorder

	// Departures finds the Applications leaving a cluster, whose Argo CD must outlive
	// them; nil when the pull model is off.
	Departures Departures
	// DrainTimeout bounds how long an addon's removal waits for them (0: DefaultDrainTimeout).
	DrainTimeout time.Duration
	// ApplicationSetAccess reports the problems of the shared ApplicationSet objects each
	// GitOpsCluster needs, and wakes those whose problems change; nil reports none.
	ApplicationSetAccess ApplicationSetAccess
	// Trust keeps the Argo CD Agent certificates of GitOpsClusters in Argo CD Agent mode; nil: off.
	Trust *argocdagent.Keeper
	// ArgoNamespaces are the only argoNamespaces the manager may work in (its Secrets and
	// ConfigMaps are granted and cached there only); empty allows any.
	ArgoNamespaces []string
	// Routes: the hub serves route.openshift.io/v1, and the principal's Route is
	// discovered (its cache is RouteCacheByObject).
	Routes bool
	// HubOnly: this installation does not deliver the addon (manager --deliver-addon=false):
	// no ManagedClusterAddOn is created, changed or removed, whatever spec.gitopsAddon says.
	// The spokes' GitOps stack comes from elsewhere, e.g. Red Hat ACM's AddOnTemplate addon.
	HubOnly bool
	// Hub is the hub's own cluster ID, by which a decided cluster is known to be the hub
	// itself (pkg/hub/localcluster) and gets nothing shipped.
	Hub localcluster.Hub
	// LiveResources reads cluster-proxy and the ManagedServiceAccounts' tokens for the
	// GitOpsClusters with spec.gitopsAddon.liveResources; nil: their condition says the
	// manager runs without it.
	LiveResources *liveresources.Source
	// LiveResourcesOff says why LiveResources is nil although the manager runs with
	// --live-resources (e.g. its ClusterRole lacks the Secrets it reads); empty: the flag.
	LiveResourcesOff string

	// store writes the objects this controller owns (owned).
	store     *ownership.Store
	storeOnce sync.Once
	// acmSecretsChecked holds the UIDs of the GitOpsClusters whose Argo CD namespace was
	// searched for Red Hat ACM's cluster Secrets since the manager started.
	acmSecretsChecked sync.Map
	// inClusterHolders holds, per GitOpsCluster UID, the Secret someone else wrote that
	// registers Argo CD's in-cluster address ("" for none), as last searched.
	inClusterHolders sync.Map
	// drains are the addon removals held for departing Applications.
	drains drains
	// lastWrites holds, per GitOpsCluster (namespace/name), its last status write
	// (*lastWrite): what a steady state is compared with when the CRD's schema prunes
	// fields the manager writes.
	lastWrites sync.Map
}

// Reconcile brings the hub objects of one GitOpsCluster to the state its spec and its
// Placement's decisions ask for, and reports what it found in the status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gc := &appsv1beta1.GitOpsCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, gc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetLastWrite(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gc.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, gc)
	}
	if controllerutil.AddFinalizer(gc, Finalizer) {
		if err := r.Client.Update(ctx, gc); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to %s/%s: %w", gc.Namespace, gc.Name, err)
		}
	}

	obs, err := r.observe(ctx, gc)
	if err != nil && apierrors.IsConflict(err) {
		return ctrl.Result{}, err // a stale read: retried at once with backoff, nothing to tell
	}
	if statusErr := r.writeStatus(ctx, gc, obs); err == nil {
		err = statusErr
	}
	if err != nil {
		return ctrl.Result{}, err // retried with backoff; the status and an Event say why
	}
	return ctrl.Result{RequeueAfter: earliest(obs.addons.recheckAfter, obs.trust.UntilRenewal(time.Now()), obs.live.recheckAfter())}, nil
}

// refuseArgoNamespace refuses an argoNamespace outside the manager's: its Secrets and
// ConfigMaps are neither granted nor cached there, so every step would fail.
func (r *Reconciler) refuseArgoNamespace(gc *appsv1beta1.GitOpsCluster) *stepFailure {
	ns := gc.ArgoNamespace()
	if len(r.ArgoNamespaces) == 0 || slices.Contains(r.ArgoNamespaces, ns) {
		return nil
	}
	return &stepFailure{
		condition: appsv1beta1.ConditionClustersRegistered,
		reason:    appsv1beta1.ReasonArgoNamespaceNotAllowed,
		err: fmt.Errorf("%s is not one of the namespaces the manager was installed for (%s), the only ones where it may read and "+
			"write Argo CD's Secrets and ConfigMaps; nothing was registered. "+
			"Fix: add %q to the chart value argoNamespaces and run helm upgrade, or set spec.argoServer.argoNamespace to one of them",
			describeArgoNamespace(gc), strings.Join(r.ArgoNamespaces, ", "), ns),
	}
}

// describeArgoNamespace names the Argo CD namespace as the user wrote it: an empty
// spec.argoServer.argoNamespace means the GitOpsCluster's own namespace.
func describeArgoNamespace(gc *appsv1beta1.GitOpsCluster) string {
	if gc.Spec.ArgoServer.ArgoNamespace == "" {
		return fmt.Sprintf("spec.argoServer.argoNamespace is empty, which means the GitOpsCluster's own namespace %q, and that", gc.Namespace)
	}
	return fmt.Sprintf("spec.argoServer.argoNamespace %q", gc.Spec.ArgoServer.ArgoNamespace)
}

// earliest is the shortest of the non-zero durations, 0 when there is none.
func earliest(durations ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range durations {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// observe does the work of one reconcile and records what it found, including the step
// that failed, if one did. While the Placement cannot be resolved nothing is created or
// removed: a typo in placementRef must not unregister a fleet.
func (r *Reconciler) observe(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (observation, error) {
	obs := observation{unsupported: unsupportedFields(gc)}
	obs.addons.enabled = gc.AddonEnabled()
	var err error
	if obs.placement, err = r.resolvePlacement(ctx, gc); err != nil {
		obs.failed = &stepFailure{condition: appsv1beta1.ConditionPlacementResolved, err: err}
		return obs, err
	}
	if !obs.placement.resolved {
		return obs, nil
	}
	if refusal := r.refuseArgoNamespace(gc); refusal != nil {
		// Agent mode's trust is the first step in the argoNamespace.
		obs.trust.Enabled = gc.ArgoCDAgentEnabled()
		if obs.trust.Enabled {
			refusal.condition = appsv1beta1.ConditionArgoCDAgentTrust
		}
		obs.failed = refusal
		return obs, nil
	}
	obs.hubIDProblem = r.Hub.IDProblem
	if obs.hubs, err = r.hubsAmong(ctx, obs.placement.clusters); err != nil {
		obs.failed = &stepFailure{condition: appsv1beta1.ConditionClustersRegistered, err: err}
		return obs, err
	}
	// Agent mode's cluster Secrets carry client certificates signed by its CA: trust first.
	if obs.trust, obs.failed, err = r.readArgoCDAgentTrust(ctx, gc); obs.failed != nil {
		return obs, err
	}
	// The ManagedClusterAddOns before the cluster Secrets: each addon starts the longest
	// chain of the fleet (OCM's addon-manager, addon-framework's registration and deploy,
	// then the ManifestWork), a Secret is done once written. A failure of either is
	// reported; registration's first, as before. The hub itself gets no addon.
	// Live resources before both: the addons bind the read-only role to each cluster's
	// reader, and the cluster Secrets carry its token.
	targets := obs.hubs.targets(obs.placement.clusters)
	if obs.live, err = r.reconcileLiveResources(ctx, gc, targets); err != nil {
		obs.failed = &stepFailure{condition: appsv1beta1.ConditionLiveResources, err: err}
		return obs, err
	}
	var addonErr error
	obs.addons, addonErr = r.reconcileAddons(ctx, gc, targets, obs.trust, obs.live.readers)
	if obs.registration, err = r.registerClusters(ctx, gc, obs.placement.clusters, obs.hubs, obs.trust, obs.live.credentials); err != nil {
		obs.failed = &stepFailure{condition: appsv1beta1.ConditionClustersRegistered, err: err}
		return obs, err
	}
	if addonErr != nil {
		obs.failed = &stepFailure{condition: appsv1beta1.ConditionAddOnsReady, err: addonErr}
	}
	return obs, addonErr
}

// writeStatus writes the status only when it changed, so a steady state makes no writes:
// changed from the status the manager last wrote, while the stored one is what that
// write left (lastStatus), which a CRD of another installer may have pruned.
func (r *Reconciler) writeStatus(ctx context.Context, gc *appsv1beta1.GitOpsCluster, obs observation) error {
	now := metav1.Now()
	last := r.lastStatus(gc)
	updated := computeStatus(gc.Generation, last, obs, now)
	if !statusChanged(last, updated) {
		return nil
	}
	// The Events say what changed in what the manager found: since its last write, whether
	// or not the stored status kept the conditions, or changed by someone else since.
	before := last.Conditions
	if w, ok := r.lastWriteOf(gc); ok {
		before = w.sent.Conditions
	}
	r.emitTransitions(gc, before, updated)
	updated.LastUpdateTime = now
	return r.updateStatus(ctx, gc, updated)
}

// emitTransitions records an Event for each condition that turned False, so that
// `kubectl describe` shows what went wrong and how to fix it, and a Normal one for each
// change of an informational condition that says something: True, or False after True
// (not Unknown, which a failed step's Warning explains already).
func (r *Reconciler) emitTransitions(gc *appsv1beta1.GitOpsCluster, before []metav1.Condition, updated appsv1beta1.GitOpsClusterStatus) {
	for _, c := range updated.Conditions {
		old := findCondition(before, c.Type)
		changed := old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
		switch {
		case !changed || c.Type == appsv1beta1.ConditionReady:
		case informational[c.Type]:
			if c.Status == metav1.ConditionTrue || (c.Status == metav1.ConditionFalse && old != nil && old.Status == metav1.ConditionTrue) {
				r.event(gc, corev1.EventTypeNormal, c.Reason, "%s", c.Message)
			}
		case c.Status == metav1.ConditionFalse:
			r.event(gc, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
		}
	}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// owned is the Store of the objects GitOpsClusters own, made on first use from the
// Reconciler's clients.
func (r *Reconciler) owned() *ownership.Store {
	r.storeOnce.Do(func() {
		r.store = &ownership.Store{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder}
	})
	return r.store
}

func (r *Reconciler) event(gc *appsv1beta1.GitOpsCluster, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(gc, nil, eventType, reason, "Reconcile", "%s", bounded.EventNote(fmt.Sprintf(format, args...), "kubectl describe gitopscluster"))
	}
}

// SetupWithManager registers the controller and its watches. The objects it writes are
// watched through label-filtered caches (see CacheOptions) and mapped back to their owner.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&appsv1beta1.GitOpsCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, finalizerDeletion()))).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.forPlacement)).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.forPlacementDecision)).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.forAll),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, copiedLabelsChanged(), clusterIDChanged()))).
		Watches(&addonv1beta1.ManagedClusterAddOn{}, r.allOnDelete(r.forAddon), builder.WithPredicates(addonChangeMatters())).
		Watches(&corev1.Secret{}, r.allOnDelete(r.forSecret)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.forPrincipalService))
	if r.LiveResources != nil {
		// A token issued or rotated, cluster-proxy's CA created: into the cluster Secrets.
		for _, secrets := range r.LiveResources.Caches {
			b = b.WatchesRawSource(source.Kind(secrets, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(r.forLiveResources)))
		}
	}
	if r.Routes {
		b = b.Watches(&routev1.Route{}, handler.EnqueueRequestsFromMapFunc(r.forPrincipalService))
	}
	if r.ApplicationSetAccess != nil {
		b = b.WatchesRawSource(source.Channel(r.ApplicationSetAccess.Changed(), &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// copiedLabelsChanged passes a ManagedCluster update only when a label the cluster Secret
// carries changed: OCM's addon-health labels and lease renewals wake nothing.
func copiedLabelsChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*clusterv1.ManagedCluster)
		updated, okNew := e.ObjectNew.(*clusterv1.ManagedCluster)
		if !okOld || !okNew {
			return true
		}
		return !maps.Equal(clusterLabels(old), clusterLabels(updated))
	}}
}

// addonChangeMatters passes a ManagedClusterAddOn update only when something a
// GitOpsCluster reads changed: its spec, labels or annotations (ours to keep as
// desired), its deletion, whether it is Available (counted in the status), or what its
// ExistingArgoCD condition says (counted and quoted in the status). OCM's addon
// manager and addon-framework patch each one's status five or six times while it is
// installed (registration, config references, manifests applied, progressing); each
// would otherwise make every GitOpsCluster walk all its clusters again.
func addonChangeMatters() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*addonv1beta1.ManagedClusterAddOn)
		updated, okNew := e.ObjectNew.(*addonv1beta1.ManagedClusterAddOn)
		if !okOld || !okNew {
			return true
		}
		available := func(a *addonv1beta1.ManagedClusterAddOn) bool {
			return meta.IsStatusConditionTrue(a.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)
		}
		certificate := func(a *addonv1beta1.ManagedClusterAddOn) bool {
			return meta.IsStatusConditionTrue(a.Status.Conditions, contract.ConditionArgoCDAgentCertificate)
		}
		connected := func(a *addonv1beta1.ManagedClusterAddOn) bool {
			return meta.IsStatusConditionTrue(a.Status.Conditions, contract.ConditionArgoCDAgentConnected)
		}
		return old.Generation != updated.Generation ||
			!maps.Equal(old.Labels, updated.Labels) || !maps.Equal(old.Annotations, updated.Annotations) ||
			!old.DeletionTimestamp.Equal(updated.DeletionTimestamp) ||
			available(old) != available(updated) || certificate(old) != certificate(updated) ||
			connected(old) != connected(updated) || existingArgoCDView(old) != existingArgoCDView(updated) ||
			stackApplyFailure(old) != stackApplyFailure(updated)
	}}
}

// stackApplyFailure is the message of a ManagedClusterAddOn's StackApplied condition when it
// is False (the work agent could not apply some objects), "" otherwise.
func stackApplyFailure(a *addonv1beta1.ManagedClusterAddOn) string {
	c := meta.FindStatusCondition(a.Status.Conditions, contract.ConditionStackApplied)
	if c == nil || c.Status != metav1.ConditionFalse {
		return ""
	}
	return c.Message
}

// finalizerDeletion lets the update that marks a GitOpsCluster for deletion through, so
// that teardown never depends on whether the apiserver bumped the generation for it.
func finalizerDeletion() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

func (r *Reconciler) forPlacement(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.referencing(ctx, obj.GetNamespace(), obj.GetName())
}

func (r *Reconciler) forPlacementDecision(ctx context.Context, obj client.Object) []reconcile.Request {
	placement := obj.GetLabels()[clusterv1beta1.PlacementLabel]
	if placement == "" {
		return nil
	}
	return r.referencing(ctx, obj.GetNamespace(), placement)
}

// referencing lists the GitOpsClusters of a namespace that use a Placement.
func (r *Reconciler) referencing(ctx context.Context, namespace, placement string) []reconcile.Request {
	list := &appsv1beta1.GitOpsClusterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing GitOpsClusters", "namespace", namespace)
		return nil
	}
	var reqs []reconcile.Request
	for _, gc := range list.Items {
		if gc.Spec.PlacementRef != nil && gc.Spec.PlacementRef.Name == placement {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gc)})
		}
	}
	return reqs
}

// allOnDelete maps create and update events with mapFn, and a deletion to every
// GitOpsCluster: the name it frees may be wanted by another GitOpsCluster that was told
// of a conflict, which can now take the cluster over.
func (r *Reconciler) allOnDelete(mapFn handler.MapFunc) handler.EventHandler {
	byMap := handler.EnqueueRequestsFromMapFunc(mapFn)
	all := handler.EnqueueRequestsFromMapFunc(r.forAll)
	return handler.Funcs{
		CreateFunc:  byMap.Create,
		UpdateFunc:  byMap.Update,
		GenericFunc: byMap.Generic,
		DeleteFunc:  all.Delete,
	}
}

// forAddon maps a ManagedClusterAddOn to the GitOpsCluster that created it, or, for one
// created by a user, to every GitOpsCluster (they count it as enabled).
func (r *Reconciler) forAddon(ctx context.Context, obj client.Object) []reconcile.Request {
	if reqs := r.forOwner(ctx, obj); len(reqs) > 0 {
		return reqs
	}
	return r.forAll(ctx, obj)
}

func (r *Reconciler) forOwner(_ context.Context, obj client.Object) []reconcile.Request {
	owner, ok := ownership.KeyOf(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: owner}}
}

func (r *Reconciler) forAll(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.requestsFor(ctx, func(*appsv1beta1.GitOpsCluster) bool { return true })
}

// requestsFor lists the GitOpsClusters (cached) and requests a reconcile of those keep
// accepts.
func (r *Reconciler) requestsFor(ctx context.Context, keep func(*appsv1beta1.GitOpsCluster) bool) []reconcile.Request {
	list := &appsv1beta1.GitOpsClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing GitOpsClusters")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if keep(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
