package pullmodel

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/acmtakeover"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/clusterwake"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// ReportControllerName names the report controller in logs and metrics.
const ReportControllerName = "appsetreport"

// ReportReconciler keeps one MulticlusterApplicationSetReport per ApplicationSet that has
// pull Applications, built from their ManifestWorks' feedback alone.
type ReportReconciler struct {
	Client client.Client
	// Cache holds the pull ManifestWorks and our reports.
	Cache cache.Cache
	// APIReader reads uncached: a report of the ApplicationSet's name that is not ours
	// (Red Hat ACM's), which the cache does not hold.
	APIReader client.Reader
	// ApplyTimeout is how long a ManifestWork may stay unapplied before its entry says so.
	ApplyTimeout time.Duration
	// HubOnly: no spoke agent of ours summarises the Applications' resources.
	HubOnly bool
	// Now is the clock (tests set it).
	Now func() time.Time

	// schemaDropsResources is set once the served report schema is seen to prune each
	// cluster's resources (Red Hat ACM's CRD serving the reports, left alone by the
	// manager): they are left out from then on, so that an unchanged report is not
	// written again and again for fields the apiserver throws away.
	schemaDropsResources atomic.Bool
}

// Reconcile rebuilds the report of one ApplicationSet (the request's namespace/name).
func (r *ReportReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	works := &workv1.ManifestWorkList{}
	if err := r.Cache.List(ctx, works, client.MatchingFields{indexWorkByAppSet: req.String()}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the ManifestWorks of ApplicationSet %s: %w", req, err)
	}
	live := slices.DeleteFunc(slices.Clone(works.Items), func(w workv1.ManifestWork) bool { return !w.DeletionTimestamp.IsZero() })
	existing := &v1alpha1.MulticlusterApplicationSetReport{}
	err := r.Cache.Get(ctx, req.NamespacedName, existing)
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading report %s: %w", req, err)
	}
	if len(live) == 0 {
		if len(works.Items) > 0 {
			// Every ManifestWork is being deleted (the ApplicationSet going, most often,
			// and the garbage collector taking the report with it): wait until they are gone.
			return ctrl.Result{}, nil
		}
		// No pull Application left: the report goes (its ApplicationSet may live on, with
		// Applications no cluster pulls). Only our own report is ever deleted.
		if existing != nil {
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}))
		}
		return ctrl.Result{}, nil
	}
	desired, requeue, err := r.buildReport(ctx, req.NamespacedName, live)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.schemaDropsResources.Load() {
		withoutClusterResources(desired)
	}
	return ctrl.Result{RequeueAfter: requeue}, r.write(ctx, existing, desired)
}

// noticePruning records that the apiserver dropped the clusters' resources of a report
// it stored (its schema lacks them).
func (r *ReportReconciler) noticePruning(ctx context.Context, sent, stored *v1alpha1.MulticlusterApplicationSetReport) {
	if hasClusterResources(sent) && !hasClusterResources(stored) && !r.schemaDropsResources.Swap(true) {
		ctrl.LoggerFrom(ctx).Info("the MulticlusterApplicationSetReport CRD this hub serves (not gitops-addon's: Red Hat ACM's?) has no " +
			"statuses.clusterConditions[].resources; reports carry the clusters' resource errors as conditions only")
	}
}

func hasClusterResources(r *v1alpha1.MulticlusterApplicationSetReport) bool {
	for _, c := range r.Statuses.ClusterConditions {
		if len(c.Resources) > 0 || c.ResourceCount != nil {
			return true
		}
	}
	return false
}

func withoutClusterResources(r *v1alpha1.MulticlusterApplicationSetReport) {
	for i := range r.Statuses.ClusterConditions {
		r.Statuses.ClusterConditions[i].Resources = nil
		r.Statuses.ClusterConditions[i].ResourceCount = nil
	}
}

// takeOver makes ours the report Red Hat ACM's pull controller wrote under the
// ApplicationSet's name, and notices whether the schema it is served with keeps the
// clusters' resources.
func (r *ReportReconciler) takeOver(ctx context.Context, desired *v1alpha1.MulticlusterApplicationSetReport) error {
	stored, err := acmtakeover.Report(ctx, r.Client, r.APIReader, desired)
	if stored != nil {
		r.noticePruning(ctx, desired, stored)
	}
	return err
}

