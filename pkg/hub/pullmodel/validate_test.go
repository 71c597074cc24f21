package pullmodel

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

func TestValidate(t *testing.T) {
	blue := pulltest.App(`{apiVersion: argoproj.io/v1alpha1, kind: AppProject, metadata: {name: blue, namespace: openshift-gitops}}`)
	everything := fakeFacts{
		clusters: map[string]bool{"cluster1": true, "cluster2": true, "local-cluster": true, "hub-a": true},
		placed:   map[string]bool{"openshift-gitops/cluster1": true, "openshift-gitops/hub-a": true},
		projects: map[string]*unstructured.Unstructured{"openshift-gitops/blue": blue},
		hubs: map[string]localcluster.Evidence{
			"local-cluster": {"its name is local-cluster"},
			"hub-a":         {"its ClusterClaim id.k8s.io is 9f3c, the hub's own cluster ID"},
		},
	}
	setLabel := func(k, v string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			l := u.GetLabels()
			if v == "" {
				delete(l, k)
			} else {
				l[k] = v
			}
			u.SetLabels(l)
		}
	}
	setAnnotation := func(k, v string, remove bool) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			if remove {
				delete(a, k)
			} else {
				a[k] = v
			}
			u.SetAnnotations(a)
		}
	}
	tests := []struct {
		name          string
		edit          func(*unstructured.Unstructured)
		wantCandidate bool
		wantShip      bool
		wantErrors    []string
		wantWarnings  []string
		wantProject   bool
	}{
		{name: "seed Application ships", wantCandidate: true, wantShip: true},
		{name: "not a pull Application at all", wantCandidate: false,
			edit: func(u *unstructured.Unstructured) {
				setLabel(pullnames.LabelPull, "")(u)
				setAnnotation(pullnames.AnnotationCluster, "", true)(u)
			}},
		{name: "annotation without the pull label: warned, not shipped", wantCandidate: true,
			edit: setLabel(pullnames.LabelPull, ""), wantWarnings: []string{v1alpha1.ReasonPullLabelMissing}},
		{name: "pull label false counts as missing", wantCandidate: true,
			edit: setLabel(pullnames.LabelPull, "false"), wantWarnings: []string{v1alpha1.ReasonPullLabelMissing}},
		{name: "pull label without a cluster", wantCandidate: true,
			edit: setAnnotation(pullnames.AnnotationCluster, "", true), wantErrors: []string{v1alpha1.ReasonClusterAnnotationMissing}},
		{name: "empty cluster annotation", wantCandidate: true,
			edit: setAnnotation(pullnames.AnnotationCluster, "  ", false), wantErrors: []string{v1alpha1.ReasonClusterAnnotationMissing}},
		{name: "unknown cluster", wantCandidate: true,
			edit: setAnnotation(pullnames.AnnotationCluster, "nowhere", false), wantErrors: []string{v1alpha1.ReasonClusterNotFound}},
		{name: "cluster not placed in the Application's namespace", wantCandidate: true,
			edit: setAnnotation(pullnames.AnnotationCluster, "cluster2", false), wantErrors: []string{v1alpha1.ReasonClusterNotPermitted}},
		{name: "invalid spoke namespace", wantCandidate: true,
			edit: setAnnotation(pullnames.AnnotationAppNamespace, "Not_A_Namespace", false), wantErrors: []string{v1alpha1.ReasonInvalidAppNamespace}},
		{name: "missing AppProject", wantCandidate: true,
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "red", "spec", "project")
			},
			wantErrors: []string{v1alpha1.ReasonAppProjectNotFound}},
		{name: "non-default AppProject ships along", wantCandidate: true, wantShip: true, wantProject: true,
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "blue", "spec", "project")
			}},
		{name: "skip-reconcile missing: shipped with a warning", wantCandidate: true, wantShip: true,
			edit: setAnnotation(pullnames.AnnotationSkipReconcile, "", true), wantWarnings: []string{v1alpha1.ReasonSkipReconcileMissing}},
		{name: "the hub by name is refused, placed or not", wantCandidate: true,
			edit: setAnnotation(pullnames.AnnotationCluster, "local-cluster", false), wantErrors: []string{v1alpha1.ReasonHubClusterNotPulled}},
		{name: "the hub under another name is refused", wantCandidate: true,
			edit: setAnnotation(pullnames.AnnotationCluster, "hub-a", false), wantErrors: []string{v1alpha1.ReasonHubClusterNotPulled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := pulltest.App(pulltest.SeedApp)
			if tt.edit != nil {
				tt.edit(app)
			}
			v, err := validate(context.Background(), app, everything)
			require.NoError(t, err)
			assert.Equal(t, tt.wantCandidate, v.candidate)
			assert.Equal(t, tt.wantShip, v.ship)
			assert.Equal(t, tt.wantErrors, reasons(v.errors))
			assert.Equal(t, tt.wantWarnings, reasons(v.warnings))
			assert.Equal(t, tt.wantProject, v.project != nil)
			for _, p := range append(v.errors, v.warnings...) {
				assert.NotEmpty(t, p.Message)
			}
		})
	}
	t.Run("the refusal of the hub names the cluster, the evidence and the fix", func(t *testing.T) {
		app := pulltest.App(pulltest.SeedApp)
		setAnnotation(pullnames.AnnotationCluster, "hub-a", false)(app)
		v, err := validate(context.Background(), app, everything)
		require.NoError(t, err)
		require.Len(t, v.errors, 1)
		for _, words := range []string{
			"cluster hub-a is the hub itself (its ClusterClaim id.k8s.io is 9f3c",
			"the hub's own Argo CD syncs Applications for it directly",
			"remove the label " + pullnames.LabelPull, pullnames.AnnotationCluster, pullnames.AnnotationSkipReconcile,
			"exclude hub-a from its generator",
		} {
			assert.Contains(t, v.errors[0].Message, words)
		}
	})
	t.Run("a failed read is an error, not a verdict", func(t *testing.T) {
		_, err := validate(context.Background(), pulltest.App(pulltest.SeedApp), fakeFacts{err: errors.New("cache not synced")})
		assert.ErrorContains(t, err, "cache not synced")
	})
}

func reasons(ps []pullnames.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Reason)
	}
	return out
}
