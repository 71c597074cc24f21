package feedback

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// PendingApply says whether a ManifestWork's current spec awaits its work agent and
// since when: the work agent has not yet reported Applied (true or false) for the
// generation gitops-addon wrote last.
type PendingApply struct {
	Pending bool
	Since   time.Time
}

// PendingApplyOf says whether, and since when, w awaits its work agent; a nil work, or
// one being deleted, awaits nothing.
func PendingApplyOf(w *workv1.ManifestWork) PendingApply {
	if w == nil || !w.DeletionTimestamp.IsZero() {
		return PendingApply{}
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); c != nil && c.ObservedGeneration >= w.Generation {
		return PendingApply{}
	}
	since := w.CreationTimestamp.Time
	if t, err := time.Parse(time.RFC3339, w.Annotations[pullnames.AnnotationShippedAt]); err == nil && t.After(since) {
		since = t
	}
	return PendingApply{Pending: true, Since: since}
}

// overdue says whether the work has waited longer than timeout; if it has not (yet),
// wait is how long until it will have, 0 when it is not pending at all.
func (p PendingApply) overdue(now time.Time, timeout time.Duration) (overdue bool, wait time.Duration) {
	if !p.Pending {
		return false, 0
	}
	left := p.Since.Add(timeout).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// notAppliedProblem says that a work is not applied, and why as far as the hub knows.
func notAppliedProblem(w *workv1.ManifestWork, since time.Time, state string) pullnames.Problem {
	return pullnames.Problem{Reason: v1alpha1.ReasonNotApplied, Message: fmt.Sprintf(
		"ManifestWork %s/%s has not been applied on cluster %s since %s: %s",
		w.Namespace, w.Name, w.Namespace, since.UTC().Format(time.RFC3339), state)}
}

// clusterState describes, for a user, why a cluster may not apply a ManifestWork.
func clusterState(ctx context.Context, c client.Reader, cluster string) (string, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return "the managed cluster no longer exists", nil
		}
		return "", fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
	}
	available := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	switch {
	case !mc.Spec.HubAcceptsClient:
		return "the hub has not accepted the cluster (spec.hubAcceptsClient is false); accept it " +
			"(`clusteradm accept --clusters " + cluster + "`)", nil
	case available == nil:
		return "the cluster has never reported (no ManagedClusterConditionAvailable): has its klusterlet joined?", nil
	case available.Status == metav1.ConditionTrue:
		return "the cluster is available, but its work agent has not applied it: check the klusterlet's work agent " +
			"on the cluster (`kubectl get pods -n open-cluster-management-agent`)", nil
	default:
		return fmt.Sprintf("the cluster is unavailable (ManagedClusterConditionAvailable %s since %s: %s); it is applied "+
			"when the cluster's klusterlet reports again", available.Status,
			available.LastTransitionTime.UTC().Format(time.RFC3339), conditionText(available)), nil
	}
}

func conditionText(c *metav1.Condition) string {
	if c.Message != "" {
		return c.Reason + ", " + c.Message
	}
	return c.Reason
}
