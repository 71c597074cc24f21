package acmtakeover

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// TestReportIsTakenOverInPlace: ACM's report of an ApplicationSet becomes ours, with its
// other labels kept; a report ours already is left to the next reconcile.
func TestReportIsTakenOverInPlace(t *testing.T) {
	ctx := context.Background()
	scheme := fixtures.HubScheme(t)
	acm := &v1alpha1.MulticlusterApplicationSetReport{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: "guestbook",
		Labels: map[string]string{pullnames.LabelHostingAppSetReport: "openshift-gitops.guestbook", "acm": "kept"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(acm).Build()
	desired := &v1alpha1.MulticlusterApplicationSetReport{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: "guestbook",
		Labels:          map[string]string{pullnames.LabelHostingAppSetReport: "openshift-gitops.guestbook", contract.LabelManagedBy: contract.ManagedByValue},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "guestbook", UID: "uid-1"}}},
		Statuses: v1alpha1.AppConditions{Summary: v1alpha1.ReportSummary{Clusters: "1"}}}

	stored, err := Report(ctx, c, c, desired)
	require.NoError(t, err)
	require.NotNil(t, stored)
	got := &v1alpha1.MulticlusterApplicationSetReport{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(desired), got))
	assert.Equal(t, contract.ManagedByValue, got.Labels[contract.LabelManagedBy])
	assert.Equal(t, "kept", got.Labels["acm"])
	assert.Equal(t, desired.Statuses, got.Statuses)
	assert.Equal(t, desired.OwnerReferences, got.OwnerReferences)

	stored, err = Report(ctx, c, c, desired)
	require.NoError(t, err)
	assert.Nil(t, stored, "ours already: nothing to take over")
}
