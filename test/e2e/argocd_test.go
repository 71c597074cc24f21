package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeguard"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/fakeroute"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// bare is a managed cluster without the gitops addon.
const bare = "bare"

// argoFleet is a fleet with gitops-addon and real Argo CD on the hub and both spokes.
type argoFleet struct {
	f      *harness.Fleet
	p      *install.Product
	spokes map[string]*harness.Spoke
	argo   *argocd.Fleet
	// routes serves route.openshift.io/v1 on the OpenShift-like spoke.
	routes *fakeroute.Server
	// server is the hub's argocd-server.
	server *argocd.Server
}

// startArgoFleet starts the hub and the spokes, installs gitops-addon with the seed
// GitOpsCluster over vanilla and openshift, and runs the hub's Argo CD, each of their
// GitOps operators and the Argo CD it makes.
func startArgoFleet(t *testing.T, ctx context.Context) *argoFleet {
	if missing := argocd.MissingBinaries(testenv.BinDir()); len(missing) > 0 {
		t.Fatalf("%v missing: run `make e2e-env`, which builds Argo CD and the GitOps operator and installs redis-server and git", missing)
	}
	// With the real argocd-agent, its spokes get a node (see argoCDAgentInterop): the
	// fleet is then a RealPods one.
	agentBinary, err := argocd.AgentBinary()
	require.NoError(t, err)
	a := &argoFleet{spokes: map[string]*harness.Spoke{}}
	if agentBinary != "" {
		a.f = startRealPodFleet(t)
	} else {
		a.f = harness.StartForTest(t, harness.Options{})
	}
	binary, err := install.BuildBinary(ctx, t.TempDir())
	require.NoError(t, err)
	// bare and edge join the hub without the gitops addon (the Argo CD Agent subtest
	// gives it to them).
	spokes, err := a.f.AddSpokes(ctx, vanilla, openshift, bare, edge)
	require.NoError(t, err)
	for _, s := range spokes {
		a.spokes[s.Name] = s
	}
	a.routes, err = install.MakeOpenShiftLike(ctx, a.f.Hub, a.spokes[openshift])
	require.NoError(t, err)
	t.Cleanup(a.routes.Stop)

	a.p, err = install.OnHub(ctx, a.f, binary)
	require.NoError(t, err)
	require.NoError(t, a.p.StartManager(ctx))
	require.NoError(t, install.ApplySeed(ctx, a.f.Hub))
	for _, name := range []string{vanilla, openshift} {
		require.NoError(t, install.SelectCluster(ctx, a.f.Hub, name, true))
	}
	require.NoError(t, <-startAgentsWhenDelivered(ctx, a.p, map[string]*harness.Spoke{vanilla: a.spokes[vanilla], openshift: a.spokes[openshift]}))
	a.argo, err = argocd.Start(ctx, a.f, a.p.Binary, a.spokes[vanilla], a.spokes[openshift])
	require.NoError(t, err)
	showTreesOnTheHub(t, ctx, a)
	return a
}

// showTreesOnTheHub has the pulled Applications' trees shown on the hub and runs its
// argocd-server.
func showTreesOnTheHub(t *testing.T, ctx context.Context, a *argoFleet) {
	var err error
	a.server, err = a.argo.ShowTreesOnTheHub(ctx, a.f, a.p, os.Getenv(EnvArgoCDWithUI))
	require.NoError(t, err)
}

