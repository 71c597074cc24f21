package pullmodel

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/bounded"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// spokeStatus is what the spoke reported about one pulled Application: the feedback
// values present (a value Argo CD has not written yet is absent, not empty) and whether
// the work agent could apply the Application.
type spokeStatus struct {
	values map[string]string
	// applyFailure is a sentence saying why the Application is not applied, if it is not.
	applyFailure string
}

// maxFeedbackValue bounds each value the hub copies from a spoke's report. A condition's
// or an operation's message is Argo CD's and may list every resource; whatever the spoke
// writes, the hub Application stays far within etcd's limit. The resource summary has
// its own bounds (appresources.Decode).
const maxFeedbackValue = 4 << 10

// cutFeedback is a reported value made printable (bounded.Printable) and within
// maxFeedbackValue, cut with an ellipsis.
func cutFeedback(v string) string { return bounded.Cut(bounded.Printable(v), maxFeedbackValue) }

func (s spokeStatus) get(name string) (string, bool) {
	v, ok := s.values[name]
	return v, ok
}

// spokeStatusOf reads a ManifestWork's status for the Application it carries. A nil work
// (not created yet) has reported nothing.
func spokeStatusOf(w *workv1.ManifestWork, appNamespace, appName string) spokeStatus {
	s := spokeStatus{values: map[string]string{}}
	if w == nil {
		return s
	}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group != pullnames.ApplicationGVK.Group || m.ResourceMeta.Resource != "applications" ||
			m.ResourceMeta.Namespace != appNamespace || m.ResourceMeta.Name != appName {
			continue
		}
		for _, v := range m.StatusFeedbacks.Values {
			if v.Value.Type == workv1.String && v.Value.String != nil {
				s.values[v.Name] = *v.Value.String
				if v.Name != FeedbackResources && v.Name != FeedbackTree { // bounded by their own decoders
					s.values[v.Name] = cutFeedback(*v.Value.String)
				}
			}
		}
		if c := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied); c != nil && c.Status == metav1.ConditionFalse {
			s.applyFailure = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	if s.applyFailure == "" {
		// The work as a whole, e.g. rejected before any manifest was tried.
		if c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); c != nil &&
			c.Status == metav1.ConditionFalse && c.ObservedGeneration == w.Generation {
			s.applyFailure = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return s
}

// desiredHubStatus is the hub Application's status with what the spoke reported and the
// pull model's conditions: the fields the spoke did not report are left as they are, so
// the hub never shows a value the spoke did not send.
func desiredHubStatus(app *unstructured.Unstructured, s spokeStatus, conditions []any) map[string]any {
	current, _, _ := unstructured.NestedMap(app.Object, "status")
	status := runtime.DeepCopyJSON(orEmpty(current))
	if v, ok := s.get(FeedbackHealth); ok {
		setPath(status, v, "health", "status")
	}
	if v, ok := s.get(FeedbackSync); ok {
		setPath(status, v, "sync", "status")
	}
	if v, ok := s.get(FeedbackRevision); ok {
		// sync.status is required by Argo CD's schema whenever sync is set.
		if _, has, _ := unstructured.NestedString(status, "sync", "status"); has {
			setPath(status, v, "sync", "revision")
		}
	}
	setSourceRevisions(status, app, s)
	setOperationState(status, s)
	setResources(status, s)
	if v, ok := s.get(FeedbackReconciledAt); ok {
		status["reconciledAt"] = v
	}
	if app.GetAnnotations()[pullnames.AnnotationSkipReconcile] == "true" {
		// Nobody else writes the conditions of an Application the hub's Argo CD skips:
		// the spoke's stand in for them.
		conditions = append(appConditions(s.conditions()), conditions...)
		status["conditions"] = []any{}
	}
	setConditions(status, conditions)
	return status
}

// setSourceRevisions copies a multi-source Application's revisions, once the spoke
// reports one for every source.
func setSourceRevisions(status map[string]any, app *unstructured.Unstructured, s spokeStatus) {
	n := sourceCount(app)
	if n == 0 {
		return
	}
	revisions := make([]any, 0, n)
	for i := range n {
		v, ok := s.get(FeedbackSourceRevision(i))
		if !ok {
			return
		}
		revisions = append(revisions, v)
	}
	if _, has, _ := unstructured.NestedString(status, "sync", "status"); has {
		_ = unstructured.SetNestedSlice(status, revisions, "sync", "revisions")
	}
}

// setResources copies the spoke's resource summary into status.resources and
// status.summary, and its failed resources into the last sync's result. Without a summary
// (not reported, or unreadable) they are left as they are: a warning says why.
func setResources(status map[string]any, s spokeStatus) {
	summary, ok, _ := s.resources()
	if !ok {
		return
	}
	status["resources"] = hubResourceStatuses(summary)
	status["summary"] = hubSummary(summary)
	op, ok := status["operationState"].(map[string]any)
	if !ok {
		return
	}
	failed := hubFailedResults(summary)
	if len(failed) == 0 {
		delete(op, "syncResult")
		return
	}
	revision, _ := s.get(FeedbackRevision)
	op["syncResult"] = map[string]any{"revision": revision, "resources": failed}
}

// spokeCondition is one of the spoke Application's conditions.
type spokeCondition struct{ Type, Message string }

// conditions are the spoke Application's reported conditions, in its order.
func (s spokeStatus) conditions() []spokeCondition {
	var out []spokeCondition
	for i := range spokeConditionsReported {
		t, ok := s.get(FeedbackConditionType(i))
		if !ok || t == "" {
			break
		}
		msg, _ := s.get(FeedbackConditionMessage(i))
		out = append(out, spokeCondition{Type: t, Message: msg})
	}
	return out
}

// appConditions are conditions as Argo CD ApplicationConditions.
func appConditions(cs []spokeCondition) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		out = append(out, map[string]any{"type": c.Type, "message": c.Message})
	}
	return out
}

