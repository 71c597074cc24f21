package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// pullModelRoundTrip installs Argo CD's CRDs on the running hub (the manager starts the
// pull model by itself), generates the seed ApplicationSet's Applications as Argo CD's
// ApplicationSet controller would (the real one arrives with the real-Argo-CD fleet), and
// follows them: ManifestWork per spoke, Application on each spoke applied by OCM's work
// agent, the spoke's status back on the hub and in the report, and removal with the
// ApplicationSet through the hub's garbage collector.
func pullModelRoundTrip(t *testing.T, ctx context.Context, hub *harness.Cluster, spokes map[string]*harness.Spoke, p *install.Product) {
	for _, crd := range testenv.ArgoCDCRDs(t) {
		if err := hub.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "installing %s on the hub", crd.Name)
		}
	}
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	require.Eventually(t, func() bool { return hub.Client.Create(ctx, appSet) == nil }, time.Minute, time.Second,
		"creating the ApplicationSet once its CRD is served")

	// The manager's metrics endpoint counts each Application's propagation (to its
	// ManifestWork applied by the real work agent) and status return once.
	propagated, returned := scrapeCount(t, ctx, p, hubmetrics.PullPropagation), scrapeCount(t, ctx, p, hubmetrics.PullStatusReturn)
	for _, cluster := range []string{vanilla, openshift} {
		require.NoError(t, hub.Client.Create(ctx, generatedApplication(t, appSet, cluster)))
	}

	for _, cluster := range []string{vanilla, openshift} {
		name := "guestbook-" + cluster
		w := &workv1.ManifestWork{}
		require.Eventually(t, func() bool {
			return hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: pullnames.WorkName(contract.GitOpsNamespace, name)}, w) == nil
		}, time.Minute, 500*time.Millisecond, "the ManifestWork of %s", name)
		spokeApp := application(contract.GitOpsNamespace, name)
		require.Eventually(t, func() bool {
			return spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp) == nil
		}, 2*time.Minute, 500*time.Millisecond, "OCM's work agent applies %s on %s", name, cluster)
		server, _, _ := unstructured.NestedString(spokeApp.Object, "spec", "destination", "server")
		assert.Equal(t, pullmodel.InClusterServer, server)
		assert.NotContains(t, spokeApp.GetAnnotations(), pullnames.AnnotationSkipReconcile, "the spoke's Argo CD must reconcile it")

		// What the spoke's Argo CD writes, reported back by the work agent (Watch feedback).
		setSpokeStatus(t, ctx, spokes[cluster], "guestbook-"+cluster, "0123abcd")
	}
	waitHubRevision(t, ctx, hub, "0123abcd")
	waitScrapeCount(t, ctx, p, hubmetrics.PullPropagation, propagated+2)
	waitScrapeCount(t, ctx, p, hubmetrics.PullStatusReturn, returned+2)
	// Positive control for "once": a second status from each spoke, after the same apply,
	// makes the whole round trip to the hub and counts in neither histogram.
	for _, cluster := range []string{vanilla, openshift} {
		setSpokeStatus(t, ctx, spokes[cluster], "guestbook-"+cluster, "4567cdef")
	}
	waitHubRevision(t, ctx, hub, "4567cdef")
	assert.Equal(t, propagated+2, scrapeCount(t, ctx, p, hubmetrics.PullPropagation), "%s counts each Application once", hubmetrics.PullPropagation)
	assert.Equal(t, returned+2, scrapeCount(t, ctx, p, hubmetrics.PullStatusReturn), "%s counts each applied change once", hubmetrics.PullStatusReturn)

	report := &v1alpha1.MulticlusterApplicationSetReport{}
	require.Eventually(t, func() bool {
		return hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "guestbook"}, report) == nil &&
			report.Statuses.Summary.Healthy == "2" && report.Statuses.Summary.Synced == "2"
	}, time.Minute, 500*time.Millisecond, "the report counts both spokes healthy and synced")
	assert.Equal(t, "2", report.Statuses.Summary.Clusters)

	sharedAppProject(t, ctx, hub, spokes[vanilla])

	// The ApplicationSet goes: the hub's garbage collector removes its Applications and
	// its report; their ManifestWorks go, and the work agent removes the spoke Applications.
	require.NoError(t, hub.Client.Delete(ctx, appSet, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(hub.Client.Get(ctx, client.ObjectKeyFromObject(report), &v1alpha1.MulticlusterApplicationSetReport{}))
	}, 2*time.Minute, 500*time.Millisecond, "the report goes with its ApplicationSet")
	for _, cluster := range []string{vanilla, openshift} {
		spokeApp := application(contract.GitOpsNamespace, "guestbook-"+cluster)
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp))
		}, 2*time.Minute, 500*time.Millisecond, "the spoke Application on %s is removed", cluster)
	}
	require.Eventually(t, func() bool {
		works := &workv1.ManifestWorkList{}
		return hub.Client.List(ctx, works, client.MatchingLabels{pullnames.LabelPullWork: "true"}) == nil && len(works.Items) == 0
	}, time.Minute, 500*time.Millisecond, "every pull ManifestWork is gone from the hub")
}