// TestArgoCD runs the seed's pull-model ApplicationSet and its failure modes with real
// Argo CD: the hub's ApplicationSet controller generates the Applications from the
// acm-placement ConfigMap, gitops-addon carries them to the spokes, each spoke's Argo CD
// (made by the real GitOps operator from the delivered ArgoCD CR) syncs them with the
// argocd-platform-extensions allowlist, and their status comes back to the hub.
//
// The fleet and its Argo CDs are started once and shared. Each subtest sets up what it
// needs (those that read the seed's guestbook first wait for it with seedSynced), so any
// one runs alone: go test ./test/e2e -run 'TestArgoCD/<its name>'. The exception is the
// last, "vanilla leaves", a scenario whose steps run in order.
func TestArgoCD(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a := startArgoFleet(t, ctx)

	appSet := seedApplicationSet(t, a.argo, "guestbook")
	require.NoError(t, a.f.Hub.Client.Create(ctx, appSet))
	// seedSynced waits until the seed's guestbook Applications are Synced/Healthy on both
	// spokes and on the hub: at once, after the first subtest.
	seedSynced := func(t *testing.T) {
		t.Helper()
		for _, cluster := range []string{vanilla, openshift} {
			waitAppStatus(t, ctx, a.spokes[cluster].Cluster, "guestbook-"+cluster, "Synced", "Healthy", 5*time.Minute)
			waitAppStatus(t, ctx, a.f.Hub, "guestbook-"+cluster, "Synced", "Healthy", 2*time.Minute)
		}
	}

	t.Run("the seed ApplicationSet syncs on both spokes and the hub shows Synced/Healthy", func(t *testing.T) {
		for _, cluster := range []string{vanilla, openshift} {
			name := "guestbook-" + cluster
			require.Eventually(t, func() bool {
				return exists(ctx, a.f.Hub.Client, application("", ""), contract.GitOpsNamespace+"/"+name)
			}, 2*time.Minute, time.Second, "the ApplicationSet controller generates %s", name)
			require.Eventually(t, func() bool {
				return exists(ctx, a.f.Hub.Client, &workv1.ManifestWork{}, cluster+"/"+pullnames.WorkName(contract.GitOpsNamespace, name))
			}, time.Minute, time.Second, "the ManifestWork of %s", name)
			waitAppStatus(t, ctx, a.spokes[cluster].Cluster, name, "Synced", "Healthy", 3*time.Minute)
			assert.True(t, exists(ctx, a.spokes[cluster].Client, &corev1.ConfigMap{}, "guestbook/guestbook-ui"), "the application's ConfigMap on %s", cluster)
		}
		for _, cluster := range []string{vanilla, openshift} {
			waitAppStatus(t, ctx, a.f.Hub, "guestbook-"+cluster, "Synced", "Healthy", 2*time.Minute)
		}
		report := &v1alpha1.MulticlusterApplicationSetReport{}
		require.Eventually(t, func() bool {
			return a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "guestbook"}, report) == nil &&
				report.Statuses.Summary.Healthy == "2" && report.Statuses.Summary.Synced == "2"
		}, time.Minute, time.Second, "the report counts both spokes healthy and synced: %+v", report.Statuses.Summary)
		assert.Equal(t, "2", report.Statuses.Summary.Clusters)
		assert.False(t, exists(ctx, a.f.Hub.Client, &corev1.Namespace{}, "guestbook"), "nothing of the application is deployed on the hub")
	})

	t.Run("each spoke's resources with their health reach the report and the hub Application, without OCM Search", func(t *testing.T) {
		seedSynced(t)
		for _, cluster := range []string{vanilla, openshift} {
			waitApp(t, ctx, a.f.Hub, contract.GitOpsNamespace, "guestbook-"+cluster, 2*time.Minute, func(app *unstructured.Unstructured) bool {
				return slices.Equal(hubResources(app), []string{"ConfigMap guestbook/guestbook-ui Synced", "Secret guestbook/guestbook-db Synced",
					"Service guestbook/guestbook-ui Synced Healthy"})
			}, "want status.resources: the ConfigMap, the Secret and the Healthy Service (Argo CD has no health check for the first two)")
		}
		report := waitReport(t, ctx, a.f.Hub, "guestbook", func(r *v1alpha1.MulticlusterApplicationSetReport) bool {
			if len(r.Statuses.ClusterConditions) != 2 {
				return false
			}
			for _, c := range r.Statuses.ClusterConditions {
				if !slices.Equal(reportResources(c), []string{"ConfigMap guestbook/guestbook-ui Synced ", "Secret guestbook/guestbook-db Synced ",
					"Service guestbook/guestbook-ui Synced Healthy"}) || c.ResourceCount == nil || *c.ResourceCount != 3 {
					return false
				}
			}
			return true
		}, "each cluster's ConfigMap, Secret and Service with their health")
		for _, c := range report.Statuses.ClusterConditions {
			t.Logf("report, cluster %s: %v", c.Cluster, reportResources(c))
		}
		var refs []string
		for _, r := range report.Statuses.Resources {
			refs = append(refs, r.Kind+" "+r.Namespace+"/"+r.Name)
		}
		assert.Equal(t, []string{"ConfigMap guestbook/guestbook-ui", "Secret guestbook/guestbook-db", "Service guestbook/guestbook-ui"}, refs,
			"ACM's statuses.resources: the ApplicationSet's resources, once")
	})

	t.Run("the hub's argocd-server draws each pulled Application's resource tree as its spoke's Argo CD keeps it", func(t *testing.T) {
		seedSynced(t)
		resourceTreeScenario(t, ctx, a)
	})

	t.Run("the hub's Argo CD UI, in a real browser, draws each pulled Application's tree", func(t *testing.T) {
		seedSynced(t)
		hubUIScenario(t, ctx, a)
	})

	t.Run("the real GitOps operator reconciles the delivered ArgoCD CR without errors on both spokes", func(t *testing.T) {
		for _, cluster := range []string{vanilla, openshift} {
			var reconciled map[string]any
			ok := assert.Eventually(t, func() bool {
				cr := argoCD()
				if a.spokes[cluster].Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName}, cr) != nil {
					return false
				}
				conditions, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
				for _, c := range conditions {
					if m, _ := c.(map[string]any); m["type"] == "Reconciled" {
						reconciled = m
					}
				}
				return reconciled != nil && reconciled["status"] == "True"
			}, time.Minute, time.Second)
			require.True(t, ok, "ArgoCD %s/%s on %s: Reconciled condition %v", contract.GitOpsNamespace, contract.ArgoCDName, cluster, reconciled)
		}
	})

	t.Run("drift: an edit on the spoke is reverted by the spoke's Argo CD, and the hub does not fight", func(t *testing.T) {
		seedSynced(t)
		spoke := a.spokes[vanilla].Client
		// Start from a steady hub: the GitOpsCluster's own status settles as the addons
		// become Available, which has nothing to do with the drift.
		require.Eventually(t, func() bool {
			gc := &appsv1beta1.GitOpsCluster{}
			return a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "gitops-managed"}, gc) == nil &&
				meta.IsStatusConditionTrue(gc.Status.Conditions, appsv1beta1.ConditionReady)
		}, 3*time.Minute, time.Second, "the seed GitOpsCluster is Ready")
		since := time.Now()
		cm := &corev1.ConfigMap{}
		require.NoError(t, spoke.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: "guestbook-ui"}, cm))
		inGit := cm.Data["color"]
		cm.Data["color"] = "red"
		require.NoError(t, spoke.Update(ctx, cm))
		require.Eventually(t, func() bool {
			return spoke.Get(ctx, client.ObjectKeyFromObject(cm), cm) == nil && cm.Data["color"] == inGit
		}, 2*time.Minute, time.Second, "self-heal restores the ConfigMap's %q", inGit)
		t.Logf("reverted %v after the edit", time.Since(since).Round(time.Second))
		waitAppStatus(t, ctx, a.f.Hub, "guestbook-"+vanilla, "Synced", "Healthy", time.Minute)
		writes, err := a.f.Hub.Writes(managerUser(), since)
		require.NoError(t, err)
		for _, w := range writes {
			// The hub Application mirrors the spoke's status (OutOfSync, then Synced again);
			// anything else would be the manager pushing back.
			if w.ObjectRef != nil && (w.ObjectRef.Resource == "applications" || w.ObjectRef.Resource == "multiclusterapplicationsetreports") {
				continue
			}
			t.Errorf("the manager wrote while the spoke healed: %s", w)
		}
	})

	t.Run("a new Git commit: its revision reaches the hub Application", func(t *testing.T) {
		seedSynced(t)
		files := map[string]string{"guestbook/configmap.yaml": strings.ReplaceAll(argocd.Apps["guestbook/configmap.yaml"], "color: blue", "color: green")}
		sha, err := a.argo.Repo.Commit("guestbook turns green", files)
		require.NoError(t, err)
		for _, cluster := range []string{vanilla, openshift} {
			require.Eventually(t, func() bool {
				app := application(contract.GitOpsNamespace, "guestbook-"+cluster)
				if a.f.Hub.Client.Get(ctx, client.ObjectKeyFromObject(app), app) != nil {
					return false
				}
				rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
				s, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
				return rev == sha && s == "Synced"
			}, 3*time.Minute, time.Second, "the hub Application of %s shows revision %s", cluster, sha)
			cm := &corev1.ConfigMap{}
			require.NoError(t, a.spokes[cluster].Client.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: "guestbook-ui"}, cm))
			assert.Equal(t, "green", cm.Data["color"], "the commit is deployed on %s", cluster)
		}
	})

	t.Run("RBAC: a kind outside the allowlist fails to sync with the forbidden error on the hub; extraAPIGroups fixes it without a restart", func(t *testing.T) {
		prio := seedApplicationSet(t, a.argo, "priority")
		prio.SetName("priority")
		require.NoError(t, unstructured.SetNestedField(prio.Object, "priority-{{name}}", "spec", "template", "metadata", "name"))
		require.NoError(t, a.f.Hub.Client.Create(ctx, prio))
		for _, cluster := range []string{vanilla, openshift} {
			last := waitAppSays(t, ctx, a.f.Hub, "priority-"+cluster, "forbidden", 3*time.Minute)
			t.Logf("hub Application priority-%s: %s", cluster, last)
		}
		report := &v1alpha1.MulticlusterApplicationSetReport{}
		require.Eventually(t, func() bool {
			if a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "priority"}, report) != nil {
				return false
			}
			forbidden := 0
			for _, c := range report.Statuses.ClusterConditions {
				for _, cond := range c.Conditions {
					if strings.Contains(cond.Message, "forbidden") {
						forbidden++
					}
				}
			}
			return forbidden == 2
		}, time.Minute, time.Second, "the report names the forbidden error on both clusters: %+v", report.Statuses)

		for _, cluster := range []string{vanilla, openshift} {
			require.NoError(t, install.SetCustomizedVariable(ctx, a.f.Hub, cluster, "extraAPIGroups", "scheduling.k8s.io"))
		}
		for _, cluster := range []string{vanilla, openshift} {
			waitAppStatus(t, ctx, a.f.Hub, "priority-"+cluster, "Synced", "Healthy", 5*time.Minute)
		}
		// Synced: the PriorityClass is now one of the resources the hub shows.
		for _, cluster := range []string{vanilla, openshift} {
			waitApp(t, ctx, a.f.Hub, contract.GitOpsNamespace, "priority-"+cluster, time.Minute, func(app *unstructured.Unstructured) bool {
				return slices.Equal(hubResources(app), []string{"PriorityClass /team-critical Synced"})
			}, "want the PriorityClass Synced in status.resources")
		}
	})

	t.Run("a broken resource: the Deployment that cannot run is Degraded with its message in the report and on the hub; fixed, cleared", func(t *testing.T) {
		seedSynced(t)
		// No kubelet runs the pods: kube-controller-manager marks the rollout past its
		// deadline, and Argo CD calls the Deployment Degraded, as it would an image that
		// cannot be pulled.
		broken := map[string]string{"guestbook/deployment.yaml": unrunnableDeployment("guestbook-web")}
		_, err := a.argo.Repo.Commit("guestbook gets a Deployment that cannot run", broken)
		require.NoError(t, err)
		// Whatever happens here, the guestbook the later subtests use goes back to its three resources.
		defer func() {
			_, err := a.argo.Repo.Commit("guestbook without its Deployment", map[string]string{"guestbook/deployment.yaml": ""})
			assert.NoError(t, err)
		}()
		for _, cluster := range []string{vanilla, openshift} {
			waitApp(t, ctx, a.f.Hub, contract.GitOpsNamespace, "guestbook-"+cluster, 3*time.Minute, func(app *unstructured.Unstructured) bool {
				return slices.ContainsFunc(hubResourceStatuses(app), func(r map[string]any) bool {
					h, _ := r["health"].(map[string]any)
					msg, _ := h["message"].(string)
					return r["kind"] == "Deployment" && h["status"] == "Degraded" && strings.Contains(msg, "progress deadline")
				})
			}, "want the Deployment Degraded with its message in status.resources")
		}
		report := waitReport(t, ctx, a.f.Hub, "guestbook", func(r *v1alpha1.MulticlusterApplicationSetReport) bool {
			degraded := 0
			for _, c := range r.Statuses.ClusterConditions {
				for _, res := range c.Resources {
					if res.Kind == "Deployment" && res.HealthStatus == "Degraded" && strings.Contains(res.Message, "progress deadline") &&
						slices.Contains(conditionTypesOf(c.Conditions), "ResourceError") {
						degraded++
					}
				}
			}
			return degraded == 2
		}, "the Deployment Degraded with its message, and a ResourceError, on both clusters")
		for _, c := range report.Statuses.ClusterConditions {
			t.Logf("report, cluster %s: %v %v", c.Cluster, reportResources(c), c.Conditions)
		}
		// The hub's argocd-server draws the Deployment's children (no kubelet runs its Pod
		// here: TestRealPods draws the Pods).
		for _, cluster := range []string{vanilla, openshift} {
			nodes := waitHubTree(t, ctx, a, cluster, func(spoke []string) bool {
				return slices.ContainsFunc(spoke, func(n string) bool { return strings.HasPrefix(n, "ReplicaSet guestbook/guestbook-web-") })
			})
			assert.True(t, slices.ContainsFunc(nodes, func(n apptree.Node) bool {
				return n.Kind == "ReplicaSet" && len(n.ParentRefs) == 1 && n.ParentRefs[0].Kind == "Deployment"
			}), "the ReplicaSet is drawn under its Deployment")
		}

		// Fixed in Git (scaled to zero, a new template): Healthy again, and nothing left of the failure.
		fixed := map[string]string{"guestbook/deployment.yaml": strings.ReplaceAll(strings.ReplaceAll(broken["guestbook/deployment.yaml"],
			"replicas: 1", "replicas: 0"), "does-not-exist", "v2")}
		_, err = a.argo.Repo.Commit("guestbook's Deployment scaled to zero", fixed)
		require.NoError(t, err)
		waitReport(t, ctx, a.f.Hub, "guestbook", func(r *v1alpha1.MulticlusterApplicationSetReport) bool {
			for _, c := range r.Statuses.ClusterConditions {
				if len(c.Conditions) > 0 || !slices.Contains(reportResources(c), "Deployment guestbook/guestbook-web Synced Healthy") {
					return false
				}
			}
			return len(r.Statuses.ClusterConditions) == 2
		}, "the Deployment Healthy, no ResourceError left")
		for _, cluster := range []string{vanilla, openshift} {
			waitAppStatus(t, ctx, a.f.Hub, "guestbook-"+cluster, "Synced", "Healthy", 2*time.Minute)
		}
	})

	t.Run("a two-source Application: each source's revision reaches the hub (status.sync.revisions)", func(t *testing.T) {
		// A second path of namespaced resources only: a cluster-scoped one (the PriorityClass)
		// would be shared with the priority Applications and never settle.
		_, err := a.argo.Repo.Commit("settings for the two-source Application", map[string]string{"settings/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: two-sources}
`})
		require.NoError(t, err)
		app := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: two-sources
  namespace: openshift-gitops
  labels: {apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"}
  annotations: {apps.open-cluster-management.io/ocm-managed-cluster: %s, argocd.argoproj.io/skip-reconcile: "true"}
spec:
  project: default
  sources:
  - {repoURL: %q, path: guestbook, targetRevision: HEAD}
  - {repoURL: %q, path: settings, targetRevision: HEAD}
  destination: {server: "https://kubernetes.default.svc", namespace: two-sources}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, vanilla, a.argo.Repo.URL(), a.argo.Repo.URL())), &app.Object))
		require.NoError(t, a.f.Hub.Client.Create(ctx, app))
		waitAppStatus(t, ctx, a.spokes[vanilla].Cluster, "two-sources", "Synced", "Healthy", 3*time.Minute)
		spoke := application(contract.GitOpsNamespace, "two-sources")
		require.NoError(t, a.spokes[vanilla].Client.Get(ctx, client.ObjectKeyFromObject(spoke), spoke))
		want, _, _ := unstructured.NestedStringSlice(spoke.Object, "status", "sync", "revisions")
		require.Len(t, want, 2, "the spoke's Argo CD reports one revision per source")
		waitApp(t, ctx, a.f.Hub, contract.GitOpsNamespace, "two-sources", 2*time.Minute, func(app *unstructured.Unstructured) bool {
			got, _, _ := unstructured.NestedStringSlice(app.Object, "status", "sync", "revisions")
			return slices.Equal(got, want)
		}, "want status.sync.revisions %v", want)
		waitApp(t, ctx, a.f.Hub, contract.GitOpsNamespace, "two-sources", time.Minute, func(app *unstructured.Unstructured) bool {
			resources := hubResources(app)
			return slices.Contains(resources, "ConfigMap two-sources/settings Synced") &&
				slices.Contains(resources, "Service two-sources/guestbook-ui Synced Healthy")
		}, "want both sources' resources in status.resources")
		t.Logf("hub Application two-sources: revisions %v, resources %v", want, hubResources(a.hubApp(ctx, t, "two-sources")))
		require.NoError(t, a.f.Hub.Client.Delete(ctx, app))
	})

	t.Run("RollingSync across clusters: step 2 syncs only once step 1 is Healthy through the pull model's status path", func(t *testing.T) { rollingSyncScenario(t, ctx, a) })

	t.Run("Routes trap, for real: a duplicate Routes CRD breaks the spoke's Argo CD until the agent removes it", func(t *testing.T) {
		seedSynced(t)
		s := a.spokes[openshift]
		// The guard off: no admission policy (through the AddOnDeploymentConfig, rolled out
		// to the agent), then no agent.
		require.NoError(t, install.SetCustomizedVariable(ctx, a.f.Hub, openshift, "routeCRDAdmissionGuard", "false"))
		require.Eventually(t, func() bool {
			d := &appsv1.Deployment{}
			return s.Client.Get(ctx, client.ObjectKey{Namespace: harness.AddonNamespace, Name: contract.AgentDeployment}, d) == nil &&
				slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--disable-route-crd-admission-guard")
		}, 2*time.Minute, time.Second, "the agent Deployment on %s turns the admission guard off", openshift)
		require.NoError(t, a.p.RestartAgent(ctx, s))
		require.Eventually(t, func() bool {
			return !exists(ctx, s.Client, &admissionregistrationv1.ValidatingAdmissionPolicy{}, routeguard.GuardName)
		}, time.Minute, time.Second, "the agent removes its admission policy")
		require.NoError(t, a.p.StopAgent(openshift))

		// The duplicate, an apiserver restart, and the application controller restarting
		// (as its pod does on a node drain or an upgrade) and loading the API's schema.
		// The apiserver's policy informer may still hold the deleted policy for a moment.
		require.Eventually(t, func() bool {
			return s.Client.Create(ctx, duplicateRoutesCRD()) == nil
		}, 30*time.Second, 500*time.Millisecond, "creating the duplicate Routes CRD once no policy denies it")
		require.Eventually(t, func() bool {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			return s.Client.Get(ctx, client.ObjectKey{Name: contract.RoutesCRDName}, crd) == nil && apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established)
		}, 30*time.Second, 100*time.Millisecond, "the duplicate is established")
		downloads := a.routes.AggregatorV2Downloads()
		require.NoError(t, s.APIServer.Restart())
		require.NoError(t, s.WaitReady(ctx))
		// Until the restarted apiserver has merged the aggregated Route API's spec, its
		// /openapi/v2 has no duplicate path yet and still answers.
		require.Eventually(t, func() bool { return a.routes.AggregatorV2Downloads() > downloads }, time.Minute, 100*time.Millisecond,
			"the restarted apiserver fetches the Route API's /openapi/v2")
		require.NoError(t, a.argo.Spokes[openshift].Controller.Restart())
		last := waitAppSays(t, ctx, a.f.Hub, "guestbook-"+openshift, "failed to load open api schema", 3*time.Minute)
		t.Logf("with the duplicate: %s", last)

		start := time.Now()
		require.NoError(t, a.p.StartAgent(ctx, s))
		require.Eventually(t, func() bool {
			return !exists(ctx, s.Client, &apiextensionsv1.CustomResourceDefinition{}, contract.RoutesCRDName)
		}, time.Minute, 100*time.Millisecond, "the agent removes the duplicate")
		removed := time.Since(start)
		waitAppStatus(t, ctx, s.Cluster, "guestbook-"+openshift, "Synced", "Healthy", 3*time.Minute)
		synced := time.Since(start)
		waitAppStatus(t, ctx, a.f.Hub, "guestbook-"+openshift, "Synced", "Healthy", 2*time.Minute)
		t.Logf("from agent start: duplicate removed in %v, spoke Application Synced/Healthy in %v, on the hub in %v",
			removed.Round(100*time.Millisecond), synced.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("addon not installed: an Application for a cluster without the gitops addon says so on the hub", func(t *testing.T) {
		require.NoError(t, install.ApplyYAML(ctx, a.f.Hub.Client, []byte(placementByLabel("bare", "bare"))))
		require.NoError(t, install.LabelCluster(ctx, a.f.Hub, bare, "bare", "true"))
		// No Argo CD cluster Secret names bare (no GitOpsCluster selects it), so an
		// ApplicationSet would generate nothing for it: the user writes the Application.
		lonely := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: lonely-%[1]s
  namespace: openshift-gitops
  labels: {apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"}
  annotations: {apps.open-cluster-management.io/ocm-managed-cluster: %[1]s, argocd.argoproj.io/skip-reconcile: "true"}
spec:
  project: default
  source: {repoURL: %[2]q, path: guestbook}
  destination: {server: "https://kubernetes.default.svc", namespace: guestbook}
`, bare, a.argo.Repo.URL())), &lonely.Object))
		require.NoError(t, a.f.Hub.Client.Create(ctx, lonely))
		last := waitAppSays(t, ctx, a.f.Hub, "lonely-"+bare, "the gitops addon is not enabled on cluster "+bare, 3*time.Minute)
		t.Logf("hub Application lonely-%s: %s", bare, last)
	})

	t.Run("a cluster removed from a Placement: its Applications go; the resources finalizer prunes, without it they stay", func(t *testing.T) {
		s := a.spokes[vanilla]
		require.NoError(t, install.ApplyYAML(ctx, a.f.Hub.Client, []byte(placementByLabel("app-targets", "app-target"))))
		require.NoError(t, install.LabelCluster(ctx, a.f.Hub, vanilla, "app-target", "true"))
		require.NoError(t, a.f.Hub.Client.Create(ctx, applicationSetOver(t, a.argo, "pruned", "app-targets", "guestbook", "pruned", true)))
		require.NoError(t, a.f.Hub.Client.Create(ctx, applicationSetOver(t, a.argo, "kept", "app-targets", "guestbook", "kept", false)))
		for _, name := range []string{"pruned", "kept"} {
			waitAppStatus(t, ctx, a.f.Hub, name+"-"+vanilla, "Synced", "Healthy", 3*time.Minute)
			require.True(t, exists(ctx, s.Client, &corev1.ConfigMap{}, name+"/guestbook-ui"), "the %s Application deployed its ConfigMap", name)
		}

		require.NoError(t, install.LabelCluster(ctx, a.f.Hub, vanilla, "app-target", ""))
		for _, name := range []string{"pruned", "kept"} {
			app := name + "-" + vanilla
			require.Eventually(t, func() bool {
				return !exists(ctx, a.f.Hub.Client, application("", ""), contract.GitOpsNamespace+"/"+app) &&
					!exists(ctx, a.f.Hub.Client, &workv1.ManifestWork{}, vanilla+"/"+pullnames.WorkName(contract.GitOpsNamespace, app)) &&
					!exists(ctx, s.Client, application("", ""), contract.GitOpsNamespace+"/"+app)
			}, 3*time.Minute, time.Second, "%s leaves the hub, its ManifestWork and the spoke", app)
		}
		require.Eventually(t, func() bool {
			return !exists(ctx, s.Client, &corev1.ConfigMap{}, "pruned/guestbook-ui")
		}, time.Minute, time.Second, "the resources finalizer pruned the ConfigMap")
		assert.True(t, exists(ctx, s.Client, &corev1.ConfigMap{}, "kept/guestbook-ui"), "without the finalizer the ConfigMap stays")
	})

	t.Run("repository credentials follow the Application", func(t *testing.T) { repositoryCredentialsScenario(t, ctx, a) })

	// Last, since it takes the GitOps stack off vanilla: a scenario in two steps, in order.
	t.Run("vanilla leaves", func(t *testing.T) {
		seedSynced(t)
		t.Run("step 1, Argo CD Agent mode: OCM issues argocd-agent's certificate, the real operator renders argocd-agent with it, a renewal reaches it", func(t *testing.T) {
			argoCDAgentMode(t, ctx, a)
		})
		t.Run("step 2, operator-backed teardown: a cluster leaving the gitops addon finishes, keeping CRDs and Applications", func(t *testing.T) {
			operatorBackedTeardown(t, ctx, a)
		})
	})
}

