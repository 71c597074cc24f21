package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/doctor"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/uninstall"
	"github.com/gitops-addon/gitops-addon/test/install"
)

// What Red Hat ACM 2.9 and later write, in the shapes of ../shared/fixtures/acm/.
const (
	acmConfigName   = "gitops-addon-config"
	acmArgoCDImage  = "registry.example.com/mirror/argocd@sha256:deda478bd4d845e08dd25fb839e1c15d7d4507a397c7184c90b4f78d19410e05"
	acmHTTPSProxy   = "http://proxy.example.com:3128"
	acmNoProxy      = ".cluster.local,.svc,10.0.0.0/8"
	acmMovedAppSet  = "acm-moved"
	acmLabelCluster = "apps.open-cluster-management.io/acm-cluster"
)

// TestMovingFromACM starts from a hub and spokes in the state Red Hat ACM's GitOps
// integration leaves them (its cluster Secrets, its pull ManifestWorks with the spoke
// Applications running and Synced/Healthy, its MulticlusterApplicationSetReport, its
// gitops-addon-config AddOnDeploymentConfigs), then starts gitops-addon's manager with
// the GitOpsCluster adopting, and checks the move: one cluster Secret per cluster, one
// ManifestWork per Application, the spoke Applications never gone, never recreated,
// Synced/Healthy throughout; ACM's images and proxy on each spoke; and deleting the
// Applications on the hub afterwards removes them from the spokes.
//
// The spokes' Argo CD is the one gitops-addon delivered before the manager was stopped:
// ACM's own AddOnTemplate agent is not part of the fleet (docs/migrating-from-acm.md).
func TestMovingFromACM(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a := startArgoFleet(t, ctx)
	hub := a.f.Hub.Client
	clusters := []string{vanilla, openshift}

	// ACM's state: gitops-addon's manager is not running; the hub holds what ACM wrote.
	require.NoError(t, a.p.KillManager())
	for _, cluster := range clusters {
		replaceWithACMClusterSecret(t, ctx, hub, cluster)
		giveACMConfig(t, ctx, hub, cluster)
	}
	appSet := applicationSetOver(t, a.argo, acmMovedAppSet, "gitops-managed", "guestbook", acmMovedAppSet, false)
	require.NoError(t, hub.Create(ctx, appSet))
	spokeUIDs := map[string]types.UID{}
	for _, cluster := range clusters {
		name := acmMovedAppSet + "-" + cluster
		hubApp := application(contract.GitOpsNamespace, name)
		require.Eventually(t, func() bool { return hub.Get(ctx, client.ObjectKeyFromObject(hubApp), hubApp) == nil },
			2*time.Minute, time.Second, "the hub's ApplicationSet controller generates %s", name)
		require.NoError(t, hub.Create(ctx, acmPullWork(t, hubApp, cluster)))
		waitAppStatus(t, ctx, a.spokes[cluster].Cluster, name, "Synced", "Healthy", 3*time.Minute)
		spokeApp := application(contract.GitOpsNamespace, name)
		require.NoError(t, a.spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp))
		spokeUIDs[cluster] = spokeApp.GetUID()
	}
	require.NoError(t, hub.Create(ctx, acmReport(appSet)))

	t.Run("doctor --hub before the move: nothing blocks, ACM's ManifestWorks counted", func(t *testing.T) {
		var out bytes.Buffer
		code := doctor.RunHub(ctx, a.f.Hub.Config, &out)
		t.Log(out.String())
		assert.Equal(t, doctor.Healthy, code, "no blocker on the fleet's hub")
		assert.Contains(t, out.String(), "no MultiClusterHub: not a Red Hat ACM hub")
		assert.Contains(t, out.String(), "all joined and available")
		assert.Contains(t, out.String(), "2 with a ManifestWork")
		assert.NotContains(t, out.String(), "with more than one")
	})

	watch := watchSpokeApplications(ctx, a, acmMovedAppSet, spokeUIDs)

	// The move: the GitOpsCluster adopts, the manager starts.
	gc := &appsv1beta1.GitOpsCluster{}
	require.NoError(t, hub.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "gitops-managed"}, gc))
	patch := client.MergeFrom(gc.DeepCopy())
	gc.Annotations = map[string]string{appsv1beta1.AnnotationAdopt: "true"}
	require.NoError(t, hub.Patch(ctx, gc, patch))
	require.NoError(t, a.p.StartManager(ctx))

	t.Run("one cluster Secret per cluster: ACM's, taken over", func(t *testing.T) {
		require.Eventually(t, func() bool {
			byCluster := clusterSecretsByCluster(ctx, t, hub)
			for _, cluster := range clusters {
				name := cluster + "-application-manager-cluster-secret"
				s := &corev1.Secret{}
				if !slices.Equal(byCluster[cluster], []string{name}) ||
					hub.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: name}, s) != nil ||
					s.Labels[contract.LabelManagedBy] != contract.ManagedByValue {
					return false
				}
			}
			return true
		}, 2*time.Minute, time.Second, "one Secret per cluster, ACM's, now gitops-addon's: %v", clusterSecretsByCluster(ctx, t, hub))
		// That nothing adds a second one later is checked once the manager has done the
		// later steps of the move below (a positive control, not a pause).
	})

	t.Run("one ManifestWork per Application: ACM's retired without touching the spoke", func(t *testing.T) {
		for _, cluster := range clusters {
			name := acmMovedAppSet + "-" + cluster
			require.Eventually(t, func() bool {
				works := worksOf(ctx, t, hub, cluster, name)
				return slices.Equal(works, []string{pullnames.WorkName(contract.GitOpsNamespace, name)})
			}, 3*time.Minute, time.Second, "only gitops-addon's ManifestWork of %s: %v", name, worksOf(ctx, t, hub, cluster, name))
		}
	})

	t.Run("the report is taken over and counts both spokes", func(t *testing.T) {
		report := &v1alpha1.MulticlusterApplicationSetReport{}
		require.Eventually(t, func() bool {
			return hub.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: acmMovedAppSet}, report) == nil &&
				report.Labels[contract.LabelManagedBy] == contract.ManagedByValue &&
				report.Statuses.Summary.Synced == "2" && report.Statuses.Summary.Healthy == "2"
		}, 2*time.Minute, time.Second, "the report: %+v %+v", report.Labels, report.Statuses.Summary)
	})

	t.Run("ACM's images and proxy reach each spoke", func(t *testing.T) {
		for _, cluster := range clusters {
			spoke := a.spokes[cluster].Client
			require.Eventually(t, func() bool {
				cr := argoCD()
				if spoke.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName}, cr) != nil {
					return false
				}
				image, _, _ := unstructured.NestedString(cr.Object, "spec", "image")
				version, _, _ := unstructured.NestedString(cr.Object, "spec", "version")
				return image+"@"+version == acmArgoCDImage
			}, 2*time.Minute, time.Second, "the ArgoCD CR on %s carries ACM's ARGOCD_IMAGE", cluster)
			require.Eventually(t, func() bool {
				d := &appsv1.Deployment{}
				if spoke.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: contract.OperatorDeployment}, d) != nil {
					return false
				}
				env := map[string]string{}
				for _, e := range d.Spec.Template.Spec.Containers[0].Env {
					env[e.Name] = e.Value
				}
				return env["HTTPS_PROXY"] == acmHTTPSProxy && env["NO_PROXY"] == acmNoProxy
			}, 2*time.Minute, time.Second, "the operator on %s runs behind ACM's proxy", cluster)
		}
	})

	t.Run("still one cluster Secret per cluster after the manager's later steps of the move", func(t *testing.T) {
		for _, cluster := range clusters {
			assert.Len(t, clusterSecretsByCluster(ctx, t, hub)[cluster], 1, "cluster Secrets of %s", cluster)
		}
	})

	t.Run("the spoke Applications stayed: never gone, never recreated, Synced/Healthy throughout", func(t *testing.T) {
		// A last look once each spoke's Argo CD has compared its Application again after
		// everything above settled, then the record of the whole move.
		waitSpokeAppsReconciled(t, ctx, a, acmMovedAppSet, clusters)
		assert.Empty(t, watch.stop(), "what the spokes showed during the move")
	})

	t.Run("deleting the Applications on the hub removes them from the spokes", func(t *testing.T) {
		require.NoError(t, hub.Delete(ctx, appSet, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		for _, cluster := range clusters {
			name := acmMovedAppSet + "-" + cluster
			require.Eventually(t, func() bool {
				return apierrors.IsNotFound(a.spokes[cluster].Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: name}, application("", "")))
			}, 3*time.Minute, time.Second, "the spoke Application %s leaves %s", name, cluster)
		}
	})

	t.Run("and back: gitops-addon uninstalled, ACM's pull controller resumes, the spoke Applications never go", func(t *testing.T) {
		movingBackToACM(t, ctx, a, clusters)
	})
}

