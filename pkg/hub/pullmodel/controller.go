// Package pullmodel propagates hub Argo CD Applications to managed clusters through OCM
// ManifestWorks (the "pull model"): each hub Application is validated (its cluster, the
// Placements of its namespace, its AppProject, the Argo CD there), shipped in a
// ManifestWork with its AppProject and repository credentials, and given back what its
// spoke reports (decoded by pullmodel/feedback), with its one-shot requests, the apply
// timeout and the latency metrics. It also says which pull Applications are leaving a
// cluster. It owns the pull model's cache and, once Argo CD's CRDs exist, starts this
// controller and the report controller (pullmodel/reports). Red Hat ACM's ManifestWorks
// are taken over through pullmodel/acmtakeover; the names every part shares are in
// pullmodel/pullnames.
package pullmodel

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/bounded"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/acmtakeover"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/treecache"
)

// ControllerName names the propagation controller in logs, metrics and Events.
const ControllerName = "pullmodel"

// FieldManager is the field manager of our writes to hub Applications.
const FieldManager = "gitops-addon-pull"

// Reconciler propagates one hub Application at a time: its ManifestWork, and the status
// the spoke reports back onto it.
type Reconciler struct {
	// Client reads ManagedClusters, PlacementDecisions and ManagedClusterAddOns from the
	// manager's cache, and writes.
	Client client.Client
	// Cache holds the pull model's kinds: Applications, AppProjects, pull ManifestWorks.
	Cache cache.Cache
	// Recorder emits Events on hub Applications.
	Recorder events.EventRecorder
	// Now is the clock of condition transition times (tests set it).
	Now func() metav1.Time
	// ApplyTimeout is how long a ManifestWork may stay unapplied before the Application
	// gets a warning naming its cluster's state.
	ApplyTimeout time.Duration
	// HubOnly: no spoke agent of ours summarises the Applications' resources.
	HubOnly bool
	// Hub is the hub's own cluster ID, by which an Application aimed at the hub itself is
	// known (and refused).
	Hub localcluster.Hub

	// acm retires Red Hat ACM's pull ManifestWorks of the Applications (nil: none).
	acm *acmtakeover.Works
	// creates are this controller's creates whose watch echo wakes no reconcile.
	creates ownCreates
	// latency measures the changes in flight for the pull latency metrics (nil: none).
	latency *latencies
	// Trees writes the pulled Applications' resource trees where the hub's argocd-server
	// reads them (nil: the hub's Argo CD redis was not given; no trees).
	Trees *treecache.Writer
}

// Reconcile brings the ManifestWork of one hub Application, and the Application's status,
// to what the Application and the spoke's report ask for.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := newApplication()
	if err := r.Cache.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.gone(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("reading Application %s: %w", req.NamespacedName, err)
	}
	works, err := r.worksOf(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	for i := range works {
		r.creates.forget(client.ObjectKeyFromObject(&works[i]))
	}
	if !app.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.deleting(ctx, app, works)
	}
	v, err := r.verdict(ctx, app, works)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !v.ship {
		return ctrl.Result{}, r.withdraw(ctx, app, works, v)
	}
	return r.deliver(ctx, app, works, v)
}

// gone handles an Application deleted, with or without a finalizer: its ManifestWorks go,
// and Red Hat ACM's with their spoke Application.
func (r *Reconciler) gone(ctx context.Context, app types.NamespacedName) error {
	works, err := r.worksOf(ctx, app)
	if err != nil {
		return err
	}
	if err := r.acm.RetireOfGone(ctx, app); err != nil {
		return err
	}
	r.forgetTree(ctx, app)
	return r.deleteWorks(ctx, works)
}

// deleting handles an Application being deleted: Red Hat ACM's ManifestWorks go, and ours
// before the Application's finalizers are released.
func (r *Reconciler) deleting(ctx context.Context, app *unstructured.Unstructured, works []workv1.ManifestWork) error {
	if err := r.acm.RetireAll(ctx, app); err != nil {
		return err
	}
	r.forgetTree(ctx, client.ObjectKeyFromObject(app))
	return r.finalize(ctx, app, works)
}

// verdict decides whether and where the Application may be delivered: validation, then
// the Argo CD on its cluster.
func (r *Reconciler) verdict(ctx context.Context, app *unstructured.Unstructured, works []workv1.ManifestWork) (verdict, error) {
	v, err := validate(ctx, app, r)
	if err != nil || !v.ship {
		return v, err
	}
	held, err := r.existingArgoCDProblem(ctx, v.cluster, workIn(works, v.cluster) == nil)
	if err != nil {
		return v, err
	}
	if held != nil {
		v.ship, v.errors = false, append(v.errors, *held)
	}
	return v, nil
}