// operatorBackedTeardown: vanilla leaves the Placement of the seed GitOpsCluster and
// ApplicationSet; its addon goes once the seed Application, pruned by the spoke's Argo
// CD, has, and nothing is left Terminating; the CRDs and the spoke's own Application stay.
func operatorBackedTeardown(t *testing.T, ctx context.Context, a *argoFleet) {
	// The cluster leaves the Placement that both the GitOpsCluster and the seed
	// ApplicationSet use: the addon must outlive the seed Application, whose resources
	// finalizer only the spoke's Argo CD can honour.
	s := a.spokes[vanilla]
	seedApp := "guestbook-" + vanilla
	require.True(t, exists(ctx, s.Client, &corev1.ConfigMap{}, "guestbook/guestbook-ui"), "the seed Application deployed its ConfigMap")
	local := guestbookApplication(contract.GitOpsNamespace, "made-on-the-spoke")
	require.NoError(t, s.Client.Create(ctx, local))
	require.NoError(t, install.SelectCluster(ctx, a.f.Hub, vanilla, false))
	var stuck, left []string
	held := false
	gone := assert.Eventually(t, func() bool {
		held = held || addonsConditionReason(ctx, a.f.Hub, "gitops-managed") == appsv1beta1.ReasonWaitingForApplications
		works := &workv1.ManifestWorkList{}
		if a.f.Hub.Client.List(ctx, works, client.InNamespace(vanilla)) != nil {
			return false
		}
		stuck = append(terminating(ctx, t, vanilla, s.Client), terminating(ctx, t, "hub", a.f.Hub.Client)...)
		// left names what is still there, so that a failure says which.
		left = nil
		for _, w := range works.Items {
			left = append(left, "ManifestWork "+w.Name)
		}
		for what, there := range map[string]bool{
			"the ManagedClusterAddOn":    exists(ctx, a.f.Hub.Client, &addonv1beta1.ManagedClusterAddOn{}, vanilla+"/"+contract.AddonName),
			"the hub's seed Application": exists(ctx, a.f.Hub.Client, application("", ""), contract.GitOpsNamespace+"/"+seedApp),
			"the ArgoCD CR on the spoke": exists(ctx, s.Client, argoCD(), contract.GitOpsNamespace+"/"+contract.ArgoCDName),
		} {
			if there {
				left = append(left, what)
			}
		}
		return len(left) == 0 && len(stuck) == 0
	}, 4*time.Minute, time.Second, "the ManagedClusterAddOn, every ManifestWork, the seed Application and the ArgoCD CR are gone, nothing Terminating")
	require.True(t, gone, "still there: %v; still Terminating: %v", left, stuck)
	assert.True(t, held, "the GitOpsCluster held the addon's removal for the departing seed Application (AddOnsReady reason %s)", appsv1beta1.ReasonWaitingForApplications)
	assert.False(t, exists(ctx, s.Client, application("", ""), contract.GitOpsNamespace+"/"+seedApp), "the seed Application left the spoke")
	assert.False(t, exists(ctx, s.Client, &corev1.ConfigMap{}, "guestbook/guestbook-ui"), "the spoke's Argo CD pruned it before it went")
	assert.False(t, exists(ctx, s.Client, &appsv1.Deployment{}, contract.GitOpsNamespace+"/"+contract.OperatorDeployment), "the operator is gone")
	for _, crd := range append(argoCRDs, contract.RoutesCRDName) {
		assert.True(t, exists(ctx, s.Client, &apiextensionsv1.CustomResourceDefinition{}, crd), "CRD %s is kept", crd)
	}
	assert.True(t, exists(ctx, s.Client, local, contract.GitOpsNamespace+"/made-on-the-spoke"), "the spoke's own Application is kept")
}

