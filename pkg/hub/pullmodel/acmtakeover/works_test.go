package acmtakeover

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// acmWork is a pull ManifestWork as Red Hat ACM's pull controller writes it for the hub
// Application openshift-gitops/app, on cluster. Its finalizer (the work agent's) keeps it
// readable once deleted, with the policy it was deleted with.
func acmWork(cluster, app string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Namespace: cluster, Name: app + "-1a2b3", Labels: map[string]string{pullnames.LabelPull: "true"},
		Annotations: map[string]string{pullnames.AnnotationHubAppNamespace: "openshift-gitops", pullnames.AnnotationHubAppName: app},
		Finalizers:  []string{"cluster.open-cluster-management.io/manifest-work-cleanup"},
	}}
}

// ourWork is our ManifestWork of openshift-gitops/guestbook on cluster1, applied or not.
func ourWork(applied bool) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: pullnames.WorkName("openshift-gitops", "guestbook")}}
	if applied {
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue}}
	}
	return w
}

// takeover is a Works over a fake hub holding ACM's ManifestWorks of guestbook on two
// clusters, one of another Application, and ours (labelled as ACM's too); it records its
// Events into events.
func takeover(t *testing.T) (*Works, client.Client, *[]string) {
	t.Helper()
	scheme := fixtures.HubScheme(t)
	ours := acmWork("cluster1", "ours")
	ours.Annotations[pullnames.AnnotationHubAppName], ours.Labels[pullnames.LabelPullWork] = "guestbook", "true"
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(acmWork("cluster1", "guestbook"), acmWork("cluster2", "guestbook"), acmWork("cluster1", "other"), ours).Build()
	var events []string
	record := func(_ *unstructured.Unstructured, eventType, reason, format string, args ...any) {
		events = append(events, eventType+" "+reason+" "+fmt.Sprintf(format, args...))
	}
	return NewWorks(c, c, record), c, &events
}

func guestbook() *unstructured.Unstructured {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(pullnames.ApplicationGVK)
	app.SetNamespace("openshift-gitops")
	app.SetName("guestbook")
	return app
}

// state is what became of one of ACM's ManifestWorks: "there", "gone", deleted with its spoke
// Application ("deleted"), or with the Orphan policy ("orphaned").
func state(t *testing.T, c client.Client, cluster, app string) string {
	t.Helper()
	w := &workv1.ManifestWork{}
	err := c.Get(context.Background(), client.ObjectKeyFromObject(acmWork(cluster, app)), w)
	switch {
	case apierrors.IsNotFound(err):
		return "gone"
	case err != nil:
		t.Fatal(err)
	case w.DeletionTimestamp.IsZero():
		return "there"
	case w.Spec.DeleteOption != nil && w.Spec.DeleteOption.PropagationPolicy == workv1.DeletePropagationPolicyTypeOrphan:
		return "orphaned"
	}
	return "deleted"
}

// TestHandOverWaitsForOursThenOrphans: ACM's ManifestWork beside ours stays until ours is
// applied, then goes with the Orphan policy (the spoke Application stays, carried by
// ours); ACM's on another cluster goes with its spoke Application at once. Each
// retirement is told on the Application, once.
func TestHandOverWaitsForOursThenOrphans(t *testing.T) {
	ctx := context.Background()
	w, c, events := takeover(t)

	require.NoError(t, w.HandOver(ctx, guestbook(), "cluster1", nil))
	assert.Equal(t, "there", state(t, c, "cluster1", "guestbook"), "ours is not created yet")
	assert.Equal(t, "deleted", state(t, c, "cluster2", "guestbook"))
	require.NoError(t, w.HandOver(ctx, guestbook(), "cluster1", ourWork(false)))
	assert.Equal(t, "there", state(t, c, "cluster1", "guestbook"), "ours is not applied yet")

	require.NoError(t, w.HandOver(ctx, guestbook(), "cluster1", ourWork(true)))
	assert.Equal(t, "orphaned", state(t, c, "cluster1", "guestbook"))
	assert.Equal(t, "there", state(t, c, "cluster1", "other"), "another Application's")
	assert.Equal(t, "there", state(t, c, "cluster1", "ours"), "ours, labelled as ACM's")
	assert.Equal(t, []string{
		corev1.EventTypeNormal + " " + v1alpha1.ReasonACMWorkRetired + " Red Hat ACM's ManifestWork cluster2/guestbook-1a2b3 deleted with its spoke Application",
		corev1.EventTypeNormal + " " + v1alpha1.ReasonACMWorkRetired + " Red Hat ACM's ManifestWork cluster1/guestbook-1a2b3 deleted with the Orphan policy: " +
			"the spoke Application stays, now carried by " + ourWork(true).Name,
	}, *events)

	require.NoError(t, w.HandOver(ctx, guestbook(), "cluster1", ourWork(true)))
	assert.Len(t, *events, 2, "retired once")
}

// TestRetireAllDeletesWithTheSpokeApplications: an Application deleted or delivered
// nowhere takes ACM's ManifestWorks, and their spoke Applications, with it; one that is
// gone too, with no Event (there is nothing to record it on).
func TestRetireAllDeletesWithTheSpokeApplications(t *testing.T) {
	ctx := context.Background()
	w, c, events := takeover(t)
	require.NoError(t, w.RetireAll(ctx, guestbook()))
	assert.Equal(t, "deleted", state(t, c, "cluster1", "guestbook"))
	assert.Equal(t, "deleted", state(t, c, "cluster2", "guestbook"))
	assert.Len(t, *events, 2)

	require.NoError(t, w.RetireOfGone(ctx, client.ObjectKey{Namespace: "openshift-gitops", Name: "other"}))
	assert.Equal(t, "deleted", state(t, c, "cluster1", "other"))
	assert.Len(t, *events, 2, "no Event for an Application that is gone")

	var none *Works
	assert.NoError(t, none.RetireAll(ctx, guestbook()), "a hub without the takeover has nothing to retire")
}
