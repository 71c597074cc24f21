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

func TestSpokeApplication(t *testing.T) {
	tests := []struct {
		name          string
		edit          func(*unstructured.Unstructured)
		req           spokeRequest
		check         func(t *testing.T, app *unstructured.Unstructured)
		wantClearName string
	}{
		{
			name: "seed Application: in-cluster destination, hub-only metadata stripped, the rest kept",
			check: func(t *testing.T, app *unstructured.Unstructured) {
				assert.Equal(t, "openshift-gitops", app.GetNamespace())
				assert.Equal(t, "guestbook-cluster1", app.GetName())
				assert.Equal(t, map[string]string{"team": "blue"}, app.GetLabels())
				assert.Equal(t, map[string]string{"note": "kept"}, app.GetAnnotations())
				assert.Equal(t, []string{"resources-finalizer.argocd.argoproj.io"}, app.GetFinalizers())
				assert.Empty(t, app.GetOwnerReferences())
				server, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "server")
				assert.Equal(t, InClusterServer, server)
				ns, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "namespace")
				assert.Equal(t, "guestbook", ns)
				prune, _, _ := unstructured.NestedBool(app.Object, "spec", "syncPolicy", "automated", "prune")
				assert.True(t, prune)
				_, hasStatus := app.Object["status"]
				assert.False(t, hasStatus)
			},
		},
		{
			name: "destination name cleared and reported",
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedMap(u.Object, map[string]any{"name": "cluster1", "namespace": "guestbook"}, "spec", "destination")
			},
			wantClearName: "cluster1",
			check: func(t *testing.T, app *unstructured.Unstructured) {
				dest, _, _ := unstructured.NestedMap(app.Object, "spec", "destination")
				assert.Equal(t, map[string]any{"server": InClusterServer, "namespace": "guestbook"}, dest)
			},
		},
		{
			name: "spoke namespace from the annotation",
			edit: func(u *unstructured.Unstructured) {
				a := u.GetAnnotations()
				a[pullnames.AnnotationAppNamespace] = "argocd"
				u.SetAnnotations(a)
			},
			check: func(t *testing.T, app *unstructured.Unstructured) {
				assert.Equal(t, "argocd", app.GetNamespace())
				assert.NotContains(t, app.GetAnnotations(), pullnames.AnnotationAppNamespace)
			},
		},
		{
			name: "operation and refresh stay on the hub unless requested",
			edit: withOperationAndRefresh,
			check: func(t *testing.T, app *unstructured.Unstructured) {
				assert.NotContains(t, app.Object, "operation")
				assert.NotContains(t, app.GetAnnotations(), pullnames.AnnotationRefresh)
			},
		},
		{
			name: "operation and refresh shipped when requested",
			edit: withOperationAndRefresh,
			req:  spokeRequest{operation: true, refresh: true},
			check: func(t *testing.T, app *unstructured.Unstructured) {
				rev, _, _ := unstructured.NestedString(app.Object, "operation", "sync", "revision")
				assert.Equal(t, "abc123", rev)
				assert.Equal(t, "hard", app.GetAnnotations()[pullnames.AnnotationRefresh])
			},
		},
		{
			name: "no destination at all gets one",
			edit: func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "destination") },
			check: func(t *testing.T, app *unstructured.Unstructured) {
				server, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "server")
				assert.Equal(t, InClusterServer, server)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := pulltest.App(pulltest.SeedApp)
			if tt.edit != nil {
				tt.edit(hub)
			}
			before := hub.DeepCopy()
			app, cleared := spokeApplication(hub, tt.req)
			assert.Equal(t, tt.wantClearName, cleared)
			tt.check(t, app)
			assert.Equal(t, before, hub, "the hub Application must not be modified")
		})
	}
}

func withOperationAndRefresh(u *unstructured.Unstructured) {
	u.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "abc123"}}
	a := u.GetAnnotations()
	a[pullnames.AnnotationRefresh] = "hard"
	u.SetAnnotations(a)
}

