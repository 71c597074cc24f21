// Package stackstatus carries what OCM's work agent says about the addon's ManifestWorks
// on each cluster to that cluster's ManagedClusterAddOn, as the StackApplied condition:
// every object that failed to apply, with the work agent's message, so that a conflict
// or a denied request shows where users look (the ManagedClusterAddOn, and through it the
// GitOpsCluster's Ready) rather than only deep in a ManifestWork's status.
package stackstatus

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// maxMessage bounds the condition's message: a ManifestWork of 60 objects that all fail
// must not make every ManagedClusterAddOn of the fleet large.
const maxMessage = 2048

// failure is one object the work agent could not apply.
type failure struct {
	work, object, message string
}

// failuresOf lists, in a stable order, the objects of the works whose Applied condition is
// False, with the work agent's message; and whether the work agent has reported on every
// work yet.
func failuresOf(works []workv1.ManifestWork) ([]failure, bool) {
	var out []failure
	reported := len(works) > 0
	for _, w := range works {
		if meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied) == nil {
			reported = false
		}
		for _, m := range w.Status.ResourceStatus.Manifests {
			c := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied)
			if c == nil || c.Status != metav1.ConditionFalse {
				continue
			}
			out = append(out, failure{work: w.Name, object: describe(m.ResourceMeta), message: c.Message})
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); c != nil && c.Status == metav1.ConditionFalse &&
			!slices.ContainsFunc(out, func(f failure) bool { return f.work == w.Name }) {
			out = append(out, failure{work: w.Name, object: "the ManifestWork", message: c.Message})
		}
	}
	slices.SortFunc(out, func(a, b failure) int { return strings.Compare(a.work+a.object, b.work+b.object) })
	return out, reported
}

func describe(r workv1.ManifestResourceMeta) string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + name
	}
	return r.Kind + " " + name
}

// condition is the StackApplied condition for what the work agent reported.
func condition(works []workv1.ManifestWork) metav1.Condition {
	failures, reported := failuresOf(works)
	c := metav1.Condition{Type: contract.ConditionStackApplied}
	switch {
	case len(failures) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, contract.StackApplyFailed
		c.Message = failureMessage(failures)
	case !reported:
		c.Status, c.Reason = metav1.ConditionUnknown, contract.StackNotYetStatus
		c.Message = "OCM's work agent on the cluster has not reported on the addon's ManifestWorks yet."
	default:
		c.Status, c.Reason = metav1.ConditionTrue, contract.StackApplied
		c.Message = "OCM's work agent applied every object of the addon's ManifestWorks."
	}
	return c
}

// failureMessage names each failed object with the work agent's message, within maxMessage.
func failureMessage(failures []failure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "OCM's work agent could not apply %d object(s) of the addon on the cluster: ", len(failures))
	for i, f := range failures {
		part := fmt.Sprintf("%s in ManifestWork %s: %s", f.object, f.work, f.message)
		if i > 0 {
			part = "; " + part
		}
		if b.Len()+len(part) > maxMessage {
			fmt.Fprintf(&b, "; and %d more (kubectl get manifestwork -n <cluster> -o yaml)", len(failures)-i)
			break
		}
		b.WriteString(part)
	}
	return b.String()
}