// withdraw handles an Application delivered nowhere: not pulled, or refused. Its
// ManifestWorks and Red Hat ACM's go, and the Application says why.
func (r *Reconciler) withdraw(ctx context.Context, app *unstructured.Unstructured, works []workv1.ManifestWork, v verdict) error {
	key := client.ObjectKeyFromObject(app)
	r.latency.forget(key)
	if err := r.deleteWorks(ctx, works); err != nil {
		return err
	}
	if err := r.acm.RetireAll(ctx, app); err != nil {
		return err
	}
	r.forgetTree(ctx, key)
	return r.writeHubApplication(ctx, app, v, undelivered)
}

// deliver ships the Application to its cluster, hands Red Hat ACM's ManifestWorks over to
// ours, and writes back onto the Application what the spoke reports, with what is wrong.
func (r *Reconciler) deliver(ctx context.Context, app *unstructured.Unstructured, works []workv1.ManifestWork, v verdict) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(app)
	// A changed cluster annotation moves the Application: the old cluster's work goes.
	if err := r.deleteWorks(ctx, elsewhere(works, v.cluster)); err != nil {
		return ctrl.Result{}, err
	}
	existing := workIn(works, v.cluster)
	spoke := feedback.Of(existing, spokeNamespace(app), app.GetName())
	done := taken(app, existing, spoke)
	created, err := r.ship(ctx, app, v, existing, spoke, done)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.acm.HandOver(ctx, app, v.cluster, existing); err != nil {
		return ctrl.Result{}, err
	}
	if failure := spoke.ApplyFailure(); failure != "" {
		v.errors = append(v.errors, r.applyFailureProblem(ctx, v.cluster, existing, failure))
	}
	explainer := feedback.Explainer{Reader: r.Client, HubOnly: r.HubOnly, ApplyTimeout: r.ApplyTimeout}
	warnings, requeue, err := explainer.Warnings(ctx, r.now().Time, existing, spoke)
	if err != nil {
		return ctrl.Result{}, err
	}
	if created {
		// The create's echo wakes no reconcile (ownCreates): the check of the apply
		// timeout is scheduled here.
		requeue = r.ApplyTimeout
	}
	tree := spoke.Tree()
	v.warnings = append(v.warnings, warnings...)
	if r.Trees != nil { // a hub that draws no trees has nothing to say of them
		v.warnings = append(v.warnings, tree.Problems(v.cluster)...)
	}
	if err := r.writeHubApplication(ctx, app, v, delivery{spoke: spoke, taken: done}); err != nil {
		return ctrl.Result{}, err
	}
	if err := writeTree(ctx, r.Trees, key, tree); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the resource tree of Application %s into the hub Argo CD's redis: %w", key, err)
	}
	r.latency.statusOnHub(key, existing, spoke.Values())
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// ship writes the Application's ManifestWork on its cluster, with the one-shot requests
// due (not those the spoke has taken: done) and the repository credentials it uses, and
// says whether it created it.
func (r *Reconciler) ship(ctx context.Context, app *unstructured.Unstructured, v verdict, existing *workv1.ManifestWork,
	spoke feedback.Status, done oneShotTaken) (created bool, err error) {
	plan := planRequests(app, existing, spoke, done)
	plan.cluster, plan.project = v.cluster, v.project
	if plan.credentials, err = r.stagedCredentials(ctx, app); err != nil {
		return false, err
	}
	return r.applyWork(ctx, app, plan, existing)
}

// planRequests decides which one-shot requests (a manual sync, a refresh) go to the spoke
// this time. A request is shipped until the spoke shows it is done with it: a refresh once
// its reconcile time differs from the one recorded when the request was first shipped; an
// operation once the spoke reports that operation, by its request name, finished. Then
// the hub's copy is cleared and, in the same reconcile, the request leaves the
// ManifestWork, so the hub and the spoke never fight over it and it runs once; an
// operation the hub asks for again after that is a new request, with a new name.
func planRequests(app *unstructured.Unstructured, existing *workv1.ManifestWork, spoke feedback.Status, done oneShotTaken) workPlan {
	p := workPlan{hub: app, baselines: map[string]string{}}
	if _, ok, _ := unstructured.NestedMap(app.Object, "operation"); ok && !done.operation {
		p.request.operation = true
		p.request.operationName = operationRequest(existing, app)
		p.baselines[pullnames.AnnotationOperationRequest] = p.request.operationName
	}
	if _, ok := app.GetAnnotations()[pullnames.AnnotationRefresh]; ok {
		p.request.refresh = true
		p.baselines[pullnames.AnnotationRefreshBaseline] = baseline(existing, pullnames.AnnotationRefreshBaseline, spoke, feedback.KeyReconciledAt)
	}
	return p
}