// addonsConditionReason is the reason of a seed GitOpsCluster's AddOnsReady condition.
func addonsConditionReason(ctx context.Context, hub *harness.Cluster, name string) string {
	gc := &appsv1beta1.GitOpsCluster{}
	if hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: name}, gc) != nil {
		return ""
	}
	if c := meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionAddOnsReady); c != nil {
		return c.Reason
	}
	return ""
}

// applicationSetOver is the seed's ApplicationSet renamed, over another Placement's
// decisions, deploying path into namespace; its Applications prune their resources when
// deleted (Argo CD's resources finalizer) or keep them.
func applicationSetOver(t *testing.T, a *argocd.Fleet, name, placement, path, namespace string, pruneOnDelete bool) *unstructured.Unstructured {
	appSet := seedApplicationSet(t, a, path)
	appSet.SetName(name)
	generators, _, _ := unstructured.NestedSlice(appSet.Object, "spec", "generators")
	gen := generators[0].(map[string]any)
	_ = unstructured.SetNestedStringMap(gen, map[string]string{"cluster.open-cluster-management.io/placement": placement}, "clusterDecisionResource", "labelSelector", "matchLabels")
	require.NoError(t, unstructured.SetNestedSlice(appSet.Object, []any{gen}, "spec", "generators"))
	require.NoError(t, unstructured.SetNestedField(appSet.Object, name+"-{{name}}", "spec", "template", "metadata", "name"))
	require.NoError(t, unstructured.SetNestedField(appSet.Object, namespace, "spec", "template", "spec", "destination", "namespace"))
	if pruneOnDelete {
		require.NoError(t, unstructured.SetNestedStringSlice(appSet.Object, []string{"resources-finalizer.argocd.argoproj.io"}, "spec", "template", "metadata", "finalizers"))
	} else {
		// Else the ApplicationSet controller adds the resources finalizer to each
		// Application it deletes.
		require.NoError(t, unstructured.SetNestedField(appSet.Object, true, "spec", "syncPolicy", "preserveResourcesOnDeletion"))
	}
	return appSet
}

