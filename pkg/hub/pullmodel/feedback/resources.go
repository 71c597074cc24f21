package feedback

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/bounded"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// resources decodes the spoke agent's summary, if the spoke reported one.
func (s Status) Resources() (appresources.Summary, bool, error) {
	v, ok := s.Get(KeyResources)
	if !ok || v == "" {
		return appresources.Summary{}, false, nil
	}
	summary, err := appresources.Decode(v)
	return printableSummary(summary), err == nil, err
}

// printableSummary is a freshly decoded summary (its texts changed in place) with each
// text made printable (bounded.Printable): the hub Application carries it, and one control
// character would break reading it as YAML.
func printableSummary(s appresources.Summary) appresources.Summary {
	if len(s.Kinds) > 0 {
		kinds := make(map[string]int, len(s.Kinds))
		for k, n := range s.Kinds {
			kinds[bounded.Printable(k)] += n
		}
		s.Kinds = kinds
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		for _, f := range []*string{&r.Group, &r.Version, &r.Kind, &r.Namespace, &r.Name, &r.Status, &r.Health,
			&r.HealthMessage, &r.SyncResult, &r.SyncMessage} {
			*f = bounded.Printable(*f)
		}
	}
	s.HealthSource = bounded.Printable(s.HealthSource)
	for _, texts := range [][]string{s.Images, s.ExternalURLs} {
		for i, t := range texts {
			texts[i] = bounded.Printable(t)
		}
	}
	return s
}

// reported says whether the spoke's Argo CD has reported anything about the Application.
func (s Status) reported() bool {
	_, synced := s.Get(KeySync)
	_, reconciled := s.Get(KeyReconciledAt)
	return synced || reconciled
}

// resourceProblems are the warnings about what the hub shows of an Application's
// resources on cluster: not reported where no agent of ours summarises them, capped,
// without health. None while the spoke has reported nothing yet.
func resourceProblems(ctx context.Context, c client.Reader, hubOnly bool, cluster, spokeNamespace string, s Status) ([]pullnames.Problem, error) {
	summary, ok, err := s.Resources()
	if err != nil {
		return []pullnames.Problem{{Reason: v1alpha1.ReasonResourcesUnreadable, Message: fmt.Sprintf("the resources cluster %s reports cannot be read (%v): "+
			"upgrade the hub manager to the version of the cluster's gitops-addon agent", cluster, err)}}, nil
	}
	if !ok {
		if !s.reported() {
			return nil, nil
		}
		why, err := whyNoSummary(ctx, c, hubOnly, cluster, spokeNamespace)
		if why == "" || err != nil {
			return nil, err
		}
		return []pullnames.Problem{{Reason: v1alpha1.ReasonResourcesNotReported, Message: fmt.Sprintf("cluster %s reports the Application's sync and health but "+
			"not its resources (status.resources is left as it was): %s", cluster, why)}}, nil
	}
	var out []pullnames.Problem
	if n := summary.Omitted(); n > 0 {
		out = append(out, pullnames.Problem{Reason: v1alpha1.ReasonResourcesCapped, Message: fmt.Sprintf("the Application has %d resources on cluster %s; "+
			"status.resources lists %d of them, the failed and unhealthy first (all, by kind: %s)",
			summary.Total, cluster, len(summary.Resources), summary.KindCounts())})
	}
	if summary.HealthSource == appresources.HealthSourceAppTree {
		out = append(out, pullnames.Problem{Reason: v1alpha1.ReasonResourceHealthNotPersisted, Message: fmt.Sprintf("the Argo CD of cluster %s does not keep "+
			"each resource's health in the Application (controller.resource.health.persist is false), so status.resources "+
			"has sync statuses only; set it to \"true\" in the ArgoCD's spec.cmdParams", cluster)})
	}
	return out, nil
}