// operationRequest is the name of the operation the ManifestWork already carries, or, for
// an operation shipped for the first time, the hub Application's resourceVersion: unique
// to this write of the hub Application, so two syncs asked one after the other (the same
// content, as an ApplicationSet's RollingSync asks) are two requests.
func operationRequest(existing *workv1.ManifestWork, app *unstructured.Unstructured) string {
	if existing != nil {
		if name := existing.Annotations[pullnames.AnnotationOperationRequest]; name != "" {
			return name
		}
	}
	return app.GetResourceVersion()
}

// baseline is the recorded baseline of a request already shipped, or what the spoke
// reports now for a request shipped for the first time.
func baseline(existing *workv1.ManifestWork, annotation string, spoke feedback.Status, key string) string {
	if existing != nil {
		if b, ok := existing.Annotations[annotation]; ok {
			return b
		}
	}
	v, _ := spoke.Get(key)
	return v
}

// oneShotTaken says which shipped requests the spoke has taken.
type oneShotTaken struct{ operation, refresh bool }

// taken says which shipped requests the spoke has taken; none before the ManifestWork exists.
func taken(app *unstructured.Unstructured, existing *workv1.ManifestWork, spoke feedback.Status) oneShotTaken {
	t := oneShotTaken{}
	if existing == nil {
		return t
	}
	if _, ok, _ := unstructured.NestedMap(app.Object, "operation"); ok {
		t.operation = operationTaken(existing, spoke) && operationFinished(spoke)
	}
	if _, ok := app.GetAnnotations()[pullnames.AnnotationRefresh]; ok {
		t.refresh = changedSince(existing, pullnames.AnnotationRefreshBaseline, spoke, feedback.KeyReconciledAt)
	}
	return t
}

// operationTaken says whether the spoke's last operation is the one the ManifestWork
// carries: the spoke reports its request name. A work an older release wrote names none;
// its operation is taken once the spoke's start time differs from the recorded baseline.
func operationTaken(existing *workv1.ManifestWork, spoke feedback.Status) bool {
	name, named := existing.Annotations[pullnames.AnnotationOperationRequest]
	if !named {
		return changedSince(existing, pullnames.AnnotationOperationBaseline, spoke, feedback.KeyOperationStartedAt)
	}
	reported, ok := spoke.Get(feedback.KeyOperationRequest)
	return ok && name != "" && reported == name
}

// operationFinished says whether the spoke reports its operation in one of Argo CD's
// completed phases. Until then the operation must stay on the spoke Application: Argo CD
// goes on with a running operation (the next sync wave, a namespace it created becoming
// healthy, a retry) only while .operation is there, and the work agent's server-side apply
// would remove it with the ManifestWork's copy, leaving the sync Running for ever. Argo CD
// removes it itself when the operation ends.
func operationFinished(spoke feedback.Status) bool {
	phase, _ := spoke.Get(feedback.KeyOperationPhase)
	switch phase {
	case "Succeeded", "Failed", "Error":
		return true
	}
	return false
}

func changedSince(existing *workv1.ManifestWork, annotation string, spoke feedback.Status, key string) bool {
	b, shipped := existing.Annotations[annotation]
	now, reported := spoke.Get(key)
	return shipped && reported && now != b
}

