// Package feedback decodes what a spoke reports of a pulled Application through its
// ManifestWork's status feedback, and nothing else: the keys and JSONPaths the work agent
// is asked for, the reported values (made printable and bounded), the apply failure, the
// spoke Application's conditions, its resource summary and tree (pkg/contract), the hub
// Application's status built from them, and the warnings that explain a report (the
// ManifestWork not applied in time, resources not reported, a tree bounded), with what
// the hub reads of the cluster for them. It writes nothing: the propagation controller
// (pkg/hub/pullmodel) and the report controller (pullmodel/reports) write what it decodes.
package feedback

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/bounded"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// Status is what the spoke reported about one pulled Application: the feedback
// values present (a value Argo CD has not written yet is absent, not empty) and whether
// the work agent could apply the Application. The zero Status has reported nothing.
type Status struct {
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

// Get is the reported value of a feedback key (Key*), and whether it was reported.
func (s Status) Get(key string) (string, bool) {
	v, ok := s.values[key]
	return v, ok
}

// Values are the reported values by key, as they are: the latency metrics compare a
// report with an earlier one.
func (s Status) Values() map[string]string { return s.values }

// ApplyFailure is a sentence saying why the work agent could not apply the
// Application, "" when it could (or has not said).
func (s Status) ApplyFailure() string { return s.applyFailure }

// Of reads a ManifestWork's status for the Application it carries. A nil work
// (not created yet) has reported nothing.
func Of(w *workv1.ManifestWork, appNamespace, appName string) Status {
	s := Status{values: map[string]string{}}
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
				if v.Name != KeyResources && v.Name != KeyTree { // bounded by their own decoders
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

// HubStatus is the hub Application's status with what the spoke reported and the
// pull model's conditions (ours: PullModelError, PullModelWarning): the fields the spoke
// did not report are left as they are, so the hub never shows a value the spoke did not
// send.
func HubStatus(app *unstructured.Unstructured, s Status, ours []any) map[string]any {
	current, _, _ := unstructured.NestedMap(app.Object, "status")
	status := runtime.DeepCopyJSON(orEmpty(current))
	if v, ok := s.Get(KeyHealth); ok {
		setPath(status, v, "health", "status")
	}
	if v, ok := s.Get(KeySync); ok {
		setPath(status, v, "sync", "status")
	}
	if v, ok := s.Get(KeyRevision); ok {
		// sync.status is required by Argo CD's schema whenever sync is set.
		if _, has, _ := unstructured.NestedString(status, "sync", "status"); has {
			setPath(status, v, "sync", "revision")
		}
	}
	setSourceRevisions(status, app, s)
	setOperationState(status, s)
	setResources(status, s)
	if v, ok := s.Get(KeyReconciledAt); ok {
		status["reconciledAt"] = v
	}
	if app.GetAnnotations()[pullnames.AnnotationSkipReconcile] == "true" {
		// Nobody else writes the conditions of an Application the hub's Argo CD skips:
		// the spoke's stand in for them.
		ours = append(appConditions(s.Conditions()), ours...)
		status["conditions"] = []any{}
	}
	setConditions(status, ours)
	return status
}

// setSourceRevisions copies a multi-source Application's revisions, once the spoke
// reports one for every source.
func setSourceRevisions(status map[string]any, app *unstructured.Unstructured, s Status) {
	n := sourceCount(app)
	if n == 0 {
		return
	}
	revisions := make([]any, 0, n)
	for i := range n {
		v, ok := s.Get(KeySourceRevision(i))
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
func setResources(status map[string]any, s Status) {
	summary, ok, _ := s.Resources()
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
	revision, _ := s.Get(KeyRevision)
	op["syncResult"] = map[string]any{"revision": revision, "resources": failed}
}

// Condition is one of the spoke Application's conditions.
type Condition struct{ Type, Message string }

// Conditions are the spoke Application's reported conditions, in its order.
func (s Status) Conditions() []Condition {
	var out []Condition
	for i := range spokeConditionsReported {
		t, ok := s.Get(KeyConditionType(i))
		if !ok || t == "" {
			break
		}
		msg, _ := s.Get(KeyConditionMessage(i))
		out = append(out, Condition{Type: t, Message: msg})
	}
	return out
}

// appConditions are conditions as Argo CD ApplicationConditions.
func appConditions(cs []Condition) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		out = append(out, map[string]any{"type": c.Type, "message": c.Message})
	}
	return out
}

// setOperationState copies the spoke's operation phase, start and message. Argo CD's
// schema requires operation, phase and startedAt together; the operation itself stays on
// the spoke, so a sync with no details stands in for it: every Argo CD operation is a
// sync, and the hub's UI names the last operation by its kind ("Sync OK"; "Unknown" for
// the empty operation ACM writes, which is given its kind too).
func setOperationState(status map[string]any, s Status) {
	phase, hasPhase := s.Get(KeyOperationPhase)
	started, hasStarted := s.Get(KeyOperationStartedAt)
	if !hasPhase || !hasStarted {
		return
	}
	op, _, _ := unstructured.NestedMap(status, "operationState")
	op = orEmpty(op)
	op["phase"] = phase
	op["startedAt"] = started
	if msg, ok := s.Get(KeyOperationMessage); ok {
		op["message"] = msg
	} else {
		delete(op, "message")
	}
	operation, _ := op["operation"].(map[string]any)
	operation = orEmpty(operation)
	if _, ok := operation["sync"]; !ok {
		operation["sync"] = map[string]any{}
	}
	op["operation"] = operation
	status["operationState"] = op
}

// setConditions replaces the pull model's conditions, keeping everybody else's.
func setConditions(status map[string]any, ours []any) {
	existing, _, _ := unstructured.NestedSlice(status, "conditions")
	kept := slices.DeleteFunc(slices.Clone(existing), func(c any) bool {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		return t == v1alpha1.ConditionPullModelError || t == v1alpha1.ConditionPullModelWarning
	})
	all := slices.Concat(kept, ours)
	if len(all) == 0 {
		delete(status, "conditions")
		return
	}
	status["conditions"] = all
}

// HubStatusDiffers says whether the desired status differs from the Application's.
func HubStatusDiffers(app *unstructured.Unstructured, desired map[string]any) bool {
	current, _, _ := unstructured.NestedMap(app.Object, "status")
	return !equality.Semantic.DeepEqual(orEmpty(current), desired)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func setPath(m map[string]any, value string, path ...string) {
	_ = unstructured.SetNestedField(m, value, path...)
}