// write creates the report, or updates it when it differs from the desired one.
func (r *ReportReconciler) write(ctx context.Context, existing, desired *v1alpha1.MulticlusterApplicationSetReport) error {
	key := client.ObjectKeyFromObject(desired)
	if existing == nil {
		sent := desired.DeepCopy()
		err := r.Client.Create(ctx, desired)
		if apierrors.IsAlreadyExists(err) && r.APIReader != nil {
			return r.takeOver(ctx, sent)
		}
		if err != nil {
			return fmt.Errorf("creating report %s: %w", key, err)
		}
		r.noticePruning(ctx, sent, desired)
		return nil
	}
	if equality.Semantic.DeepEqual(existing.Statuses, desired.Statuses) &&
		equality.Semantic.DeepEqual(existing.OwnerReferences, desired.OwnerReferences) &&
		existing.Labels[pullnames.LabelHostingAppSetReport] == desired.Labels[pullnames.LabelHostingAppSetReport] {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Statuses = desired.Statuses
	updated.OwnerReferences = desired.OwnerReferences
	updated.Labels[pullnames.LabelHostingAppSetReport] = desired.Labels[pullnames.LabelHostingAppSetReport]
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating report %s: %w", key, err)
	}
	r.noticePruning(ctx, desired, updated)
	return nil
}

// Bounds of a report's resource lists, so that an ApplicationSet over a thousand
// clusters keeps its report far below etcd's request limit.
const (
	maxReportResources      = 2000
	maxReportResourceRefs   = 500
	maxReportConditionChars = 1024
)

// buildReport aggregates the ManifestWorks of one ApplicationSet's pull Applications. It
// also returns when to look again: the earliest moment an unapplied work becomes overdue.
func (r *ReportReconciler) buildReport(ctx context.Context, appSet types.NamespacedName, works []workv1.ManifestWork) (
	*v1alpha1.MulticlusterApplicationSetReport, time.Duration, error) {
	report := &v1alpha1.MulticlusterApplicationSetReport{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MulticlusterApplicationSetReport"},
		ObjectMeta: metav1.ObjectMeta{
			Name: appSet.Name, Namespace: appSet.Namespace,
			Labels: map[string]string{
				pullnames.LabelHostingAppSetReport: pullnames.ReportLabelValue(appSet.Namespace, appSet.Name),
				contract.LabelManagedBy:            contract.ManagedByValue,
			},
		},
	}
	entries := make([]reportEntry, 0, len(works))
	var uid types.UID
	var requeue time.Duration
	for i := range works {
		w := &works[i]
		e, wait, err := r.entry(ctx, w)
		if err != nil {
			return nil, 0, err
		}
		entries = append(entries, e)
		if wait > 0 && (requeue == 0 || wait < requeue) {
			requeue = wait
		}
		if u := w.Annotations[pullnames.AnnotationHostingAppSetUID]; u != "" {
			uid = types.UID(u)
		}
	}
	slices.SortFunc(entries, func(a, b reportEntry) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.App, b.App))
	})
	report.Statuses.ClusterConditions = listResources(entries)
	report.Statuses.Resources = resourceRefs(entries)
	report.Statuses.Summary = summarize(report.Statuses.ClusterConditions)
	if uid != "" {
		// Owned by the ApplicationSet, so that the garbage collector removes the report with it.
		report.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: pullnames.ApplicationSetGVK.GroupVersion().String(), Kind: pullnames.ApplicationSetGVK.Kind,
			Name: appSet.Name, UID: uid,
		}}
	}
	return report, requeue, nil
}

// reportEntry is one Application's entry and the resources its cluster reported.
type reportEntry struct {
	v1alpha1.ClusterCondition
	resources []appresources.Resource
}