// movingBackToACM delivers an ApplicationSet's Applications through gitops-addon's pull
// model, then hands the hub back as docs/migrating-from-acm.md says: gitops-addon
// uninstalled (its pull-model ManifestWorks orphaned, then deleted), and ACM's pull
// controller writing its own ManifestWorks again. Each spoke Application keeps its UID and
// stays Synced/Healthy throughout, and ends with exactly one ManifestWork: ACM's.
func movingBackToACM(t *testing.T, ctx context.Context, a *argoFleet, clusters []string) {
	hub := a.f.Hub.Client
	const back = "acm-back"
	appSet := applicationSetOver(t, a.argo, back, "gitops-managed", "guestbook", back, false)
	require.NoError(t, hub.Create(ctx, appSet))
	spokeUIDs := map[string]types.UID{}
	hubApps := map[string]*unstructured.Unstructured{}
	for _, cluster := range clusters {
		name := back + "-" + cluster
		waitAppStatus(t, ctx, a.spokes[cluster].Cluster, name, "Synced", "Healthy", 3*time.Minute)
		spokeApp := application(contract.GitOpsNamespace, name)
		require.NoError(t, a.spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp))
		spokeUIDs[cluster] = spokeApp.GetUID()
		hubApp := application(contract.GitOpsNamespace, name)
		require.NoError(t, hub.Get(ctx, client.ObjectKeyFromObject(hubApp), hubApp))
		hubApps[cluster] = hubApp
		require.Equal(t, []string{pullnames.WorkName(contract.GitOpsNamespace, name)}, worksOf(ctx, t, hub, cluster, name), "delivered by gitops-addon")
	}
	watch := watchSpokeApplications(ctx, a, back, spokeUIDs)

	// 1. gitops-addon uninstalled (what helm uninstall's pre-delete hook runs).
	require.NoError(t, a.p.KillManager())
	var out bytes.Buffer
	err := uninstall.Run(ctx, hub, uninstall.Options{Namespace: install.Namespace, Yes: true, Timeout: 3 * time.Minute, Out: &out})
	t.Logf("gitops-addon uninstall said:\n%s", out.String())
	require.NoError(t, err)
	for _, cluster := range clusters {
		name := back + "-" + cluster
		require.Eventually(t, func() bool { return len(worksOf(ctx, t, hub, cluster, name)) == 0 }, 2*time.Minute, time.Second,
			"gitops-addon's ManifestWork of %s goes, orphaning", name)
	}

	// 2. ACM's pull controller resumes and writes its own.
	acmWorks := map[string]*workv1.ManifestWork{}
	for _, cluster := range clusters {
		acmWorks[cluster] = acmPullWork(t, hubApps[cluster], cluster)
		require.NoError(t, hub.Create(ctx, acmWorks[cluster]))
	}
	for _, cluster := range clusters {
		name := back + "-" + cluster
		acmWork := acmWorks[cluster]
		require.Eventually(t, func() bool {
			w := &workv1.ManifestWork{}
			return hub.Get(ctx, client.ObjectKeyFromObject(acmWork), w) == nil && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied)
		}, 2*time.Minute, time.Second, "ACM's ManifestWork of %s applied", name)
		assert.Equal(t, []string{acmWork.Name}, worksOf(ctx, t, hub, cluster, name), "one ManifestWork for %s: ACM's", name)
	}
	waitSpokeAppsReconciled(t, ctx, a, back, clusters) // Argo CD compares what ACM's ManifestWork applied
	assert.Empty(t, watch.stop(), "what the spokes showed while the hub moved back to ACM")
}

