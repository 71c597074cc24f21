package integration

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// workAgentFinalizer is what OCM's work agent puts on a ManifestWork: the hub keeps a
// deleted ManifestWork until the spoke has acted on its delete option.
const workAgentFinalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"

// acmPullWork is a pull ManifestWork as Red Hat ACM's pull controller writes it:
// <app>-<first 5 of the Application's UID>, its label and annotations, the Application.
func acmPullWork(t *testing.T, cluster, appNS, appName string) *workv1.ManifestWork {
	t.Helper()
	app, err := json.Marshal(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": appName, "namespace": appNS},
		"spec": map[string]any{"project": "default", "destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
			"source": map[string]any{"repoURL": "https://example.com/guestbook.git", "path": "guestbook"}},
	})
	require.NoError(t, err)
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: appName + "-ab12c", Namespace: cluster, Finalizers: []string{workAgentFinalizer},
			Labels:      map[string]string{pullnames.LabelPull: "true"},
			Annotations: map[string]string{pullnames.AnnotationHubAppNamespace: appNS, pullnames.AnnotationHubAppName: appName},
		},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: app}}}}},
	}
}

// TestPullModelTakesOverACMsManifestWorks starts from a hub ACM's pull controller left:
// its ManifestWork of a hub Application on the Application's cluster, a stale one on
// another cluster, and one of an Application gitops-addon does not pull.
func TestPullModelTakesOverACMsManifestWorks(t *testing.T) {
	p := startPullHub(t, false)
	current := acmPullWork(t, "cluster1", "openshift-gitops", "migrated")
	stale := acmPullWork(t, "cluster2", "openshift-gitops", "migrated")
	unrelated := acmPullWork(t, "cluster1", "openshift-gitops", "not-pulled-here")
	for _, w := range []*workv1.ManifestWork{current, stale, unrelated} {
		require.NoError(t, p.c.Create(p.ctx, w))
	}
	get := func(w *workv1.ManifestWork) (*workv1.ManifestWork, error) {
		got := &workv1.ManifestWork{}
		return got, p.c.Get(p.ctx, client.ObjectKeyFromObject(w), got)
	}
	release := func(w *workv1.ManifestWork) {
		got, err := get(w)
		if err == nil {
			got.Finalizers = nil
			require.NoError(t, p.c.Update(p.ctx, got))
		}
	}
	t.Cleanup(func() { release(current); release(stale); release(unrelated) })

	p.application(pullApp("migrated", "openshift-gitops", "cluster1"), nil)
	ours := p.waitWork("cluster1", "openshift-gitops", "migrated", func(*workv1.ManifestWork) bool { return true }, "created beside ACM's")

	t.Run("ACM's ManifestWork on another cluster goes with its spoke Application", func(t *testing.T) {
		require.Eventually(t, func() bool {
			got, err := get(stale)
			return err == nil && !got.DeletionTimestamp.IsZero()
		}, timeout, poll, "the stale ManifestWork is deleted")
		got, err := get(stale)
		require.NoError(t, err)
		assert.Nil(t, got.Spec.DeleteOption, "deleted as ACM would have: the spoke's copy goes too")
	})

	t.Run("ACM's ManifestWork on the Application's cluster stays until ours is applied", func(t *testing.T) {
		got, err := get(current)
		require.NoError(t, err)
		assert.True(t, got.DeletionTimestamp.IsZero(), "ours is not applied yet: ACM's keeps the spoke Application")
		assert.Nil(t, got.Spec.DeleteOption)
	})

	t.Run("once ours is applied, ACM's is deleted with the Orphan policy", func(t *testing.T) {
		require.Eventually(t, func() bool {
			w := &workv1.ManifestWork{}
			if p.c.Get(p.ctx, client.ObjectKeyFromObject(ours), w) != nil {
				return false
			}
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
				Reason: "AppliedManifestWorkComplete", ObservedGeneration: w.Generation})
			return p.c.Status().Update(p.ctx, w) == nil
		}, timeout, poll, "our ManifestWork reported applied")
		require.Eventually(t, func() bool {
			got, err := get(current)
			return err == nil && !got.DeletionTimestamp.IsZero()
		}, timeout, poll, "ACM's ManifestWork deleted")
		got, err := get(current)
		require.NoError(t, err)
		require.NotNil(t, got.Spec.DeleteOption, "the Orphan policy was set before the delete")
		assert.Equal(t, workv1.DeletePropagationPolicyTypeOrphan, got.Spec.DeleteOption.PropagationPolicy,
			"the work agent leaves the spoke Application (same UID) to ours")
		p.waitEvent("openshift-gitops", "migrated", v1alpha1.ReasonACMWorkRetired)
	})

	t.Run("ACM's ManifestWork of another Application is untouched", func(t *testing.T) {
		got, err := get(unrelated)
		require.NoError(t, err)
		assert.True(t, got.DeletionTimestamp.IsZero())
		assert.Nil(t, got.Spec.DeleteOption)
	})

	t.Run("ours is the one ManifestWork left for the Application", func(t *testing.T) {
		release(current)
		release(stale)
		require.Eventually(t, func() bool {
			_, errCurrent := get(current)
			_, errStale := get(stale)
			return apierrors.IsNotFound(errCurrent) && apierrors.IsNotFound(errStale)
		}, timeout, poll, "ACM's ManifestWorks gone once the work agent (here: the test) released them")
		_, err := get(ours)
		assert.NoError(t, err)
	})
}