// setOperationState copies the spoke's operation phase, start and message. Argo CD's
// schema requires operation, phase and startedAt together; the operation itself stays on
// the spoke, so an empty one stands in for it, as ACM does.
func setOperationState(status map[string]any, s spokeStatus) {
	phase, hasPhase := s.get(FeedbackOperationPhase)
	started, hasStarted := s.get(FeedbackOperationStartedAt)
	if !hasPhase || !hasStarted {
		return
	}
	op, _, _ := unstructured.NestedMap(status, "operationState")
	op = orEmpty(op)
	op["phase"] = phase
	op["startedAt"] = started
	if msg, ok := s.get(FeedbackOperationMessage); ok {
		op["message"] = msg
	} else {
		delete(op, "message")
	}
	if _, ok := op["operation"]; !ok {
		op["operation"] = map[string]any{}
	}
	status["operationState"] = op
}

// setConditions replaces the pull model's conditions, keeping everybody else's.
func setConditions(status map[string]any, ours []any) {
	existing, _, _ := unstructured.NestedSlice(status, "conditions")
	kept := slices.DeleteFunc(slices.Clone(existing), func(c any) bool {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		return t == pullnames.ConditionPullError || t == pullnames.ConditionPullWarning
	})
	all := slices.Concat(kept, ours)
	if len(all) == 0 {
		delete(status, "conditions")
		return
	}
	status["conditions"] = all
}

// pullConditions are the Argo CD ApplicationConditions the pull model reports: one
// error condition and one warning condition at most, each listing every problem. The
// transition time is kept while the message is unchanged, so a steady state writes nothing.
func pullConditions(app *unstructured.Unstructured, errs, warnings []pullnames.Problem, now metav1.Time) []any {
	var out []any
	for _, c := range []struct {
		kind     string
		problems []pullnames.Problem
	}{{pullnames.ConditionPullError, errs}, {pullnames.ConditionPullWarning, warnings}} {
		if len(c.problems) == 0 {
			continue
		}
		msg := joinProblems(c.problems)
		ts := now.UTC().Format(time.RFC3339)
		if old := findAppCondition(app, c.kind); old != nil && old["message"] == msg {
			if t, ok := old["lastTransitionTime"].(string); ok {
				ts = t
			}
		}
		out = append(out, map[string]any{"type": c.kind, "message": msg, "lastTransitionTime": ts})
	}
	return out
}

func joinProblems(ps []pullnames.Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

func findAppCondition(app *unstructured.Unstructured, conditionType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == conditionType {
			return m
		}
	}
	return nil
}

// statusDiffers says whether the desired status differs from the Application's.
func statusDiffers(app *unstructured.Unstructured, desired map[string]any) bool {
	current, _, _ := unstructured.NestedMap(app.Object, "status")
	return !equality.Semantic.DeepEqual(orEmpty(current), desired)
}

func setPath(m map[string]any, value string, path ...string) {
	_ = unstructured.SetNestedField(m, value, path...)
}
