package pullmodel

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// pullConditions are the Argo CD ApplicationConditions the pull model reports: one
// error condition and one warning condition at most, each listing every problem. The
// transition time is kept while the message is unchanged, so a steady state writes nothing.
func pullConditions(app *unstructured.Unstructured, errs, warnings []pullnames.Problem, now metav1.Time) []any {
	var out []any
	for _, c := range []struct {
		kind     string
		problems []pullnames.Problem
	}{{v1alpha1.ConditionPullModelError, errs}, {v1alpha1.ConditionPullModelWarning, warnings}} {
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

// pullConditionsOf are the pull model's conditions an Application carries now.
func pullConditionsOf(app *unstructured.Unstructured) []any {
	var ours []any
	for _, t := range []string{v1alpha1.ConditionPullModelError, v1alpha1.ConditionPullModelWarning} {
		if c := findAppCondition(app, t); c != nil {
			ours = append(ours, c)
		}
	}
	return ours
}