// entry is one Application's entry: what its cluster reported, and the problems: not
// applied (in time), a failed sync, failed resources, resources not reported.
func (r *ReportReconciler) entry(ctx context.Context, w *workv1.ManifestWork) (reportEntry, time.Duration, error) {
	appName := w.Annotations[pullnames.AnnotationHubAppName]
	s := feedback.Of(w, feedback.WorkAppNamespace(w), appName)
	e := reportEntry{ClusterCondition: clusterCondition(w, s)}
	if summary, ok, _ := s.Resources(); ok {
		e.resources = summary.Resources
		e.ResourceCount = ptr.To(int32(min(summary.Total, math.MaxInt32))) //nolint:gosec // bounded on the line
		if msg := feedback.FailedResourcesMessage(summary); msg != "" {
			e.Conditions = append(e.Conditions, v1alpha1.Condition{Type: "ResourceError", Message: truncateMessage(msg)})
		}
	}
	warnings, wait, err := r.explainer().Warnings(ctx, r.now(), w, s)
	if err != nil {
		return reportEntry{}, 0, err
	}
	for _, p := range warnings {
		if p.Reason == feedback.ReasonResourcesCapped {
			continue // resourceCount says it
		}
		e.Conditions = append(e.Conditions, v1alpha1.Condition{Type: warningType(p.Reason), Message: truncateMessage(p.String())})
	}
	return e, wait, nil
}

// warningType is the report condition type of a warning, ending in Warning as ACM's do.
func warningType(reason string) string {
	if reason == feedback.ReasonNotApplied {
		return "ApplyWarning"
	}
	return "ResourcesWarning"
}

func truncateMessage(s string) string {
	if len(s) <= maxReportConditionChars {
		return s
	}
	return s[:maxReportConditionChars-3] + "..."
}

// listResources sets each entry's resource list, giving each cluster an equal share of
// maxReportResources (the summaries list the failed and unhealthy first).
func listResources(entries []reportEntry) []v1alpha1.ClusterCondition {
	out := make([]v1alpha1.ClusterCondition, len(entries))
	share := maxReportResources
	if len(entries) > 0 {
		share = maxReportResources / len(entries)
	}
	for i, e := range entries {
		c := e.ClusterCondition
		for _, res := range e.resources[:min(len(e.resources), share)] {
			c.Resources = append(c.Resources, v1alpha1.ClusterResource{
				APIVersion: res.APIVersion(), Kind: res.Kind, Namespace: res.Namespace, Name: res.Name,
				SyncStatus: res.Status, HealthStatus: res.Health, SyncResult: res.SyncResult, Message: res.Message(),
			})
		}
		out[i] = c
	}
	return out
}

