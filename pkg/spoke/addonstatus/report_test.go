package addonstatus

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// TestWithdrawnConditionsLeaveTheAddon: a condition of a feature that is off now is
// removed from the ManagedClusterAddOn, others are kept, and setting it again brings it back.
func TestWithdrawnConditionsLeaveTheAddon(t *testing.T) {
	addon := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "a"}}
	addon.Status.Conditions = []metav1.Condition{
		{Type: "Stale", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Now()},
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Now()},
	}
	hub := fixtures.FakeHub(t, addon).Build()
	report := NewReport()
	p := &Publisher{Hub: hub, ClusterName: "c1", AddonName: "a", Report: report}
	conditions := func() []metav1.Condition {
		got := &addonv1beta1.ManagedClusterAddOn{}
		require.NoError(t, hub.Get(context.Background(), client.ObjectKeyFromObject(addon), got))
		return got.Status.Conditions
	}

	report.Set(metav1.Condition{Type: "Mine", Status: metav1.ConditionTrue, Reason: "R"})
	report.Withdraw("Stale")
	require.NoError(t, p.Publish(context.Background()))
	assert.Nil(t, meta.FindStatusCondition(conditions(), "Stale"), "withdrawn")
	assert.NotNil(t, meta.FindStatusCondition(conditions(), "Available"), "another writer's condition is kept")
	assert.NotNil(t, meta.FindStatusCondition(conditions(), "Mine"))

	report.Set(metav1.Condition{Type: "Stale", Status: metav1.ConditionFalse, Reason: "Back"})
	require.NoError(t, p.Publish(context.Background()))
	c := meta.FindStatusCondition(conditions(), "Stale")
	require.NotNil(t, c, "set again after being withdrawn")
	assert.Equal(t, "Back", c.Reason)
}