// applyWork creates or updates the ManifestWork when it differs from the desired one, and
// says whether it created it.
func (r *Reconciler) applyWork(ctx context.Context, app *unstructured.Unstructured, plan workPlan, existing *workv1.ManifestWork) (created bool, err error) {
	desired, clearedDestName, err := desiredWork(plan)
	if err != nil {
		return false, err
	}
	key := client.ObjectKeyFromObject(desired)
	appKey := client.ObjectKeyFromObject(app)
	seen := r.latency.seenAt(appKey)
	switch {
	case existing == nil:
		stampShipped(desired, r.now().Time)
		stampChangeSeen(desired, nil, seen, r.now().Time)
		if err := r.Client.Create(ctx, desired); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, fmt.Errorf("ManifestWork %s exists but is not in the cache yet: %w", key, err)
			}
			return false, fmt.Errorf("creating ManifestWork %s: %w", key, err)
		}
		r.creates.created(desired)
		created = true
	case !existing.GetDeletionTimestamp().IsZero():
		return false, fmt.Errorf("ManifestWork %s is being deleted; it is created again once it is gone", key)
	case workDiffers(existing, desired):
		updated := existing.DeepCopy()
		mergeInto(updated, desired)
		stampShipped(updated, r.now().Time)
		stampChangeSeen(updated, existing, seen, r.now().Time)
		if err := r.Client.Update(ctx, updated); err != nil {
			return false, fmt.Errorf("updating ManifestWork %s: %w", key, err)
		}
	default:
		r.latency.shipped(appKey, seen) // the work carries it already
		return false, nil
	}
	r.latency.shipped(appKey, seen)
	r.latency.wrote(appKey, existing)
	if clearedDestName != "" {
		r.event(app, corev1.EventTypeNormal, v1alpha1.ReasonDestinationNameCleared,
			"destination.name %q is replaced on cluster %s by server %s, the cluster the Application runs on",
			clearedDestName, plan.cluster, InClusterServer)
	}
	return created, nil
}

// applyFailureProblem explains why the spoke could not apply the Application, with the
// fix: most often the gitops addon is not enabled on that cluster, so there is no Argo CD
// (and no Application CRD) there.
func (r *Reconciler) applyFailureProblem(ctx context.Context, cluster string, w *workv1.ManifestWork, failure string) pullnames.Problem {
	where := fmt.Sprintf("ManifestWork %s/%s is not applied on cluster %s (%s)", w.Namespace, w.Name, cluster, failure)
	enabled, err := r.addonEnabled(ctx, cluster)
	switch {
	case err == nil && !enabled:
		return pullnames.Problem{Reason: v1alpha1.ReasonSpokeApplyFailed, Message: where + ": the gitops addon is not enabled on cluster " + cluster +
			", so it has no Argo CD; enable it (GitOpsCluster spec.gitopsAddon.enabled: true, or a ManagedClusterAddOn " +
			"gitops-addon in namespace " + cluster + ")"}
	case !missingApplicationAPI(failure):
		return pullnames.Problem{Reason: v1alpha1.ReasonSpokeApplyFailed, Message: where}
	case err != nil:
		return pullnames.Problem{Reason: v1alpha1.ReasonSpokeApplyFailed, Message: where + ": cluster " + cluster + " has no Argo CD Application API"}
	default:
		return pullnames.Problem{Reason: v1alpha1.ReasonSpokeApplyFailed, Message: where + ": the gitops addon on cluster " + cluster +
			" has not installed Argo CD yet; see `kubectl get managedclusteraddon gitops-addon -n " + cluster + "`"}
	}
}

// missingApplicationAPI says whether the work agent's failure means the cluster does not
// serve Argo CD's Application API (its wording differs between OCM releases).
func missingApplicationAPI(failure string) bool {
	for _, s := range []string{"no matches for kind", "the server could not find the requested resource", "doesn't have a resource type"} {
		if strings.Contains(failure, s) {
			return true
		}
	}
	return false
}

// delivery is what the spoke of a delivered Application reports: its status, and the
// one-shot requests it took.
type delivery struct {
	spoke feedback.Status
	taken oneShotTaken
}

// undelivered is the delivery of an Application no cluster runs: no spoke reports on it,
// and none takes a request.
var undelivered = delivery{}

// writeHubApplication writes, in one patch and only when something changed, the
// spoke's status, the pull model's conditions and the clearing of one-shot requests the
// spoke took. Events name every new problem.
func (r *Reconciler) writeHubApplication(ctx context.Context, app *unstructured.Unstructured, v verdict, d delivery) error {
	updated := app.DeepCopy()
	conditions := pullConditions(app, v.errors, v.warnings, r.now())
	if v.candidate || len(pullConditionsOf(app)) > 0 {
		status := feedback.HubStatus(app, d.spoke, conditions)
		if feedback.HubStatusDiffers(app, status) {
			updated.Object["status"] = status
		}
	}
	if d.taken.operation {
		unstructured.RemoveNestedField(updated.Object, "operation")
	}
	if d.taken.refresh {
		annotations := updated.GetAnnotations()
		delete(annotations, pullnames.AnnotationRefresh)
		updated.SetAnnotations(annotations)
	}
	r.announceProblems(app, v)
	if equality.Semantic.DeepEqual(app.Object, updated.Object) {
		return nil
	}
	patch := client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, updated, patch, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return err // retried with the newer version
		}
		return fmt.Errorf("writing status of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	return nil
}

