package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// acmCRD is a GitOpsCluster CRD as a Red Hat ACM release serves it.
type acmCRD struct {
	release string
	// path is the CRD file the apiserver is started with.
	path string
	// conditions: the schema keeps status.conditions (ACM 2.15 and later).
	conditions bool
}

// acmGitOpsClusterCRDs are ACM's GitOpsCluster CRDs in the fixtures
// (acm/crds/gitopsclusters.v1beta1.<release>.yaml), and the one ACM 2.9 to 2.14 serve,
// which the fixtures lack: release-2.15's without spec.gitopsAddon and status.conditions,
// which is release-2.14's (stolostron/multicloud-integrations, release-2.14, 6fd610f) but
// for descriptions.
func acmGitOpsClusterCRDs(t *testing.T) []acmCRD {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(acmFixturesDir(t), "crds", "gitopsclusters.v1beta1.*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "ACM's GitOpsCluster CRDs in the fixtures")
	dir := t.TempDir()
	var crds []acmCRD
	for _, file := range files {
		release := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "gitopsclusters.v1beta1."), ".yaml")
		crd := readFixtureCRD(t, file)
		crds = append(crds, acmCRD{release: release, path: writeCRD(t, dir, release, crd), conditions: true})
		if release != "release-2.15" {
			continue
		}
		schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		spec, status := schema.Properties["spec"], schema.Properties["status"]
		require.Contains(t, spec.Properties, "gitopsAddon")
		require.Contains(t, status.Properties, "conditions")
		delete(spec.Properties, "gitopsAddon")
		delete(status.Properties, "conditions")
		schema.Properties["spec"], schema.Properties["status"] = spec, status
		crds = append(crds, acmCRD{release: "release-2.14 (release-2.15's without gitopsAddon and conditions)", path: writeCRD(t, dir, "release-2.14", crd)})
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].release < crds[j].release })
	return crds
}

// readFixtureCRD reads the CustomResourceDefinition of a fixture file (a comment naming
// its source, then the document).
func readFixtureCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(string(data))))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no CustomResourceDefinition in %s", file)
		}
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if yaml.Unmarshal(doc, crd) == nil && crd.Kind == "CustomResourceDefinition" {
			require.Equal(t, "gitopsclusters.apps.open-cluster-management.io", crd.Name)
			require.Len(t, crd.Spec.Versions, 1)
			return crd
		}
	}
}

func writeCRD(t *testing.T, dir, release string, crd *apiextensionsv1.CustomResourceDefinition) string {
	t.Helper()
	data, err := yaml.Marshal(crd)
	require.NoError(t, err)
	path := filepath.Join(dir, release+".yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// acmGitOpsCluster creates a GitOpsCluster as ACM's examples write it, as YAML (so that it
// holds only the fields written, whatever the CRD's schema).
func (h *hub) acmGitOpsCluster(namespace, name, argoNamespace, placement string) {
	h.t.Helper()
	h.applyYAML(fmt.Sprintf(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: %s, namespace: %s}
spec:
  argoServer: {cluster: notused, argoNamespace: %q}
  placementRef: {apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, name: %s}
`, name, namespace, argoNamespace, placement))
}

// eventRequests counts the Event requests (create, patch) a manager sends, which the
// writeCounter leaves out.
type eventRequests struct{ n atomic.Int64 }

func (e *eventRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/events") {
			e.n.Add(1)
		}
		return rt.RoundTrip(req)
	})
}

// eventsOn counts the Events recorded on a GitOpsCluster, each repeat of a series too.
func eventsOn(h *hub, namespace, name string) int {
	h.t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(h.t, h.c.List(h.ctx, list, client.InNamespace(namespace)))
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind != "GitOpsCluster" || e.Regarding.Name != name {
			continue
		}
		n++
		if e.Series != nil {
			n += int(e.Series.Count) - 1
		}
	}
	return n
}

// annotate sets an annotation on an object by a merge patch, whatever its schema.
func (h *hub) annotate(obj client.Object, key, value string) {
	h.t.Helper()
	h.patchMetadata(obj, "annotations", key, value)
}

// label sets a label on an object by a merge patch, whatever its schema.
func (h *hub) label(obj client.Object, key, value string) {
	h.t.Helper()
	h.patchMetadata(obj, "labels", key, value)
}

func (h *hub) patchMetadata(obj client.Object, field, key, value string) {
	h.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{%q:{%q:%q}}}`, field, key, value)
	require.NoError(h.t, h.c.Patch(h.ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))), "setting %s %s on %T %s", field, key, obj, obj.GetName())
}

