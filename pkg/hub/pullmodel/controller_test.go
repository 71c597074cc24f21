package pullmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

// TestOneShotRequests follows a manual sync through its life: shipped with the baseline
// the spoke reported before, kept while the spoke reports the same start and while the
// operation it started runs, taken (and so cleared on the hub) once the spoke reports it
// finished.
func TestOneShotRequests(t *testing.T) {
	hub := pulltest.App(pulltest.SeedApp)
	withOperationAndRefresh(hub)
	before := map[string]string{feedback.KeyOperationStartedAt: "t0", feedback.KeyReconciledAt: "r0"}

	tests := []struct {
		name          string
		existing      *workv1.ManifestWork
		reported      map[string]string
		wantBaselines map[string]string
		wantTaken     oneShotTaken
	}{
		{
			name:          "no ManifestWork yet: shipped, nothing reported as baseline",
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "", pullnames.AnnotationRefreshBaseline: ""},
		},
		{
			name:          "first shipped to a spoke that reported before: its report is the baseline",
			existing:      pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", before),
			reported:      before,
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "t0", pullnames.AnnotationRefreshBaseline: "r0"},
			wantTaken:     oneShotTaken{},
		},
		{
			name:          "shipped, the spoke reports the same: still waiting",
			existing:      withAnnotations(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", before), "t0", "r0"),
			reported:      before,
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "t0", pullnames.AnnotationRefreshBaseline: "r0"},
			wantTaken:     oneShotTaken{},
		},
		{
			name:          "the spoke reconciled and runs the new operation: the refresh is taken, the operation stays until it ends",
			existing:      withAnnotations(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", nil), "t0", "r0"),
			reported:      map[string]string{feedback.KeyOperationStartedAt: "t1", feedback.KeyOperationPhase: "Running", feedback.KeyReconciledAt: "r1"},
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "t0", pullnames.AnnotationRefreshBaseline: "r0"},
			wantTaken:     oneShotTaken{refresh: true},
		},
		{
			name:          "an operation terminating has not ended",
			existing:      withAnnotations(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", nil), "t0", "r0"),
			reported:      map[string]string{feedback.KeyOperationStartedAt: "t1", feedback.KeyOperationPhase: "Terminating", feedback.KeyReconciledAt: "r0"},
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "t0", pullnames.AnnotationRefreshBaseline: "r0"},
			wantTaken:     oneShotTaken{},
		},
		{
			name:          "the spoke's new operation ended and it reconciled: both taken",
			existing:      withAnnotations(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", nil), "t0", "r0"),
			reported:      map[string]string{feedback.KeyOperationStartedAt: "t1", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r1"},
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "t0", pullnames.AnnotationRefreshBaseline: "r0"},
			wantTaken:     oneShotTaken{operation: true, refresh: true},
		},
		{
			name:          "an operation that failed is done with too",
			existing:      withAnnotations(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", nil), "t0", "r0"),
			reported:      map[string]string{feedback.KeyOperationStartedAt: "t1", feedback.KeyOperationPhase: "Failed", feedback.KeyReconciledAt: "r0"},
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "t0", pullnames.AnnotationRefreshBaseline: "r0"},
			wantTaken:     oneShotTaken{operation: true},
		},
		{
			name:          "the previous operation's end is not this one's",
			existing:      withAnnotations(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", nil), "t0", "r0"),
			reported:      map[string]string{feedback.KeyOperationStartedAt: "t0", feedback.KeyOperationPhase: "Succeeded", feedback.KeyReconciledAt: "r0"},
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "t0", pullnames.AnnotationRefreshBaseline: "r0"},
			wantTaken:     oneShotTaken{},
		},
		{
			name:          "shipped to a spoke that had never reported: the first report is the change",
			existing:      withAnnotations(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", nil), "", ""),
			reported:      map[string]string{feedback.KeyOperationStartedAt: "t1", feedback.KeyOperationPhase: "Succeeded"},
			wantBaselines: map[string]string{pullnames.AnnotationOperationBaseline: "", pullnames.AnnotationRefreshBaseline: ""},
			wantTaken:     oneShotTaken{operation: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spoke := feedback.Of(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", tt.reported),
				"openshift-gitops", "guestbook-cluster1")
			plan := planRequests(hub, tt.existing, spoke)
			assert.True(t, plan.request.operation)
			assert.True(t, plan.request.refresh)
			assert.Equal(t, tt.wantBaselines, plan.baselines)
			assert.Equal(t, tt.wantTaken, taken(hub, tt.existing, spoke))
		})
	}
	t.Run("no request on the hub: nothing shipped, nothing to clear", func(t *testing.T) {
		plain := pulltest.App(pulltest.SeedApp)
		plan := planRequests(plain, nil, feedback.Status{})
		assert.Equal(t, spokeRequest{}, plan.request)
		assert.Empty(t, plan.baselines)
	})
}

func withAnnotations(w *workv1.ManifestWork, operation, refresh string) *workv1.ManifestWork {
	w.Annotations[pullnames.AnnotationOperationBaseline] = operation
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