// announceProblems records an Event for each problem not yet in the Application's
// conditions, so that `kubectl describe` tells the story once, not at every reconcile.
func (r *Reconciler) announceProblems(app *unstructured.Unstructured, v verdict) {
	for _, group := range []struct {
		kind, eventType string
		problems        []pullnames.Problem
	}{{v1alpha1.ConditionPullModelError, corev1.EventTypeWarning, v.errors}, {v1alpha1.ConditionPullModelWarning, corev1.EventTypeWarning, v.warnings}} {
		old := ""
		if c := findAppCondition(app, group.kind); c != nil {
			old, _ = c["message"].(string)
		}
		for _, p := range group.problems {
			if !strings.Contains(old, p.String()) {
				r.event(app, group.eventType, p.Reason, "%s", p.Message)
			}
		}
	}
}

// finalize deletes the ManifestWorks of an Application being deleted and, once they are
// gone (the spoke Application with them, its own finalizers having pruned what they
// prune), releases the Argo CD resource finalizers the hub's skipped Argo CD never will.
func (r *Reconciler) finalize(ctx context.Context, app *unstructured.Unstructured, works []workv1.ManifestWork) error {
	if len(works) > 0 {
		return r.deleteWorks(ctx, works)
	}
	if app.GetAnnotations()[pullnames.AnnotationSkipReconcile] != "true" || !IsPullApplication(app) {
		return nil
	}
	kept := contract.WithoutArgoCDResourcesFinalizers(app.GetFinalizers())
	if len(kept) == len(app.GetFinalizers()) {
		return nil
	}
	updated := app.DeepCopy()
	updated.SetFinalizers(kept)
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager)); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.event(app, corev1.EventTypeNormal, v1alpha1.ReasonFinalizerReleased,
		"the Application's ManifestWork is gone and the spoke Application with it; the Argo CD resources finalizer is released on the hub")
	return nil
}

// deleteWorks deletes pull ManifestWorks of a hub Application (those not being deleted
// already).
func (r *Reconciler) deleteWorks(ctx context.Context, works []workv1.ManifestWork) error {
	for i := range works {
		w := &works[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ManifestWork %s/%s of Application %s/%s: %w", w.Namespace, w.Name,
				w.Annotations[pullnames.AnnotationHubAppNamespace], w.Annotations[pullnames.AnnotationHubAppName], err)
		}
		ctrl.LoggerFrom(ctx).Info("deleted the ManifestWork of a pull Application", "manifestWork", w.Namespace+"/"+w.Name)
	}
	return nil
}

func (r *Reconciler) worksOf(ctx context.Context, app types.NamespacedName) ([]workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	if err := r.Cache.List(ctx, list, client.MatchingFields{indexWorkByHubApp: app.String()}); err != nil {
		return nil, fmt.Errorf("listing the ManifestWorks of Application %s: %w", app, err)
	}
	return list.Items, nil
}

// elsewhere are the ManifestWorks, among an Application's, outside a cluster's namespace.
func elsewhere(works []workv1.ManifestWork, cluster string) []workv1.ManifestWork {
	return slices.DeleteFunc(slices.Clone(works), func(w workv1.ManifestWork) bool { return w.Namespace == cluster })
}

// workIn is the ManifestWork, among an Application's, in a cluster's namespace; nil if none.
func workIn(works []workv1.ManifestWork, cluster string) *workv1.ManifestWork {
	for i := range works {
		if works[i].Namespace == cluster {
			return &works[i]
		}
	}
	return nil
}

func (r *Reconciler) event(app *unstructured.Unstructured, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		note := bounded.EventNote(fmt.Sprintf(format, args...), "the Application's PullModelError condition")
		r.Recorder.Eventf(app, nil, eventType, reason, "Propagate", "%s", note)
	}
}

func (r *Reconciler) now() metav1.Time {
	if r.Now != nil {
		return r.Now()
	}
	return metav1.Now()
}

func newApplication() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(pullnames.ApplicationGVK)
	return u
}