// replaceWithACMClusterSecret gives a cluster the Argo CD cluster Secret ACM 2.9+ writes
// (<cluster>-application-manager-cluster-secret, its labels) in place of gitops-addon's;
// there is always one, so Argo CD never loses the cluster.
func replaceWithACMClusterSecret(t *testing.T, ctx context.Context, hub client.Client, cluster string) {
	t.Helper()
	ours := &corev1.Secret{}
	require.NoError(t, hub.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: cluster + "-cluster-secret"}, ours))
	acm := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ours.Namespace, Name: cluster + "-application-manager-cluster-secret", Labels: map[string]string{
			"argocd.argoproj.io/secret-type":                 "cluster",
			acmLabelCluster:                                  "true",
			gitopscluster.LabelClusterName:                   cluster,
			"apps.open-cluster-management.io/cluster-server": cluster + "-control-plane",
			"apps.open-cluster-management.io/data-source":    "blank",
		}},
		Data: maps.Clone(ours.Data),
	}
	require.NoError(t, hub.Create(ctx, acm))
	require.NoError(t, hub.Delete(ctx, ours))
}

// giveACMConfig writes the AddOnDeploymentConfig ACM's GitOpsCluster controller makes for
// a cluster, with ACM's variables, and refers to it from the cluster's addon as ACM does.
func giveACMConfig(t *testing.T, ctx context.Context, hub client.Client, cluster string) {
	t.Helper()
	adc := &addonv1beta1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: acmConfigName},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{
			AgentInstallNamespace: "open-cluster-management-agent-addon",
			CustomizedVariables: []addonv1beta1.CustomizedVariable{
				{Name: "ARGOCD_IMAGE", Value: acmArgoCDImage},
				{Name: "HTTP_PROXY", Value: ""},
				{Name: "HTTPS_PROXY", Value: acmHTTPSProxy},
				{Name: "NO_PROXY", Value: acmNoProxy},
				{Name: "ARGOCD_AGENT_ENABLED", Value: "false"},
				{Name: "OLM_SUBSCRIPTION_ENABLED", Value: "false"},
			},
		},
	}
	require.NoError(t, hub.Create(ctx, adc))
	mca := &addonv1beta1.ManagedClusterAddOn{}
	require.NoError(t, hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, mca))
	patch := client.MergeFrom(mca.DeepCopy())
	mca.Spec.Configs = append(mca.Spec.Configs, addonv1beta1.AddOnConfig{
		ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
		ConfigReferent:      addonv1beta1.ConfigReferent{Namespace: cluster, Name: acmConfigName},
	})
	require.NoError(t, hub.Patch(ctx, mca, patch))
}