// whyNoSummary explains why a cluster sends no resource summary, or returns "" when one
// is simply on its way (the agent writes it right after Argo CD's status).
func whyNoSummary(ctx context.Context, c client.Reader, hubOnly bool, cluster, spokeNamespace string) (string, error) {
	if spokeNamespace != contract.GitOpsNamespace {
		return fmt.Sprintf("the Application runs in namespace %s on the cluster, and the gitops-addon agent summarises the "+
			"Applications of %s only (where the cluster's Argo CD runs them by default)", spokeNamespace, contract.GitOpsNamespace), nil
	}
	if hubOnly {
		return "this installation is hub-only, and the gitops addon the cluster runs (Red Hat ACM's) does not summarise " +
			"an Application's resources; ACM shows them through its Search component", nil
	}
	addon := &addonv1beta1.ManagedClusterAddOn{}
	err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, addon)
	switch {
	case apierrors.IsNotFound(err):
		return "the gitops addon, whose agent summarises them, is not enabled on the cluster", nil
	case err != nil:
		return "", fmt.Errorf("reading the gitops-addon ManagedClusterAddOn of %s: %w", cluster, err)
	case meta.IsStatusConditionTrue(addon.Status.Conditions, contract.ConditionApplicationResourcesNotReported):
		c := meta.FindStatusCondition(addon.Status.Conditions, contract.ConditionApplicationResourcesNotReported)
		return "the cluster's gitops-addon agent cannot write them: " + c.Message, nil
	case !meta.IsStatusConditionTrue(addon.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable):
		return "the gitops-addon agent, which summarises them, is not available on the cluster (see `kubectl get " +
			"managedclusteraddon " + contract.AddonName + " -n " + cluster + "`)", nil
	default:
		return "", nil
	}
}

// hubResourceStatuses are a summary's resources as Argo CD's status.resources.
func hubResourceStatuses(s appresources.Summary) []any {
	out := make([]any, 0, len(s.Resources))
	for _, r := range s.Resources {
		m := map[string]any{"kind": r.Kind, "name": r.Name}
		setNonEmpty(m, "group", r.Group)
		setNonEmpty(m, "version", r.Version)
		setNonEmpty(m, "namespace", r.Namespace)
		setNonEmpty(m, "status", r.Status)
		if r.Health != "" {
			health := map[string]any{"status": r.Health}
			setNonEmpty(health, "message", r.HealthMessage)
			m["health"] = health
		}
		out = append(out, m)
	}
	return out
}

// hubFailedResults are the resources that failed to sync, as Argo CD's
// operationState.syncResult.resources (where `argocd app get` shows their message).
func hubFailedResults(s appresources.Summary) []any {
	var out []any
	for _, r := range s.Resources {
		if r.SyncResult != "SyncFailed" {
			continue
		}
		m := map[string]any{"group": r.Group, "version": r.Version, "kind": r.Kind, "namespace": r.Namespace, "name": r.Name,
			"status": r.SyncResult}
		setNonEmpty(m, "message", r.SyncMessage)
		out = append(out, m)
	}
	return out
}

// hubSummary is a summary's images and external URLs as Argo CD's status.summary.
func hubSummary(s appresources.Summary) map[string]any {
	m := map[string]any{}
	if len(s.Images) > 0 {
		m["images"] = toAny(s.Images)
	}
	if len(s.ExternalURLs) > 0 {
		m["externalURLs"] = toAny(s.ExternalURLs)
	}
	return m
}

// FailedResourcesMessage names the failed and degraded resources of a summary, at most
// five, with their messages.
func FailedResourcesMessage(s appresources.Summary) string {
	failed := s.Failed()
	if len(failed) == 0 {
		return ""
	}
	const shown = 5
	parts := make([]string, 0, shown+1)
	for _, r := range failed[:min(len(failed), shown)] {
		state := r.Health
		if r.SyncResult == "SyncFailed" {
			state = "SyncFailed"
		}
		part := r.String() + " " + state
		if msg := r.Message(); msg != "" {
			part += ": " + msg
		}
		parts = append(parts, part)
	}
	if len(failed) > shown {
		parts = append(parts, fmt.Sprintf("and %d more", len(failed)-shown))
	}
	return strings.Join(parts, "; ")
}

func setNonEmpty(m map[string]any, key, value string) {
	if value != "" {
		m[key] = value
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
