package pullmodel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

func TestStatusAge(t *testing.T) {
	now := t0.Add(time.Hour)
	available := func(status metav1.ConditionStatus, since time.Time) *metav1.Condition {
		return &metav1.Condition{Type: "ManagedClusterConditionAvailable", Status: status, LastTransitionTime: metav1.NewTime(since)}
	}
	work := func(generation int64, shipped time.Time, applied *metav1.Condition) *workv1.ManifestWork {
		w := shippedWork(generation, time.Time{}, applied)
		w.CreationTimestamp = metav1.NewTime(t0)
		w.Annotations[pullnames.AnnotationShippedAt] = shipped.Format(time.RFC3339)
		return w
	}
	appliedSince := func(generation int64, since time.Time) *metav1.Condition {
		c := appliedAt(generation)
		c.LastTransitionTime = metav1.NewTime(since)
		return c
	}
	tests := []struct {
		name    string
		work    *workv1.ManifestWork
		cluster *metav1.Condition
		want    time.Duration
	}{
		{name: "an Available cluster that applied the current spec: current, however old the status",
			work: work(1, t0, appliedAt(1)), cluster: available(metav1.ConditionTrue, t0), want: 0},
		{name: "a spec shipped 2 minutes ago, not applied yet: the status is of the spec before",
			work: work(2, now.Add(-2*time.Minute), appliedAt(1)), cluster: available(metav1.ConditionTrue, t0), want: 2 * time.Minute},
		{name: "a cluster whose lease was lost 20 minutes ago: since then",
			work: work(1, t0, appliedAt(1)), cluster: available(metav1.ConditionUnknown, now.Add(-20*time.Minute)), want: 20 * time.Minute},
		{name: "unavailable, and a spec shipped before that: the older of the two",
			work: work(2, now.Add(-30*time.Minute), appliedAt(1)), cluster: available(metav1.ConditionFalse, now.Add(-20*time.Minute)), want: 30 * time.Minute},
		{name: "a cluster that is gone: since the work agent last changed the work's conditions",
			work: work(1, t0, appliedSince(1, now.Add(-45*time.Minute))), want: 45 * time.Minute},
		{name: "a cluster that never joined: since the work was created, whenever its spec was shipped",
			work: work(1, t0.Add(10*time.Minute), nil), want: time.Hour},
		{name: "a cluster that became Available after a failed apply: current",
			work: work(1, t0, failedAt(1)), cluster: available(metav1.ConditionTrue, now.Add(-time.Minute)), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, statusAge(tt.work, tt.cluster, now))
		})
	}
}