// acmPullWork is the ManifestWork ACM's pull controller writes for a hub Application
// generated by an ApplicationSet: <app>-<first 5 of its UID>, its labels and
// annotations, and the Application aimed at the spoke's own apiserver.
func acmPullWork(t *testing.T, hubApp *unstructured.Unstructured, cluster string) *workv1.ManifestWork {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(hubApp.Object, "spec")
	spec = runtime.DeepCopyJSON(spec)
	destination, _, _ := unstructured.NestedMap(spec, "destination")
	delete(destination, "name")
	destination["server"] = pullmodel.InClusterServer
	spec["destination"] = destination
	app, err := json.Marshal(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": hubApp.GetName(), "namespace": hubApp.GetNamespace(), "labels": hubApp.GetLabels()},
		"spec":     spec,
	})
	require.NoError(t, err)
	appSet := hubApp.GetOwnerReferences()[0].Name
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: hubApp.GetName() + "-" + string(hubApp.GetUID())[:5], Namespace: cluster,
			Labels: map[string]string{pullnames.LabelPull: "true", pullnames.LabelApplicationSet: "true",
				"apps.open-cluster-management.io/application-set-hash": "0123456789"},
			Annotations: map[string]string{
				pullnames.AnnotationHubAppNamespace: hubApp.GetNamespace(), pullnames.AnnotationHubAppName: hubApp.GetName(),
				pullnames.AnnotationHostingAppSet: hubApp.GetNamespace() + "/" + appSet,
			},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: app}}}},
			// ACM applies the Application server-side (its status stays the spoke Argo CD's)
			// and reads the whole status back.
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: "argoproj.io", Resource: "applications", Namespace: hubApp.GetNamespace(), Name: hubApp.GetName()},
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "status", Path: ".status"}}}},
				UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply},
			}},
		},
	}
}

