// Package pulltest holds the fixtures the pull model's tests share: the seed's pulled
// Application, as YAML and parsed, a pull ManifestWork carrying what a spoke reported,
// and the feedback value of a spoke's resource summary.
package pulltest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// App parses an object (an Application, an AppProject, an ApplicationSet) from YAML.
func App(doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		panic(err)
	}
	return u
}

// SeedApp is an Application as the seed's ApplicationSet generates it.
const SeedApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook-cluster1
  namespace: openshift-gitops
  labels:
    apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"
    team: blue
  annotations:
    apps.open-cluster-management.io/ocm-managed-cluster: cluster1
    argocd.argoproj.io/skip-reconcile: "true"
    note: kept
  finalizers: [resources-finalizer.argocd.argoproj.io]
  ownerReferences:
  - {apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: guestbook, uid: 1111-2222, controller: true}
spec:
  project: default
  source: {repoURL: "https://example.com/repo.git", path: guestbook, targetRevision: HEAD}
  destination: {server: "https://cluster1.example.com:6443", namespace: guestbook}
  syncPolicy: {automated: {prune: true}}
`

// ReportedWork is a ManifestWork whose Application reported these feedback values.
func ReportedWork(cluster, appNS, appName string, values map[string]string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: pullnames.WorkName(appNS, appName), Namespace: cluster,
		Annotations: map[string]string{pullnames.AnnotationHubAppNamespace: appNS, pullnames.AnnotationHubAppName: appName},
	}}
	var fv []workv1.FeedbackValue
	for k, v := range values {
		fv = append(fv, workv1.FeedbackValue{Name: k, Value: workv1.FieldValue{Type: workv1.String, String: &v}})
	}
	// Applied, as the work agent reports it; a test of an unapplied work removes it.
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete"}}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "argoproj.io", Resource: "applications", Namespace: appNS, Name: appName},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: fv},
	}}
	return w
}

// Summary is the feedback value of a spoke summary with these resources.
func Summary(t testing.TB, resources ...appresources.Resource) string {
	t.Helper()
	v, err := appresources.Of(resources...).Encode()
	require.NoError(t, err)
	return v
}
