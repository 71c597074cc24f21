package pullmodel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

func TestPullConditions(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	later := metav1.NewTime(now.Add(time.Hour))
	app := pulltest.App(pulltest.SeedApp)
	errs := []pullnames.Problem{{Reason: v1alpha1.ReasonClusterNotFound, Message: "gone"}}
	first := pullConditions(app, errs, nil, now)
	assert.Equal(t, []any{map[string]any{"type": v1alpha1.ConditionPullModelError, "message": "ClusterNotFound: gone", "lastTransitionTime": "2026-11-23T10:00:00Z"}}, first)

	app.Object["status"] = map[string]any{"conditions": first}
	assert.Equal(t, first, pullConditions(app, errs, nil, later), "unchanged message keeps its transition time")
	changed := pullConditions(app, []pullnames.Problem{{Reason: v1alpha1.ReasonClusterNotPermitted, Message: "no"}}, []pullnames.Problem{{Reason: v1alpha1.ReasonSkipReconcileMissing, Message: "w"}}, later)
	assert.Len(t, changed, 2)
	assert.Equal(t, "2026-11-23T11:00:00Z", changed[0].(map[string]any)["lastTransitionTime"])
}