// TestPullModelTakesOverACMsReport: ACM's MulticlusterApplicationSetReport of an
// ApplicationSet (same name, not ours) becomes ours in place, with our entries.
func TestPullModelTakesOverACMsReport(t *testing.T) {
	p := startPullHub(t, false)
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	require.NoError(t, p.c.Create(p.ctx, appSet))
	acmReport := &v1alpha1.MulticlusterApplicationSetReport{
		ObjectMeta: metav1.ObjectMeta{Namespace: appSet.GetNamespace(), Name: appSet.GetName(),
			Labels: map[string]string{pullnames.LabelHostingAppSetReport: appSet.GetNamespace() + "." + appSet.GetName()}},
		Statuses: v1alpha1.AppConditions{ClusterConditions: []v1alpha1.ClusterCondition{{Cluster: "acm-era-cluster", SyncStatus: "Synced", HealthStatus: "Healthy"}}},
	}
	require.NoError(t, p.c.Create(p.ctx, acmReport))

	p.application(pullApp("guestbook-cluster1", "openshift-gitops", "cluster1"), appSet)
	p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(*workv1.ManifestWork) bool { return true }, "created")
	report := &v1alpha1.MulticlusterApplicationSetReport{}
	require.Eventually(t, func() bool {
		return p.c.Get(p.ctx, client.ObjectKeyFromObject(acmReport), report) == nil &&
			report.Labels[contract.LabelManagedBy] == contract.ManagedByValue
	}, timeout, poll, "ACM's report taken over")
	assert.Equal(t, acmReport.UID, report.UID, "the same report, in place")
	require.Len(t, report.Statuses.ClusterConditions, 1)
	assert.Equal(t, "cluster1", report.Statuses.ClusterConditions[0].Cluster, "our entries replace ACM's")
	require.Len(t, report.OwnerReferences, 1)
	assert.Equal(t, appSet.GetUID(), report.OwnerReferences[0].UID)
}

// olderOCM is the newest OCM API release whose ManifestWork CRD predates feedbackScrapeType
// (older OCM hubs, as many ACM hubs run): the apiserver prunes that field on write.
const olderOCM = "open-cluster-management.io/api@v0.16.0"

// TestPullModelSteadyOnAnOlderManifestWorkCRD: on a hub whose ManifestWork CRD prunes
// feedbackScrapeType, the pull model must not see a difference on every reconcile and
// write forever: zero manager writes over 60 s of triggered reconciles.
func TestPullModelSteadyOnAnOlderManifestWorkCRD(t *testing.T) {
	dir, err := testenv.ModuleDir(olderOCM)
	require.NoError(t, err)
	olderWork := filepath.Join(dir, "work", "v1", "0000_00_work.open-cluster-management.io_manifestworks.crd.yaml")
	var crds []string
	for _, path := range testenv.OCMCRDPaths() {
		if strings.HasSuffix(path, "_manifestworks.crd.yaml") {
			path = olderWork
		}
		crds = append(crds, path)
	}
	p := startPullHubOn(t, false, crds)
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	require.NoError(t, p.c.Create(p.ctx, appSet))
	p.application(pullApp("guestbook-cluster1", "openshift-gitops", "cluster1"), appSet)
	w := p.waitWork("cluster1", "openshift-gitops", "guestbook-cluster1", func(*workv1.ManifestWork) bool { return true }, "created")

	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(schema.GroupVersion(workv1.GroupVersion).WithKind("ManifestWork"))
	require.NoError(t, p.c.Get(p.ctx, client.ObjectKeyFromObject(w), raw))
	configs, _, _ := unstructured.NestedSlice(raw.Object, "spec", "manifestConfigs")
	require.NotEmpty(t, configs)
	for _, c := range configs {
		_, kept, _ := unstructured.NestedString(c.(map[string]any), "feedbackScrapeType")
		require.False(t, kept, "the older CRD prunes feedbackScrapeType: the scenario this test is about")
	}

	p.report(w, map[string]string{feedback.KeyHealth: "Healthy", feedback.KeySync: "Synced"}, nil)
	require.Eventually(t, func() bool {
		h, _, _ := unstructured.NestedString(p.getApp("openshift-gitops", "guestbook-cluster1").Object, "status", "health", "status")
		return h == "Healthy"
	}, timeout, poll, "the spoke's status reached the hub: the controller runs on this CRD")
	p.assertNoWritesWhileTriggering()
}
