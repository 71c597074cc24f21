package reports

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// Bounds of a report's resource lists, so that an ApplicationSet over a thousand
// clusters keeps its report far below etcd's request limit.
const (
	maxReportResources      = 2000
	maxReportResourceRefs   = 500
	maxReportConditionChars = 1024
)

// buildReport aggregates the ManifestWorks of one ApplicationSet's pull Applications. It
// also returns when to look again: the earliest moment an unapplied work becomes overdue.
func (r *Reconciler) buildReport(ctx context.Context, appSet types.NamespacedName, works []workv1.ManifestWork) (
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
func (r *Reconciler) entry(ctx context.Context, w *workv1.ManifestWork) (reportEntry, time.Duration, error) {
	appName := w.Annotations[pullnames.AnnotationHubAppName]
	s := feedback.Of(w, feedback.WorkAppNamespace(w), appName)
	e := reportEntry{ClusterCondition: clusterCondition(w, s)}
	if summary, ok, _ := s.Resources(); ok {
		e.resources = summary.Resources
		e.ResourceCount = ptr.To(int32(min(summary.Total, math.MaxInt32))) //nolint:gosec // bounded on the line
		if msg := feedback.FailedResourcesMessage(summary); msg != "" {
			e.Conditions = append(e.Conditions, v1alpha1.Condition{Type: v1alpha1.ReportConditionResourceError, Message: truncateMessage(msg)})
		}
	}
	// Explained as on the hub Application, so that both say the same.
	explainer := feedback.Explainer{Reader: r.Client, HubOnly: r.HubOnly, ApplyTimeout: r.ApplyTimeout}
	warnings, wait, err := explainer.Warnings(ctx, r.now(), w, s)
	if err != nil {
		return reportEntry{}, 0, err
	}
	for _, p := range warnings {
		if p.Reason == v1alpha1.ReasonResourcesCapped {
			continue // resourceCount says it
		}
		e.Conditions = append(e.Conditions, v1alpha1.Condition{Type: warningType(p.Reason), Message: truncateMessage(p.String())})
	}
	return e, wait, nil
}

// warningType is the report condition type of a warning, ending in Warning as ACM's do.
func warningType(reason string) string {
	if reason == v1alpha1.ReasonNotApplied {
		return v1alpha1.ReportConditionApplyWarning
	}
	return v1alpha1.ReportConditionResourcesWarning
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
		c.Conditions = append(c.Conditions, v1alpha1.Condition{Type: v1alpha1.ReportConditionApplyError, Message: s.ApplyFailure()})
	}
	if c.OperationStatePhase == "Failed" || c.OperationStatePhase == "Error" {
		msg, _ := s.Get(feedback.KeyOperationMessage)
		c.Conditions = append(c.Conditions, v1alpha1.Condition{Type: v1alpha1.ReportConditionSyncError, Message: msg})
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