// sharedAppProject: two Applications using one AppProject on one spoke; the project
// arrives with the first and stays while either remains (OCM's work agent keeps a
// resource that another ManifestWork still owns), and goes with the last.
func sharedAppProject(t *testing.T, ctx context.Context, hub *harness.Cluster, spoke *harness.Spoke) {
	project := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: blue, namespace: openshift-gitops}
spec:
  sourceRepos: ["*"]
  destinations: [{server: "https://kubernetes.default.svc", namespace: "blue-*"}]
`), &project.Object))
	require.NoError(t, hub.Client.Create(ctx, project))
	names := []string{"blue-1", "blue-2"}
	for _, name := range names {
		app := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: openshift-gitops
  labels: {apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"}
  annotations: {apps.open-cluster-management.io/ocm-managed-cluster: %s, argocd.argoproj.io/skip-reconcile: "true"}
spec:
  project: blue
  source: {repoURL: "https://github.com/argoproj/argocd-example-apps", path: guestbook}
  destination: {namespace: %s}
`, name, spoke.Name, name)), &app.Object))
		require.NoError(t, hub.Client.Create(ctx, app))
	}
	spokeProject := &unstructured.Unstructured{}
	spokeProject.SetGroupVersionKind(project.GroupVersionKind())
	require.Eventually(t, func() bool {
		return spoke.Client.Get(ctx, client.ObjectKeyFromObject(project), spokeProject) == nil &&
			len(spokeProject.GetOwnerReferences()) == 2
	}, time.Minute, 500*time.Millisecond, "the AppProject reaches the spoke, owned by both ManifestWorks")

	require.NoError(t, hub.Client.Delete(ctx, application(contract.GitOpsNamespace, names[0])))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(spoke.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: names[0]}, application("", "")))
	}, time.Minute, 500*time.Millisecond, "the first Application leaves the spoke")
	// The work agent has let go of the first ManifestWork's hold on the project (its owner
	// reference is gone), and the project stays, held by the second.
	require.Eventually(t, func() bool {
		return spoke.Client.Get(ctx, client.ObjectKeyFromObject(project), spokeProject) == nil &&
			len(spokeProject.GetOwnerReferences()) == 1
	}, time.Minute, 500*time.Millisecond, "the AppProject stays while another Application uses it, owned by its ManifestWork only: %v",
		spokeProject.GetOwnerReferences())

	require.NoError(t, hub.Client.Delete(ctx, application(contract.GitOpsNamespace, names[1])))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(spoke.Client.Get(ctx, client.ObjectKeyFromObject(project), spokeProject))
	}, time.Minute, 500*time.Millisecond, "the AppProject goes with the last Application using it")
	require.NoError(t, hub.Client.Delete(ctx, project))
}