// placementByLabel is a Placement in the Argo CD namespace selecting the clusters labelled key=true.
func placementByLabel(name, key string) string {
	return fmt.Sprintf(`apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: %s, namespace: openshift-gitops}
spec:
  clusterSets: [default]
  predicates:
  - requiredClusterSelector:
      labelSelector:
        matchLabels: {%s: "true"}
`, name, key)
}

// duplicateRoutesCRD is a routes.route.openshift.io CRD as another product's manifests
// carry it, here on a cluster that serves Routes natively.
func duplicateRoutesCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: contract.RoutesCRDName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "route.openshift.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Route", ListKind: "RouteList", Plural: "routes", Singular: "route"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// seedApplicationSet is the seed's ApplicationSet with its source pointed at the local
// repository's path.
func seedApplicationSet(t *testing.T, a *argocd.Fleet, path string) *unstructured.Unstructured {
	appSet, err := a.ApplicationSet(install.SeedYAML("applicationset.yaml"), path)
	require.NoError(t, err)
	return appSet
}

// waitAppStatus waits for an Application in openshift-gitops to show a sync and health
// status, as `kubectl get applications` does.
func waitAppStatus(t *testing.T, ctx context.Context, c *harness.Cluster, name, sync, health string, timeout time.Duration) {
	t.Helper()
	waitAppStatusIn(t, ctx, c, contract.GitOpsNamespace, name, sync, health, timeout)
}

