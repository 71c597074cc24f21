package pullmodel

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
	"github.com/gitops-addon/gitops-addon/pkg/hub/repocreds"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func hubCredential(name, typ, url string, optIn bool) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: name, Labels: map[string]string{contract.LabelArgoCDSecretType: typ}},
		Data:       map[string][]byte{"url": []byte(url), "username": []byte("u"), "password": []byte("p")},
	}
	if optIn {
		s.Labels[contract.LabelPullCredentials] = "true"
	}
	return s
}

// fakeHubReconciler is a reconciler over a fake hub holding the seed Application (repoURL
// https://example.com/repo.git) aimed at cluster1, and objs.
func fakeHubReconciler(t *testing.T, objs ...client.Object) (*Reconciler, client.Client, *unstructured.Unstructured) {
	t.Helper()
	scheme := fixtures.HubScheme(t)
	scheme.AddKnownTypeWithName(pullnames.ApplicationGVK, &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(pullnames.ApplicationGVK.GroupVersion().WithKind("ApplicationList"), &unstructured.UnstructuredList{})
	app := pulltest.App(pulltest.SeedApp)
	decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: "d1"},
		Status: clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{{ClusterName: "cluster1"}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(append(objs, app, decision, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}})...).
		WithStatusSubresource(decision).
		WithIndex(&workv1.ManifestWork{}, indexWorkByHubApp, func(o client.Object) []string {
			a := o.GetAnnotations()
			return []string{a[pullnames.AnnotationHubAppNamespace] + "/" + a[pullnames.AnnotationHubAppName]}
		}).
		WithIndex(&clusterv1beta1.PlacementDecision{}, IndexDecisionByCluster, func(o client.Object) []string {
			d := o.(*clusterv1beta1.PlacementDecision)
			var keys []string
			for _, c := range d.Status.Decisions {
				keys = append(keys, d.Namespace+"/"+c.ClusterName)
			}
			return keys
		}).Build()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{Client: c, Cache: readerCache{reader: c}, ApplyTimeout: 5 * time.Minute,
		Now: func() metav1.Time { return metav1.NewTime(now) }}
	return r, c, app
}

// shippedSecrets are the Secrets a ManifestWork carries, by name, with their target.
func shippedSecrets(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	works := &workv1.ManifestWorkList{}
	require.NoError(t, c.List(context.Background(), works))
	require.Len(t, works.Items, 1)
	out := map[string]string{}
	for _, m := range works.Items[0].Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(m.Raw, &u.Object))
		if u.GetKind() == "Secret" {
			assert.Equal(t, contract.GitOpsNamespace, u.GetNamespace(), "staged in the spoke's Argo CD namespace")
			out[u.GetName()] = u.GetAnnotations()[contract.AnnotationCredentialTarget]
		}
	}
	return out
}

// TestTheWorkCarriesTheCredentialsTheApplicationUses: only opted-in credentials that
// match the Application's repoURL travel, staged under a name of the Application's; a
// change of the hub Secret changes the copy, and a credential that stops matching leaves.
func TestTheWorkCarriesTheCredentialsTheApplicationUses(t *testing.T) {
	exact := hubCredential("repo", "repository", "https://EXAMPLE.com/repo", true)
	template := hubCredential("example", "repo-creds", "https://example.com", true)
	notOptedIn := hubCredential("hidden", "repo-creds", "https://example.com/r", false)
	other := hubCredential("other", "repository", "https://other.example/repo", true)
	r, c, app := fakeHubReconciler(t, exact, template, notOptedIn, other)
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)}

	_, err := r.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		repocreds.StagedName("openshift-gitops", app.GetName(), "repo"):    "repo",
		repocreds.StagedName("openshift-gitops", app.GetName(), "example"): "example",
	}, shippedSecrets(t, c))

	// Steady state: nothing changed, nothing written.
	works := &workv1.ManifestWorkList{}
	require.NoError(t, c.List(ctx, works))
	rv := works.Items[0].ResourceVersion
	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	require.NoError(t, c.List(ctx, works))
	assert.Equal(t, rv, works.Items[0].ResourceVersion, "a reconcile with nothing changed writes nothing")

	// The template's owner opts it out: it leaves the work.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(template), template))
	delete(template.Labels, contract.LabelPullCredentials)
	require.NoError(t, c.Update(ctx, template))
	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{repocreds.StagedName("openshift-gitops", app.GetName(), "repo"): "repo"}, shippedSecrets(t, c))
}

// TestHubOnlyCarriesNoCredentials: no agent of ours would materialise them.
func TestHubOnlyCarriesNoCredentials(t *testing.T) {
	r, c, app := fakeHubReconciler(t, hubCredential("repo", "repository", "https://example.com/repo", true))
	r.HubOnly = true
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)})
	require.NoError(t, err)
	assert.Empty(t, shippedSecrets(t, c))
}

// TestACredentialChangeWakesTheApplicationsItServes: the Applications whose sources the
// Secret serves, before or after its change, and no other.
func TestACredentialChangeWakesTheApplicationsItServes(t *testing.T) {
	r, _, app := fakeHubReconciler(t)
	served := hubCredential("repo", "repository", "https://example.com/repo.git", true)
	unrelated := hubCredential("x", "repository", "https://elsewhere.example/repo", true)
	assert.Equal(t, []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(app)}}, r.applicationsUsing(context.Background(), served))
	assert.Empty(t, r.applicationsUsing(context.Background(), unrelated))
	assert.Len(t, r.applicationsUsing(context.Background(), unrelated, served), 1, "old or new")
}
