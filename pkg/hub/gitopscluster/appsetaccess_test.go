package gitopscluster

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// fixedAccess reports the same problems for every GitOpsCluster.
type fixedAccess struct {
	problems []string
	failed   error
}

func (a fixedAccess) Problems(*appsv1beta1.GitOpsCluster) ([]string, error) {
	return a.problems, a.failed
}
func (a fixedAccess) Changed() <-chan event.GenericEvent { return nil }

// TestApplicationSetAccessProblemsAreOnClustersRegistered: what the owner of the shared
// ApplicationSet objects found wrong with those a GitOpsCluster needs is on its
// ClustersRegistered condition, with the fix.
func TestApplicationSetAccessProblemsAreOnClustersRegistered(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "acm-placement", errors.New("no"))
	tests := []struct {
		name         string
		access       ApplicationSetAccess
		wantStatus   metav1.ConditionStatus
		wantReason   string
		wantMessages []string
	}{
		{name: "not wired", wantStatus: metav1.ConditionTrue, wantReason: appsv1beta1.ReasonRegistered},
		{name: "nothing wrong", access: fixedAccess{}, wantStatus: metav1.ConditionTrue, wantReason: appsv1beta1.ReasonRegistered,
			wantMessages: []string{"ApplicationSet placement ConfigMap and RBAC in place"}},
		{name: "someone else's object differs", access: fixedAccess{problems: []string{"ConfigMap gitops/acm-placement exists ... Fix: annotate"}},
			wantStatus: metav1.ConditionFalse, wantReason: appsv1beta1.ReasonRegistrationFailed, wantMessages: []string{"ConfigMap gitops/acm-placement exists ... Fix: annotate"}},
		{name: "a write failed", access: fixedAccess{failed: forbidden}, wantStatus: metav1.ConditionFalse, wantReason: appsv1beta1.ReasonReconcileError,
			wantMessages: []string{`configmaps "acm-placement" is forbidden: no`, "Fix: the manager's ServiceAccount lacks this permission"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", false)
			r, _ := newReconciler(t, append(placementObjects("p", "c1"), gc)...)
			r.ApplicationSetAccess = tt.access
			got := reconcileOnce(t, r, gc)
			c := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionClustersRegistered)
			require.NotNil(t, c)
			assert.Equal(t, tt.wantStatus, c.Status)
			assert.Equal(t, tt.wantReason, c.Reason)
			for _, m := range tt.wantMessages {
				assert.Contains(t, c.Message, m)
			}
		})
	}
}
