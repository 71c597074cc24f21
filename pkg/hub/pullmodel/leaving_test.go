package pullmodel

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// seedAppSet generates pulltest.SeedApp (guestbook-cluster1) over the placement's decisions.
const seedAppSet = `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook, namespace: openshift-gitops}
spec:
  generators:
  - clusterDecisionResource:
      configMapRef: acm-placement
      labelSelector: {matchLabels: {cluster.open-cluster-management.io/placement: gitops-managed}}
`

func decision(placement string, clusters ...string) *clusterv1beta1.PlacementDecision {
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Namespace: "openshift-gitops", Name: placement + "-1", Labels: map[string]string{clusterv1beta1.PlacementLabel: placement},
	}}
	for _, c := range clusters {
		pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	return pd
}

func departuresOver(t *testing.T, objs ...client.Object) *Departures {
	s := fixtures.HubScheme(t)
	for _, gvk := range []struct{ kind, list string }{{"Application", "ApplicationList"}, {"ApplicationSet", "ApplicationSetList"}} {
		s.AddKnownTypeWithName(pullnames.ApplicationGVK.GroupVersion().WithKind(gvk.kind), &unstructured.Unstructured{})
		s.AddKnownTypeWithName(pullnames.ApplicationGVK.GroupVersion().WithKind(gvk.list), &unstructured.UnstructuredList{})
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(newApplication(), indexAppByCluster, func(o client.Object) []string {
			if v := o.GetAnnotations()[pullnames.AnnotationCluster]; v != "" {
				return []string{v}
			}
			return nil
		}).Build()
	d := NewDepartures(c, c)
	d.SetCache(c)
	return d
}

// TestLeavingNamesTheApplicationsOnTheirWayOut: what the addon's removal from a cluster
// must wait for, and what it must not.
func TestLeavingNamesTheApplicationsOnTheirWayOut(t *testing.T) {
	deleting := func(o client.Object) client.Object {
		now := metav1.Now()
		o.SetDeletionTimestamp(&now)
		if len(o.GetFinalizers()) == 0 {
			o.SetFinalizers([]string{"test/keep"})
		}
		return o
	}
	appSet := pulltest.App
	matrix := appSet(`
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook, namespace: openshift-gitops}
spec:
  generators:
  - matrix:
      generators:
      - clusterDecisionResource:
          configMapRef: acm-placement
          labelSelector: {matchLabels: {cluster.open-cluster-management.io/placement: gitops-managed}}
      - git: {repoURL: "https://example.com/repo.git", revision: HEAD, directories: [{path: apps/*}]}
`)
	listToo := appSet(seedAppSet + `  - list: {elements: [{name: cluster1}]}
`)
	orphan := pulltest.App(pulltest.SeedApp)
	orphan.SetOwnerReferences(nil)
	work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Namespace: "cluster1", Name: pullnames.WorkName("openshift-gitops", "other"), Labels: map[string]string{pullnames.LabelPullWork: "true"},
		Annotations: map[string]string{pullnames.AnnotationHubAppNamespace: "openshift-gitops", pullnames.AnnotationHubAppName: "other"},
	}}

	tests := []struct {
		name string
		objs []client.Object
		want []string
	}{
		{"the ApplicationSet still decides the cluster", []client.Object{pulltest.App(pulltest.SeedApp), appSet(seedAppSet), decision("gitops-managed", "cluster1")}, nil},
		{"the ApplicationSet's Placement dropped the cluster", []client.Object{pulltest.App(pulltest.SeedApp), appSet(seedAppSet), decision("gitops-managed", "cluster2")},
			[]string{"openshift-gitops/guestbook-cluster1"}},
		{"the Application is being deleted", []client.Object{deleting(pulltest.App(pulltest.SeedApp)), appSet(seedAppSet), decision("gitops-managed", "cluster1")},
			[]string{"openshift-gitops/guestbook-cluster1"}},
		{"its ManifestWork is being deleted", []client.Object{deleting(work.DeepCopy())}, []string{"openshift-gitops/other"}},
		{"a ManifestWork that stays", []client.Object{work.DeepCopy()}, nil},
		{"a matrix over the dropped Placement", []client.Object{pulltest.App(pulltest.SeedApp), matrix, decision("gitops-managed")},
			[]string{"openshift-gitops/guestbook-cluster1"}},
		{"a list generator may still generate it", []client.Object{pulltest.App(pulltest.SeedApp), listToo, decision("gitops-managed")}, nil},
		{"its ApplicationSet is gone (the Application goes with it)", []client.Object{pulltest.App(pulltest.SeedApp)}, nil},
		{"an Application of no ApplicationSet", []client.Object{orphan, decision("gitops-managed")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := departuresOver(t, tt.objs...).Leaving(context.Background(), "cluster1")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("before the pull model runs there is nothing to wait for", func(t *testing.T) {
		got, err := NewDepartures(nil, nil).Leaving(context.Background(), "cluster1")
		require.NoError(t, err)
		assert.Empty(t, got)
	})
}