// resourceRefs are the resources of every entry, each once, sorted, at most
// maxReportResourceRefs: ACM's statuses.resources.
func resourceRefs(entries []reportEntry) []v1alpha1.ResourceRef {
	seen := map[v1alpha1.ResourceRef]bool{}
	for _, e := range entries {
		for _, res := range e.resources {
			seen[v1alpha1.ResourceRef{APIVersion: res.APIVersion(), Kind: res.Kind, Namespace: res.Namespace, Name: res.Name}] = true
		}
	}
	refs := slices.SortedFunc(maps.Keys(seen), func(a, b v1alpha1.ResourceRef) int {
		return cmp.Or(cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return refs[:min(len(refs), maxReportResourceRefs)]
}

// explainer explains what the spokes report with the hub's cluster facts, as the
// propagation controller does on the hub Application.
func (r *ReportReconciler) explainer() feedback.Explainer {
	return feedback.Explainer{Reader: r.Client, HubOnly: r.HubOnly, ApplyTimeout: r.ApplyTimeout}
}

func (r *ReportReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// clusterCondition is one Application's entry from what its cluster reported: status,
// and the problems: not applied, or a failed sync.
func clusterCondition(w *workv1.ManifestWork, s feedback.Status) v1alpha1.ClusterCondition {
	appName := w.Annotations[pullnames.AnnotationHubAppName]
	c := v1alpha1.ClusterCondition{
		Cluster: w.Namespace,
		App:     strings.Join([]string{w.Annotations[pullnames.AnnotationHubAppNamespace], appName, w.Namespace, w.Name}, "/"),
	}
	c.HealthStatus, _ = s.Get(feedback.KeyHealth)
	c.SyncStatus, _ = s.Get(feedback.KeySync)
	c.SyncRevision, _ = s.Get(feedback.KeyRevision)
	c.OperationStatePhase, _ = s.Get(feedback.KeyOperationPhase)
	c.OperationStateStartedAt, _ = s.Get(feedback.KeyOperationStartedAt)
	if s.ApplyFailure() != "" {
		c.Conditions = append(c.Conditions, v1alpha1.Condition{Type: "ApplyError", Message: s.ApplyFailure()})
	}
	if c.OperationStatePhase == "Failed" || c.OperationStatePhase == "Error" {
		msg, _ := s.Get(feedback.KeyOperationMessage)
		c.Conditions = append(c.Conditions, v1alpha1.Condition{Type: "SyncError", Message: msg})
	}
	for _, sc := range s.Conditions() {
		// Argo CD's error conditions end in "Error"; its warnings are no problem of the report.
		entry := v1alpha1.Condition{Type: sc.Type, Message: sc.Message}
		if strings.HasSuffix(sc.Type, "Error") && !slices.Contains(c.Conditions, entry) {
			c.Conditions = append(c.Conditions, entry)
		}
	}
	return c
}

// summarize counts as ACM does: Healthy is healthy, anything else not healthy, and
// Progressing is also in progress; Synced is synced, anything else not synced.
func summarize(entries []v1alpha1.ClusterCondition) v1alpha1.ReportSummary {
	var synced, healthy, progressing int
	clusters := map[string]bool{}
	for _, e := range entries {
		clusters[e.Cluster] = true
		if e.SyncStatus == "Synced" {
			synced++
		}
		switch e.HealthStatus {
		case "Healthy":
			healthy++
		case "Progressing":
			progressing++
		}
	}
	n := len(entries)
	return v1alpha1.ReportSummary{
		Clusters:   strconv.Itoa(len(clusters)),
		Synced:     strconv.Itoa(synced),
		NotSynced:  strconv.Itoa(n - synced),
		Healthy:    strconv.Itoa(healthy),
		NotHealthy: strconv.Itoa(n - healthy),
		InProgress: strconv.Itoa(progressing),
	}
}

// SetupWithManager registers the report controller on the pull ManifestWorks and reports.
func (r *ReportReconciler) SetupWithManager(mgr manager.Manager, skipNameValidation bool) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ReportControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: &skipNameValidation}).
		WatchesRawSource(source.Kind(r.Cache, &workv1.ManifestWork{}, handler.TypedEnqueueRequestsFromMapFunc(forWorkAppSet))).
		WatchesRawSource(source.Kind(r.Cache, &v1alpha1.MulticlusterApplicationSetReport{},
			&handler.TypedEnqueueRequestForObject[*v1alpha1.MulticlusterApplicationSetReport]{})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &clusterv1.ManagedCluster{}, clusterwake.OnClusterChanges(r.appSetsOn))).
		WatchesRawSource(source.Kind(mgr.GetCache(), &addonv1beta1.ManagedClusterAddOn{}, clusterwake.OnAddonChanges(r.appSetsOn))).
		Complete(r)
}

// appSetsOn are the ApplicationSets with a pull Application on cluster.
func (r *ReportReconciler) appSetsOn(ctx context.Context, cluster string) []reconcile.Request {
	works := &workv1.ManifestWorkList{}
	if err := r.Cache.List(ctx, works, client.InNamespace(cluster)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the pull ManifestWorks of a cluster", "cluster", cluster)
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var out []reconcile.Request
	for i := range works.Items {
		for _, req := range forWorkAppSet(ctx, &works.Items[i]) {
			if !seen[req] {
				seen[req] = true
				out = append(out, req)
			}
		}
	}
	return out
}

func forWorkAppSet(_ context.Context, w *workv1.ManifestWork) []reconcile.Request {
	ns, name, ok := strings.Cut(w.Annotations[pullnames.AnnotationHostingAppSet], "/")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