// waitAppStatusIn waits for an Application in namespace to show a sync and health status.
func waitAppStatusIn(t *testing.T, ctx context.Context, c *harness.Cluster, namespace, name, sync, health string, timeout time.Duration) {
	t.Helper()
	waitApp(t, ctx, c, namespace, name, timeout, func(app *unstructured.Unstructured) bool {
		s, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		return s == sync && h == health
	}, "want %s/%s", sync, health)
}

// waitAppSays waits for an Application's status or conditions to contain text; it
// returns the summary that did.
func waitAppSays(t *testing.T, ctx context.Context, c *harness.Cluster, name, text string, timeout time.Duration) string {
	t.Helper()
	return waitApp(t, ctx, c, contract.GitOpsNamespace, name, timeout, func(app *unstructured.Unstructured) bool {
		return strings.Contains(appSummary(app), text)
	}, "want it to say %q", text)
}

// waitApp polls an Application in namespace until cond holds; on timeout the test fails
// with what the Application said last.
func waitApp(t *testing.T, ctx context.Context, c *harness.Cluster, namespace, name string, timeout time.Duration,
	cond func(*unstructured.Unstructured) bool, want string, args ...any) string {
	t.Helper()
	last := "not found"
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		app := application(namespace, name)
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
			return false, nil
		}
		last = appSummary(app)
		return cond(app), nil
	})
	if err != nil {
		t.Fatalf("Application %s on %s after %v: %s; it says: %s", name, c.Name, timeout, fmt.Sprintf(want, args...), last)
	}
	return last
}

