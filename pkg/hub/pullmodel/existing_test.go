package pullmodel

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// TestAnArgoCDWeDidNotCreateGetsNothingUnasked: a cluster whose agent found an Argo CD
// gitops-addon did not create gets no pulled Application with the choice Skip (its
// ManifestWork goes, the Application says why and how to choose otherwise), gets it with
// UseExisting, and a first delivery waits for the agent's report; a delivery already made
// is not taken back while the report is pending.
func TestAnArgoCDWeDidNotCreateGetsNothingUnasked(t *testing.T) {
	olm := metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionTrue, Reason: contract.ExistingArgoCDOLM,
		Message: "Found OpenShift GitOps v1.16.0 via OLM (Subscription openshift-gitops-operator/openshift-gitops-operator)"}
	cannotTell := metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionUnknown, Reason: contract.ExistingArgoCDUnknown}
	none := metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionFalse, Reason: contract.ExistingArgoCDNone}
	use := map[string]string{contract.ExistingArgoCDPolicy: contract.ExistingArgoCDUse}
	for _, tt := range []struct {
		name        string
		conditions  []metav1.Condition
		annotations map[string]string
		workBefore  bool
		wantWork    bool
		wantReason  string
	}{
		{name: "no Argo CD of someone else", conditions: []metav1.Condition{none}, wantWork: true},
		{name: "OLM's, Skip", conditions: []metav1.Condition{olm}, wantReason: v1alpha1.ReasonExistingArgoCDSkipped},
		{name: "OLM's, Skip, delivered before: taken back", conditions: []metav1.Condition{olm}, workBefore: true, wantReason: v1alpha1.ReasonExistingArgoCDSkipped},
		{name: "OLM's, UseExisting", conditions: []metav1.Condition{olm}, annotations: use, wantWork: true},
		{name: "not reported yet: the first delivery waits", wantReason: v1alpha1.ReasonWaitingForAgentReport},
		{name: "the agent cannot tell: the first delivery waits", conditions: []metav1.Condition{cannotTell}, annotations: use,
			wantReason: v1alpha1.ReasonWaitingForAgentReport},
		{name: "not reported yet, delivered before: kept", workBefore: true, wantWork: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r, c, app := fakeHubReconciler(t)
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)}
			addon := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: contract.AddonName, Annotations: tt.annotations}}
			if tt.workBefore {
				_, err := r.Reconcile(ctx, req) // no addon yet: delivered as before
				require.NoError(t, err)
			}
			addon.Status.Conditions = tt.conditions
			require.NoError(t, c.Create(ctx, addon))
			_, err := r.Reconcile(ctx, req)
			require.NoError(t, err)

			works := &workv1.ManifestWorkList{}
			require.NoError(t, c.List(ctx, works))
			assert.Equal(t, tt.wantWork, len(works.Items) == 1, "ManifestWorks: %d", len(works.Items))
			got := newApplication()
			require.NoError(t, c.Get(ctx, req.NamespacedName, got))
			refused := findAppCondition(got, v1alpha1.ConditionPullModelError)
			if tt.wantReason == "" {
				assert.Nil(t, refused)
				return
			}
			require.NotNil(t, refused)
			message, _ := refused["message"].(string)
			assert.Contains(t, message, tt.wantReason+": ")
			if tt.wantReason == v1alpha1.ReasonExistingArgoCDSkipped {
				assert.Contains(t, message, "OpenShift GitOps v1.16.0 via OLM")
				assert.Contains(t, message, "spec.gitopsAddon.existingArgoCD to UseExisting")
			}
		})
	}
}