// gitOpsClusterRef is a GitOpsCluster to patch, whatever the CRD's schema.
func gitOpsClusterRef(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(appsv1beta1.GroupVersion.WithKind("GitOpsCluster"))
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// TestACMsGitOpsClusterCRDSteadyStateMakesNoWrites runs the manager on a hub whose
// GitOpsCluster CRD is Red Hat ACM's (ACM's installer owns it there, and gitops-addon
// leaves it alone), whose schema lacks status fields the manager writes (all of them:
// observedGeneration and the cluster counts; before 2.15 the conditions too), which the
// apiserver prunes. Two GitOpsClusters converge, one Ready and one whose Placement is
// missing (a Warning Event, and status.phase and message say it, which every ACM schema
// keeps); then reconciles triggered again and again and unrelated objects churning make no
// write and no Event; a status changed by someone else is set right by one write.
func TestACMsGitOpsClusterCRDSteadyStateMakesNoWrites(t *testing.T) {
	for _, crd := range acmGitOpsClusterCRDs(t) {
		t.Run(crd.release, func(t *testing.T) {
			const ns, cluster, placement = "acm-gitops", "acm-spoke", "spokes"
			env := testenv.Start(t, testenv.WithCRDPaths(append(testenv.OCMCRDPaths(), crd.path)...))
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			writes, eventWrites := &writeCounter{}, &eventRequests{}
			cfg := rest.CopyConfig(env.Config)
			cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return writes.wrap(eventWrites.wrap(rt)) }
			runManager(t, ctx, cfg, manager.Options{
				MetricsBindAddress: "0", HealthProbeBindAddress: "0", AgentImage: "quay.io/gitops-addon/gitops-addon:test",
				ArgoNamespaces: []string{ns}, SkipControllerNameValidation: true,
			})
			h := &hub{t: t, ctx: ctx, c: env.Client, writes: writes, env: env}

			h.namespace(ns)
			h.managedCluster(cluster, map[string]string{"product.open-cluster-management.io": "OpenShift"})
			h.placement(ns, placement, cluster)
			for _, gc := range []struct{ name, placement string }{{"ready", placement}, {"no-placement", "missing"}} {
				h.acmGitOpsCluster(ns, gc.name, ns, gc.placement)
			}

			phase := func(h *hub, name string) string { return h.gitOpsCluster(ns, name).Status.Phase }
			require.Eventually(t, func() bool { return phase(h, "ready") == "successful" && phase(h, "no-placement") == "failed" }, timeout, poll,
				"the GitOpsClusters converge: status.phase")
			if crd.conditions {
				h.waitCondition(ns, "ready", appsv1beta1.ConditionReady, metav1.ConditionTrue, appsv1beta1.ReasonReady)
			}
			require.Eventually(t, func() bool { return hasWarningEvent(h, ns, "no-placement", appsv1beta1.ReasonPlacementNotFound) }, timeout, poll)

			t.Run("the apiserver prunes what the schema lacks; status.phase and message say what is wrong", func(t *testing.T) {
				h := h.with(t)
				for _, name := range []string{"ready", "no-placement"} {
					u := gitOpsClusterRef(ns, name)
					require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(u), u))
					status, _, _ := unstructured.NestedMap(u.Object, "status")
					assert.NotContains(t, status, "observedGeneration", name)
					assert.NotContains(t, status, "selectedClusters", name)
					if crd.conditions {
						assert.Contains(t, status, "conditions", name)
					} else {
						assert.NotContains(t, status, "conditions", name)
					}
				}
				message := h.gitOpsCluster(ns, "no-placement").Status.Message
				assert.Contains(t, message, `PlacementResolved: Placement "missing" not found in namespace "acm-gitops". Fix: `)
				assert.Contains(t, h.gitOpsCluster(ns, "ready").Status.Message, "All clusters are registered")
			})

			// steady runs trigger and asserts that the manager made no write and recorded
			// no Event meanwhile.
			steady := func(t *testing.T, trigger func(h *hub)) {
				h := h.with(t)
				h.waitQuiet(2 * time.Second) // what came before has settled
				writesBefore, eventRequestsBefore := h.writes.count(), eventWrites.n.Load()
				eventsBefore := map[string]int{"ready": eventsOn(h, ns, "ready"), "no-placement": eventsOn(h, ns, "no-placement")}
				reconcilesBefore := reconcileTotal(t, gitopscluster.ControllerName)
				trigger(h)
				h.waitQuiet(time.Second) // an Event is sent by a goroutine of its own
				assert.Empty(t, h.writes.since(writesBefore), "the manager's write requests (a GitOpsCluster's status: PUT .../status)")
				assert.Zero(t, eventWrites.n.Load()-eventRequestsBefore, "the manager's Event requests")
				for name, n := range eventsBefore {
					assert.Equal(t, n, eventsOn(h, ns, name), "Events on %s", name)
				}
				assert.Greater(t, reconcileTotal(t, gitopscluster.ControllerName), reconcilesBefore, "the triggers did reconcile")
			}

			t.Run("no write and no Event while reconciles are triggered and unrelated objects churn", func(t *testing.T) {
				steady(t, func(h *hub) {
					for i := range 3 {
						value := fmt.Sprint(i)
						// OCM's addon-health label flips on the ManagedCluster: wakes nothing.
						mc := &clusterv1.ManagedCluster{}
						require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Name: cluster}, mc))
						h.touch(mc, func() {
							metav1.SetMetaDataLabel(&mc.ObjectMeta, "feature.open-cluster-management.io/addon-other", []string{"available", "unhealthy"}[i%2])
						})
						// Each of these wakes a GitOpsCluster, and is waited for until it did.
						h.triggerReconcile(func() {
							h.annotate(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: placement}}, "example.com/touched", value)
						})
						h.triggerReconcile(func() {
							h.annotate(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gitopscluster.ClusterSecretName(cluster)}},
								"other-tool.example.com/seen", value)
						})
						for _, name := range []string{"ready", "no-placement"} {
							h.triggerReconcile(func() { h.annotate(gitOpsClusterRef(ns, name), "example.com/touched", value) })
						}
					}
				})
			})

			t.Run("a status changed by someone else is set right by one write, without an Event", func(t *testing.T) {
				h := h.with(t)
				h.waitQuiet(2 * time.Second)
				u := gitOpsClusterRef(ns, "no-placement")
				require.NoError(t, h.c.Status().Patch(h.ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"edited"}}`))))
				writesBefore, eventsBefore := h.writes.count(), eventsOn(h, ns, "no-placement")
				h.triggerReconcile(func() { h.annotate(gitOpsClusterRef(ns, "no-placement"), "example.com/touched", "edited") })
				h.waitQuiet(time.Second)
				assert.Equal(t, []string{"PUT /apis/apps.open-cluster-management.io/v1beta1/namespaces/acm-gitops/gitopsclusters/no-placement/status"},
					h.writes.since(writesBefore))
				assert.Equal(t, "failed", phase(h, "no-placement"))
				assert.Equal(t, eventsBefore, eventsOn(h, ns, "no-placement"), "what the manager found did not change")
				steady(t, func(h *hub) {
					h.triggerReconcile(func() { h.annotate(gitOpsClusterRef(ns, "no-placement"), "example.com/touched", "again") })
				})
			})
		})
	}
}