// acmReport is the MulticlusterApplicationSetReport ACM keeps for an ApplicationSet.
func acmReport(appSet *unstructured.Unstructured) *v1alpha1.MulticlusterApplicationSetReport {
	return &v1alpha1.MulticlusterApplicationSetReport{
		ObjectMeta: metav1.ObjectMeta{Namespace: appSet.GetNamespace(), Name: appSet.GetName(), Labels: map[string]string{
			pullnames.LabelHostingAppSetReport: appSet.GetNamespace() + "." + appSet.GetName(),
		}},
		Statuses: v1alpha1.AppConditions{Summary: v1alpha1.ReportSummary{Clusters: "2", Synced: "0", Healthy: "0", InProgress: "2"}},
	}
}

// clusterSecretsByCluster lists the Argo CD cluster Secrets of the hub's Argo CD by the
// cluster they register.
func clusterSecretsByCluster(ctx context.Context, t *testing.T, hub client.Client) map[string][]string {
	list := &corev1.SecretList{}
	require.NoError(t, hub.List(ctx, list, client.InNamespace(contract.GitOpsNamespace), client.MatchingLabels{"argocd.argoproj.io/secret-type": "cluster"}))
	out := map[string][]string{}
	for _, s := range list.Items {
		out[string(s.Data["name"])] = append(out[string(s.Data["name"])], s.Name)
	}
	return out
}

// worksOf lists the ManifestWorks of a cluster that carry a hub Application, by name.
func worksOf(ctx context.Context, t *testing.T, hub client.Client, cluster, app string) []string {
	list := &workv1.ManifestWorkList{}
	require.NoError(t, hub.List(ctx, list, client.InNamespace(cluster)))
	var names []string
	for _, w := range list.Items {
		if w.Annotations[pullnames.AnnotationHubAppName] == app {
			names = append(names, w.Name)
		}
	}
	slices.Sort(names)
	return names
}

// spokeWatch records, every half second, each moment a spoke Application was missing,
// recreated (another UID) or not Synced/Healthy.
type spokeWatch struct {
	stop func() []string
}

// waitSpokeAppsReconciled waits until each cluster's Argo CD has reconciled the
// ApplicationSet's Application on it after now (its status.reconciledAt, written on every
// comparison, every --app-resync seconds at most): what the spoke would show of a change
// made before, it shows by then.
func waitSpokeAppsReconciled(t *testing.T, ctx context.Context, a *argoFleet, appSet string, clusters []string) {
	t.Helper()
	// reconciledAt has a resolution of a second: the next whole second is surely after now.
	after := time.Now().Truncate(time.Second).Add(time.Second)
	for _, cluster := range clusters {
		app := application(contract.GitOpsNamespace, appSet+"-"+cluster)
		var last string
		require.Eventually(t, func() bool {
			if a.spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(app), app) != nil {
				return false
			}
			last, _, _ = unstructured.NestedString(app.Object, "status", "reconciledAt")
			at, err := time.Parse(time.RFC3339, last)
			return err == nil && !at.Before(after)
		}, 2*time.Minute, time.Second, "%s on %s reconciled by its Argo CD after %s (last at %s)", app.GetName(), cluster, after.Format(time.RFC3339), last)
	}
}

func watchSpokeApplications(ctx context.Context, a *argoFleet, appSet string, uids map[string]types.UID) spokeWatch {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		seen []string
		done = make(chan struct{})
	)
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < 20 {
			seen = append(seen, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
		}
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for cluster, uid := range uids {
				name := appSet + "-" + cluster
				app := application(contract.GitOpsNamespace, name)
				err := a.spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(app), app)
				switch {
				case apierrors.IsNotFound(err):
					note("%s on %s is gone", name, cluster)
				case err != nil:
				case app.GetUID() != uid:
					note("%s on %s was recreated (UID %s, was %s)", name, cluster, app.GetUID(), uid)
				case !app.GetDeletionTimestamp().IsZero():
					note("%s on %s is being deleted", name, cluster)
				default:
					s, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
					h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
					if s != "Synced" || h != "Healthy" {
						note("%s on %s is %s/%s", name, cluster, s, h)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return spokeWatch{stop: func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}}
}