// generatedApplication is the Application Argo CD's ApplicationSet controller makes from
// the seed template for one decided cluster.
func generatedApplication(t *testing.T, appSet *unstructured.Unstructured, cluster string) *unstructured.Unstructured {
	tmpl, _, _ := unstructured.NestedMap(appSet.Object, "spec", "template")
	raw, err := yaml.Marshal(tmpl)
	require.NoError(t, err)
	doc := string(raw)
	for k, v := range map[string]string{"{{name}}": cluster, "{{server}}": fmt.Sprintf("https://%s.example.com", cluster)} {
		doc = strings.ReplaceAll(doc, k, v)
	}
	app := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &app.Object))
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace(appSet.GetNamespace())
	truth := true
	app.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet",
		Name: appSet.GetName(), UID: appSet.GetUID(), Controller: &truth, BlockOwnerDeletion: &truth}})
	return app
}

func application(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1alpha1")
	u.SetKind("Application")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// scrapeCount is the observation count of a histogram on the manager's metrics endpoint,
// as Prometheus scrapes it.
func scrapeCount(t *testing.T, ctx context.Context, p *install.Product, histogram string) int {
	t.Helper()
	n, err := scrapeCountOnce(ctx, p.ManagerMetrics, histogram)
	require.NoError(t, err)
	return n
}

// waitScrapeCount waits until a histogram's count is want (what it counts after is
// checked against a positive control by the caller).
func waitScrapeCount(t *testing.T, ctx context.Context, p *install.Product, histogram string, want int) {
	t.Helper()
	var got int
	require.Eventually(t, func() bool {
		n, err := scrapeCountOnce(ctx, p.ManagerMetrics, histogram)
		got = n
		return err == nil && n >= want
	}, time.Minute, 500*time.Millisecond, "%s counts %d (last scrape: %d)", histogram, want, got)
}

// setSpokeStatus writes, as the spoke's Argo CD would, a Synced/Healthy status at revision
// on a spoke Application (the spoke agent writes its resource summary annotation
// meanwhile: retried on conflict).
func setSpokeStatus(t *testing.T, ctx context.Context, spoke *harness.Spoke, name, revision string) {
	t.Helper()
	spokeApp := application(contract.GitOpsNamespace, name)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := spoke.Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp); err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(spokeApp.Object, map[string]any{
			"health": map[string]any{"status": "Healthy"},
			"sync":   map[string]any{"status": "Synced", "revision": revision},
		}, "status"); err != nil {
			return err
		}
		return spoke.Client.Update(ctx, spokeApp)
	}))
}

// waitHubRevision waits until each spoke's guestbook Application on the hub shows the
// spoke's status at revision.
func waitHubRevision(t *testing.T, ctx context.Context, hub *harness.Cluster, revision string) {
	t.Helper()
	for _, cluster := range []string{vanilla, openshift} {
		hubApp := application(contract.GitOpsNamespace, "guestbook-"+cluster)
		require.Eventually(t, func() bool {
			if hub.Client.Get(ctx, client.ObjectKeyFromObject(hubApp), hubApp) != nil {
				return false
			}
			h, _, _ := unstructured.NestedString(hubApp.Object, "status", "health", "status")
			r, _, _ := unstructured.NestedString(hubApp.Object, "status", "sync", "revision")
			return h == "Healthy" && r == revision
		}, 2*time.Minute, 500*time.Millisecond, "the hub Application of %s shows the spoke's status at %s", cluster, revision)
	}
}

// scrapeReconciles is controller-runtime's count of a controller's reconciles, whatever
// their result, on the manager's metrics endpoint.
func scrapeReconciles(t *testing.T, ctx context.Context, p *install.Product, controller string) int {
	t.Helper()
	body, err := scrapeMetrics(ctx, p.ManagerMetrics)
	require.NoError(t, err)
	total := 0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "controller_runtime_reconcile_total{") || !strings.Contains(line, `controller="`+controller+`"`) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(line[strings.LastIndex(line, " ")+1:]))
		require.NoError(t, err, "a reconcile count: %s", line)
		total += n
	}
	return total
}

func scrapeCountOnce(ctx context.Context, addr, histogram string) (int, error) {
	body, err := scrapeMetrics(ctx, addr)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, histogram+"_count "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("the manager's metrics have no %s_count", histogram)
}

// scrapeMetrics reads the manager's metrics endpoint, as Prometheus scrapes it.
func scrapeMetrics(ctx context.Context, addr string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}