// hubResources are an Application's status.resources as "Kind namespace/name sync [health]", sorted.
func hubResources(app *unstructured.Unstructured) []string {
	resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	out := make([]string, 0, len(resources))
	for _, r := range resources {
		m, _ := r.(map[string]any)
		ns, _ := m["namespace"].(string)
		line := fmt.Sprintf("%v %s/%v %v", m["kind"], ns, m["name"], m["status"])
		if h, ok := m["health"].(map[string]any); ok {
			line += fmt.Sprintf(" %v", h["status"])
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// hubResourceStatuses are an Application's status.resources.
func hubResourceStatuses(app *unstructured.Unstructured) []map[string]any {
	resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	out := make([]map[string]any, 0, len(resources))
	for _, r := range resources {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// reportResources are a report entry's resources as "Kind namespace/name sync health", sorted.
func reportResources(c v1alpha1.ClusterCondition) []string {
	out := make([]string, 0, len(c.Resources))
	for _, r := range c.Resources {
		out = append(out, fmt.Sprintf("%s %s/%s %s %s", r.Kind, r.Namespace, r.Name, r.SyncStatus, r.HealthStatus))
	}
	slices.Sort(out)
	return out
}

func conditionTypesOf(cs []v1alpha1.Condition) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Type)
	}
	return out
}

// waitReport waits for the report of an ApplicationSet in openshift-gitops to satisfy ok,
// failing with the report it saw last.
func waitReport(t *testing.T, ctx context.Context, hub *harness.Cluster, name string, ok func(*v1alpha1.MulticlusterApplicationSetReport) bool,
	what string) *v1alpha1.MulticlusterApplicationSetReport {
	t.Helper()
	report := &v1alpha1.MulticlusterApplicationSetReport{}
	require.Eventually(t, func() bool {
		return hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: name}, report) == nil && ok(report)
	}, 2*time.Minute, time.Second, "report %s: %s (last: %+v)", name, what, &report.Statuses)
	return report
}

func (a *argoFleet) hubApp(ctx context.Context, t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	app := application(contract.GitOpsNamespace, name)
	require.NoError(t, a.f.Hub.Client.Get(ctx, client.ObjectKeyFromObject(app), app))
	return app
}

// appSummary is what `kubectl get application -o wide` and its conditions say.
func appSummary(app *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
	op, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	var msgs []string
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok {
			msgs = append(msgs, fmt.Sprintf("%v: %v", m["type"], m["message"]))
		}
	}
	return fmt.Sprintf("%s/%s operation %q conditions [%s]", s, h, op, strings.Join(msgs, "; "))
}
