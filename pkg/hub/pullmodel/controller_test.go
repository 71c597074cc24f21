package pullmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

// TestOneShotRequests follows a manual sync through its life: shipped under a request name
// (the hub Application's resourceVersion when first shipped), kept while the spoke reports
// another operation and while the one it started runs, taken (cleared on the hub and left
// out of the ManifestWork) once the spoke reports that request finished. A refresh is
// followed by the spoke's reconcile time.
func TestOneShotRequests(t *testing.T) {
	hub := pulltest.App(pulltest.SeedApp)
	withOperationAndRefresh(hub)
	hub.SetResourceVersion("rv9")
	before := map[string]string{feedback.KeyOperationStartedAt: "t0", feedback.KeyReconciledAt: "r0"}
	work := func(reported map[string]string) *workv1.ManifestWork {
		return pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", reported)
	}
	shippedAs := func(request, refresh string) map[string]string {
		return map[string]string{pullnames.AnnotationOperationRequest: request, pullnames.AnnotationRefreshBaseline: refresh}
	}

	tests := []struct {
		name          string
		existing      *workv1.ManifestWork
		reported      map[string]string
		wantShipped   bool
		wantBaselines map[string]string
		wantTaken     oneShotTaken
	}{
		{
			name:        "no ManifestWork yet: shipped as the hub's resourceVersion, nothing reported as the refresh's baseline",
			wantShipped: true, wantBaselines: shippedAs("rv9", ""),
		},
		{
			name:     "first shipped to a spoke that reported before: its reconcile time is the refresh's baseline",
			existing: work(before), reported: before,
			wantShipped: true, wantBaselines: shippedAs("rv9", "r0"),
		},
		{
			name:        "shipped, the spoke reports an earlier request that ended: still waiting",
			existing:    withRequest(work(nil), "rv3", "r0"),
			reported:    map[string]string{feedback.KeyOperationRequest: "rv1", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r0"},
			wantShipped: true, wantBaselines: shippedAs("rv3", "r0"),
		},
		{
			name:        "the spoke reconciled and runs the request: the refresh is taken, the operation stays until it ends",
			existing:    withRequest(work(nil), "rv3", "r0"),
			reported:    map[string]string{feedback.KeyOperationRequest: "rv3", feedback.KeyOperationPhase: "Running", feedback.KeyReconciledAt: "r1"},
			wantShipped: true, wantBaselines: shippedAs("rv3", "r0"), wantTaken: oneShotTaken{refresh: true},
		},
		{
			name:        "an operation terminating has not ended",
			existing:    withRequest(work(nil), "rv3", "r0"),
			reported:    map[string]string{feedback.KeyOperationRequest: "rv3", feedback.KeyOperationPhase: "Terminating", feedback.KeyReconciledAt: "r0"},
			wantShipped: true, wantBaselines: shippedAs("rv3", "r0"),
		},
		{
			name:          "the request ended and the spoke reconciled: both taken, the operation leaves the ManifestWork",
			existing:      withRequest(work(nil), "rv3", "r0"),
			reported:      map[string]string{feedback.KeyOperationRequest: "rv3", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r1"},
			wantBaselines: map[string]string{pullnames.AnnotationRefreshBaseline: "r0"}, wantTaken: oneShotTaken{operation: true, refresh: true},
		},
		{
			name:          "a request that failed is done with too",
			existing:      withRequest(work(nil), "rv3", "r0"),
			reported:      map[string]string{feedback.KeyOperationRequest: "rv3", feedback.KeyOperationPhase: "Failed", feedback.KeyReconciledAt: "r0"},
			wantBaselines: map[string]string{pullnames.AnnotationRefreshBaseline: "r0"}, wantTaken: oneShotTaken{operation: true},
		},
		{
			// Start times are to the second: two syncs started in one second (a RollingSync
			// asking again) look the same; their request names do not.
			name:          "the request ended within the second the previous one started: taken by its name",
			existing:      withRequest(work(nil), "rv3", "r0"),
			reported:      map[string]string{feedback.KeyOperationRequest: "rv3", feedback.KeyOperationStartedAt: "t0", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r0"},
			wantBaselines: map[string]string{pullnames.AnnotationRefreshBaseline: "r0"}, wantTaken: oneShotTaken{operation: true},
		},
		{
			name:        "asked again after the last request left the ManifestWork: a new request, shipped",
			existing:    withRefresh(work(nil), "r0"),
			reported:    map[string]string{feedback.KeyOperationRequest: "rv3", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r0"},
			wantShipped: true, wantBaselines: shippedAs("rv9", "r0"),
		},
		{
			name:          "a ManifestWork an older release wrote (a start-time baseline): taken once the start changes and the operation ended",
			existing:      withLegacyBaseline(work(nil), "t0", "r0"),
			reported:      map[string]string{feedback.KeyOperationStartedAt: "t1", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r0"},
			wantBaselines: map[string]string{pullnames.AnnotationRefreshBaseline: "r0"}, wantTaken: oneShotTaken{operation: true},
		},
		{
			name:        "a ManifestWork an older release wrote, the start unchanged: still waiting, shipped under a name from now on",
			existing:    withLegacyBaseline(work(nil), "t0", "r0"),
			reported:    map[string]string{feedback.KeyOperationStartedAt: "t0", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r0"},
			wantShipped: true, wantBaselines: shippedAs("rv9", "r0"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spoke := feedback.Of(work(tt.reported), "openshift-gitops", "guestbook-cluster1")
			done := taken(hub, tt.existing, spoke)
			assert.Equal(t, tt.wantTaken, done)
			plan := planRequests(hub, tt.existing, spoke, done)
			assert.Equal(t, tt.wantShipped, plan.request.operation, "the operation shipped")
			assert.True(t, plan.request.refresh)
			assert.Equal(t, tt.wantBaselines, plan.baselines)
			if tt.wantShipped {
				app, _ := spokeApplication(hub, plan.request)
				info, _, _ := unstructured.NestedSlice(app.Object, "operation", "info")
				require.NotEmpty(t, info)
				assert.Equal(t, map[string]any{"name": pullnames.InfoOperationRequest, "value": tt.wantBaselines[pullnames.AnnotationOperationRequest]}, info[0],
					"the shipped operation names its request first in its info, where the spoke's report reads it")
			}
		})
	}
	t.Run("no request on the hub: nothing shipped, nothing to clear", func(t *testing.T) {
		plain := pulltest.App(pulltest.SeedApp)
		plan := planRequests(plain, nil, feedback.Status{}, oneShotTaken{})
		assert.Equal(t, spokeRequest{}, plan.request)
		assert.Empty(t, plan.baselines)
	})
}

func withRequest(w *workv1.ManifestWork, request, refresh string) *workv1.ManifestWork {
	w.Annotations[pullnames.AnnotationOperationRequest] = request
	return withRefresh(w, refresh)
}

func withLegacyBaseline(w *workv1.ManifestWork, operation, refresh string) *workv1.ManifestWork {
	w.Annotations[pullnames.AnnotationOperationBaseline] = operation
	return withRefresh(w, refresh)
}

func withRefresh(w *workv1.ManifestWork, refresh string) *workv1.ManifestWork {
	w.Annotations[pullnames.AnnotationRefreshBaseline] = refresh
	return w
}

func TestSymmetricDifference(t *testing.T) {
	assert.Equal(t, []string{"a", "d"}, symmetricDifference([]string{"a", "b", "c"}, []string{"b", "c", "d"}))
	assert.Empty(t, symmetricDifference([]string{"a"}, []string{"a"}))
}

// The work agent words a missing Application API differently across OCM releases; each
// wording must lead to the addon hint.
func TestMissingApplicationAPI(t *testing.T) {
	for failure, want := range map[string]bool{
		`AppliedManifestFailed: the server doesn't have a resource type "Application"`:          true,
		`no matches for kind "Application" in version "argoproj.io/v1alpha1"`:                   true,
		"the server could not find the requested resource":                                      true,
		`applications.argoproj.io "guestbook" is forbidden: User "x" cannot create resource`:    false,
		`admission webhook "validate.argoproj.io" denied the request: spec.project is required`: false,
	} {
		assert.Equal(t, want, missingApplicationAPI(failure), failure)
	}
}