func TestDesiredWork(t *testing.T) {
	hub := pulltest.App(pulltest.SeedApp)
	project := pulltest.App(`{apiVersion: argoproj.io/v1alpha1, kind: AppProject, metadata: {name: blue, namespace: openshift-gitops, resourceVersion: "7", uid: u1}, spec: {sourceRepos: ["*"]}}`)
	_ = unstructured.SetNestedField(hub.Object, "blue", "spec", "project")
	w, _, err := desiredWork(workPlan{hub: hub, cluster: "cluster1", project: project,
		baselines: map[string]string{pullnames.AnnotationOperationBaseline: ""}})
	require.NoError(t, err)
	assert.Equal(t, "cluster1", w.Namespace)
	assert.Equal(t, pullnames.WorkName("openshift-gitops", "guestbook-cluster1"), w.Name)
	assert.Equal(t, "true", w.Labels[pullnames.LabelPullWork])
	assert.Equal(t, "true", w.Labels[pullnames.LabelApplicationSet])
	assert.Equal(t, "openshift-gitops/guestbook", w.Annotations[pullnames.AnnotationHostingAppSet])
	assert.Equal(t, "1111-2222", w.Annotations[pullnames.AnnotationHostingAppSetUID])
	assert.Equal(t, "guestbook-cluster1", w.Annotations[pullnames.AnnotationHubAppName])
	assert.Contains(t, w.Annotations, pullnames.AnnotationOperationBaseline)
	require.Len(t, w.Spec.Workload.Manifests, 2)
	assert.Contains(t, string(w.Spec.Workload.Manifests[0].Raw), `"kind":"AppProject"`)
	assert.NotContains(t, string(w.Spec.Workload.Manifests[0].Raw), "resourceVersion")
	assert.Contains(t, string(w.Spec.Workload.Manifests[1].Raw), `"kind":"Application"`)
	require.Len(t, w.Spec.ManifestConfigs, 2)
	assert.Len(t, w.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths, len(feedback.PathsFor(hub)))
	assert.Equal(t, "blue", w.Spec.ManifestConfigs[1].ResourceIdentifier.Name)

	t.Run("an identical desired work does not differ", func(t *testing.T) {
		again, _, err := desiredWork(workPlan{hub: hub, cluster: "cluster1", project: project,
			baselines: map[string]string{pullnames.AnnotationOperationBaseline: ""}})
		require.NoError(t, err)
		stored := again.DeepCopy()
		stored.Labels["other"] = "kept"
		stored.Annotations["other"] = "kept"
		assert.False(t, workDiffers(stored, w))
	})
	t.Run("feedbackScrapeType pruned by an older ManifestWork CRD does not differ; another value does", func(t *testing.T) {
		pruned := w.DeepCopy()
		for i := range pruned.Spec.ManifestConfigs {
			pruned.Spec.ManifestConfigs[i].FeedbackScrapeType = ""
		}
		assert.False(t, workDiffers(pruned, w), "the hub cannot keep the field: no write on every reconcile")
		other := w.DeepCopy()
		other.Spec.ManifestConfigs[0].FeedbackScrapeType = workv1.FeedbackPollType
		assert.True(t, workDiffers(other, w), "a stored Poll where Watch is wanted is a real difference")
	})
	t.Run("a spec change differs", func(t *testing.T) {
		changed := hub.DeepCopy()
		_ = unstructured.SetNestedField(changed.Object, "v2", "spec", "source", "targetRevision")
		again, _, _ := desiredWork(workPlan{hub: changed, cluster: "cluster1", project: project})
		assert.True(t, workDiffers(w, again))
	})
	t.Run("a dropped baseline differs, and merging removes it but keeps foreign annotations", func(t *testing.T) {
		again, _, _ := desiredWork(workPlan{hub: hub, cluster: "cluster1", project: project})
		assert.True(t, workDiffers(w, again))
		stored := w.DeepCopy()
		stored.Annotations["other"] = "kept"
		mergeInto(stored, again)
		assert.NotContains(t, stored.Annotations, pullnames.AnnotationOperationBaseline)
		assert.Equal(t, "kept", stored.Annotations["other"])
		assert.False(t, workDiffers(stored, again))
	})
}

// TestSameJSON: manifests are compared as JSON values, whatever their encoding.
func TestSameJSON(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"the same bytes", `{"kind":"Application","spec":{"project":"default"}}`, `{"kind":"Application","spec":{"project":"default"}}`, true},
		{"keys in another order, other spacing", `{"kind":"Application","spec":{"project":"default"}}`, `{ "spec": {"project": "default"}, "kind": "Application" }`, true},
		{"numbers written differently", `{"replicas":1}`, `{"replicas":1.0}`, true},
		{"another value", `{"spec":{"project":"default"}}`, `{"spec":{"project":"blue"}}`, false},
		{"a field more", `{"spec":{"project":"default"}}`, `{"spec":{"project":"default","source":{}}}`, false},
		{"unreadable", `{"spec":`, `{"spec":{}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sameJSON([]byte(tt.a), []byte(tt.b)))
			assert.Equal(t, tt.want, sameJSON([]byte(tt.b), []byte(tt.a)))
		})
	}
}
