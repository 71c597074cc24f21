package pullmodel

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
)

// hubApp parses an Application from YAML.
func hubApp(doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		panic(err)
	}
	return u
}

// seedApp is an Application as the seed's ApplicationSet generates it.
const seedApp = `
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

// fakeFacts answers validation's questions from maps.
type fakeFacts struct {
	clusters map[string]bool
	// placed holds "<namespace>/<cluster>".
	placed   map[string]bool
	projects map[string]*unstructured.Unstructured
	// hubs are the clusters that are the hub itself, with the evidence.
	hubs map[string]localcluster.Evidence
	err  error
}

func (f fakeFacts) ClusterExists(_ context.Context, c string) (bool, error) {
	return f.clusters[c], f.err
}
func (f fakeFacts) HubEvidence(_ context.Context, c string) (localcluster.Evidence, error) {
	return f.hubs[c], f.err
}
func (f fakeFacts) ClusterPlaced(_ context.Context, ns, c string) (bool, error) {
	return f.placed[ns+"/"+c], f.err
}
func (f fakeFacts) AppProject(_ context.Context, ns, name string) (*unstructured.Unstructured, error) {
	return f.projects[ns+"/"+name], f.err
}

// reportedWork is a ManifestWork whose Application reported these feedback values.
func reportedWork(cluster, appNS, appName string, values map[string]string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: WorkName(appNS, appName), Namespace: cluster,
		Annotations: map[string]string{AnnotationHubAppNamespace: appNS, AnnotationHubAppName: appName},
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
