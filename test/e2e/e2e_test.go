// Package e2e runs gitops-addon on a real OCM hub and two real spokes on this machine
// (kube-apiserver, kube-controller-manager, etcd, OCM registration/work/placement/addon
// components as processes on loopback): OCM itself registers the addon, issues its hub
// credential, delivers its ManifestWorks and reports it Available.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/appsetaccess"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/test/fakeroute"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
)

const (
	vanilla   = "vanilla"
	openshift = "openshift"
)

// argoCRDs are the Argo CD CRDs every spoke must keep, whatever happens to the addon.
var argoCRDs = []string{
	"applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io", "argocds.argoproj.io",
}

// TestFleet is one scenario over a hub and two spokes, in the order a user lives it; the
// subtests share the fleet because starting it costs a minute.
func TestFleet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := harness.StartForTest(t, harness.Options{})
	binary, err := install.BuildBinary(ctx, t.TempDir())
	require.NoError(t, err)

	spokes := map[string]*harness.Spoke{}
	for _, name := range []string{vanilla, openshift} {
		s, err := f.AddSpoke(ctx, name)
		require.NoError(t, err, "joining spoke %s", name)
		spokes[name] = s
	}
	routeServer, err := install.MakeOpenShiftLike(ctx, f.Hub, spokes[openshift])
	require.NoError(t, err)
	t.Cleanup(routeServer.Stop)
	// Every Routes CRD that ever appears on the OpenShift-like spoke is recorded.
	routesCRDSeen := watchRoutesCRD(t, ctx, spokes[openshift])

	// The vanilla spoke starts in the layout of earlier releases: its Argo CD CRDs came
	// from a ManifestWork (orphaned on removal), and an Application uses them.
	oldCRDs, err := install.CreateOldLayoutWorks(ctx, f.Hub, spokes[vanilla])
	require.NoError(t, err)
	preUpgradeApp := guestbookApplication("team-a", "before-upgrade")
	require.NoError(t, spokes[vanilla].Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}))
	require.NoError(t, spokes[vanilla].Client.Create(ctx, preUpgradeApp))

	p, err := install.OnHub(ctx, f, binary)
	require.NoError(t, err)
	require.NoError(t, p.StartManager(ctx))
	for _, name := range []string{vanilla, openshift} {
		require.NoError(t, install.SelectCluster(ctx, f.Hub, name, true))
	}
	agentErrs := startAgentsWhenDelivered(ctx, p, spokes)

	t.Run("the manager killed during convergence converges again after a restart", func(t *testing.T) {
		require.NoError(t, install.ApplySeed(ctx, f.Hub))
		require.Eventually(t, func() bool {
			works := &workv1.ManifestWorkList{}
			return f.Hub.Client.List(ctx, works, client.InNamespace(vanilla)) == nil && len(works.Items) > 0
		}, 3*time.Minute, 100*time.Millisecond, "the manager starts delivering")
		require.NoError(t, p.KillManager())
		require.NoError(t, p.StartManager(ctx))
		for _, name := range []string{vanilla, openshift} {
			require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, name, 5*time.Minute))
		}
		require.NoError(t, <-agentErrs)
		assertNoDuplicates(t, ctx, f.Hub)
	})

	t.Run("the seed GitOpsCluster is Ready over both spokes", func(t *testing.T) {
		require.Eventually(t, func() bool {
			gc := &appsv1beta1.GitOpsCluster{}
			require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "gitops-managed"}, gc))
			return meta.IsStatusConditionTrue(gc.Status.Conditions, "Ready") && gc.Status.AddonAvailableClusters == 2
		}, 2*time.Minute, 500*time.Millisecond)
		for _, name := range []string{vanilla, openshift} {
			secret := &corev1.Secret{}
			require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: gitopscluster.ClusterSecretName(name)}, secret),
				"the Argo CD cluster secret of %s", name)
		}
	})

	t.Run("every spoke has the GitOps stack: the work agent applied the ManifestWork, our agent the CRDs", func(t *testing.T) {
		for _, name := range []string{vanilla, openshift} {
			s := spokes[name]
			// The ArgoCD CR waits for its CRD: OCM's work agent retries it with backoff.
			require.Eventually(t, func() bool {
				return len(install.Landed(ctx, s.Cluster)) == len(install.DeliveredObjects)
			}, 3*time.Minute, 500*time.Millisecond, "%s has %v", name, install.Landed(ctx, s.Cluster))
			// The agent restarts when the hub ships the full stack (after it reported no other
			// Argo CD), so a CRD the work agent created first becomes the agent's moments later.
			for _, crd := range argoCRDs {
				require.Eventually(t, func() bool { return appliedByAgent(t, ctx, s, crd) }, 2*time.Minute, 500*time.Millisecond,
					"%s on %s is the agent's (server-side apply, field manager %s)", crd, name, crdinstall.FieldManager)
			}
			waitCondition(t, ctx, f.Hub, name, contract.ConditionArgoCDCRDsInstalled, metav1.ConditionTrue)
		}
	})

	t.Run("upgrade from CRDs in ManifestWorks: the agent adopts them, nothing is deleted or lost", func(t *testing.T) {
		s := spokes[vanilla]
		// addon-framework keeps the names of the works it finds and refills them: the new
		// layout may stay spread over the two old works, each now small and without CRDs.
		require.Eventually(t, func() bool {
			return len(crdsInManifestWorks(t, ctx, f.Hub, vanilla)) == 0
		}, 2*time.Minute, 500*time.Millisecond, "the CRDs leave the ManifestWorks")
		for name, uid := range oldCRDs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			require.NoError(t, s.Client.Get(ctx, client.ObjectKey{Name: name}, crd), "CRD %s survives the upgrade", name)
			assert.Equal(t, uid, crd.UID, "CRD %s was never deleted (same UID)", name)
			assert.True(t, appliedByAgent(t, ctx, s, name), "the agent adopted %s", name)
		}
		argocds := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, s.Client.Get(ctx, client.ObjectKey{Name: "argocds.argoproj.io"}, argocds))
		assert.NotEmpty(t, argocds.Spec.Versions[len(argocds.Spec.Versions)-1].Schema.OpenAPIV3Schema.Properties["spec"].Description,
			"the adopted CRD has its descriptions back: kubectl explain argocd.spec works")
		assert.True(t, exists(ctx, s.Client, application("", ""), "team-a/before-upgrade"), "the Application created before the upgrade is kept")
	})

	t.Run("a cluster's ManifestWorks hold a few KiB and no CRD; a new cluster gets one ManifestWork", func(t *testing.T) {
		for _, name := range []string{vanilla, openshift} {
			works := &workv1.ManifestWorkList{}
			require.NoError(t, f.Hub.Client.List(ctx, works, client.InNamespace(name), client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}))
			total := 0
			for _, w := range works.Items {
				w.ManagedFields, w.Status = nil, workv1.ManifestWorkStatus{}
				raw, err := json.Marshal(w)
				require.NoError(t, err)
				total += len(raw)
				t.Logf("ManifestWork %s/%s: %d manifests, %d bytes", name, w.Name, len(w.Spec.Workload.Manifests), len(raw))
			}
			assert.LessOrEqual(t, total, 32*1024, "the ManifestWorks of %s hold %d bytes", name, total)
			assert.Empty(t, crdsInManifestWorks(t, ctx, f.Hub, name), "CRDs in the ManifestWorks of %s", name)
		}
		works := &workv1.ManifestWorkList{}
		require.NoError(t, f.Hub.Client.List(ctx, works, client.InNamespace(openshift), client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}))
		assert.Len(t, works.Items, 1, "a cluster installed with this release has one ManifestWork")
	})

	t.Run("the OpenShift-like spoke never receives the Routes CRD; the vanilla spoke's agent installs it", func(t *testing.T) {
		mca := waitRouteAPI(t, ctx, f.Hub, openshift, contract.RouteAPINative)
		assert.NotNil(t, mca)
		assert.True(t, routesServedNatively(ctx, spokes[openshift]), "Routes are served by the aggregated Route API")
		require.Eventually(t, func() bool {
			return exists(ctx, spokes[vanilla].Client, &apiextensionsv1.CustomResourceDefinition{}, contract.RoutesCRDName)
		}, time.Minute, 500*time.Millisecond, "the vanilla spoke's agent installs the Routes CRD")
		assert.True(t, appliedByAgent(t, ctx, spokes[vanilla], contract.RoutesCRDName))
		waitRouteAPI(t, ctx, f.Hub, vanilla, contract.RouteAPICRD)
		assert.False(t, exists(ctx, spokes[openshift].Client, &apiextensionsv1.CustomResourceDefinition{}, contract.RoutesCRDName))
	})

	t.Run("pull model: the seed's ApplicationSet shape gives one ManifestWork per spoke, applied by OCM's work agent", func(t *testing.T) {
		pullModelRoundTrip(t, ctx, f.Hub, spokes, p)
	})

	t.Run("the manager makes no API writes while nothing changes, also while reconciles are triggered", func(t *testing.T) {
		since := time.Now()
		for i := 0; i < 6; i++ {
			before := scrapeReconciles(t, ctx, p, gitopscluster.ControllerName)
			// Wake the GitOpsCluster (an annotation) and flip OCM's addon-health label on a
			// ManagedCluster, as OCM does when an addon's health changes.
			gc := &appsv1beta1.GitOpsCluster{}
			require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "gitops-managed"}, gc))
			metav1.SetMetaDataAnnotation(&gc.ObjectMeta, "example.com/touched", fmt.Sprint(i))
			require.NoError(t, f.Hub.Client.Update(ctx, gc))
			// OCM's registration writes the ManagedCluster too (its leases, conditions): a
			// conflict is retried on the latest version, as OCM's own writers do.
			require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				mc := &clusterv1.ManagedCluster{}
				if err := f.Hub.Client.Get(ctx, client.ObjectKey{Name: vanilla}, mc); err != nil {
					return err
				}
				metav1.SetMetaDataLabel(&mc.ObjectMeta, "feature.open-cluster-management.io/addon-other", []string{"available", "unhealthy"}[i%2])
				return f.Hub.Client.Update(ctx, mc)
			}))
			// The positive control: the manager did reconcile after the touches (whatever it
			// wrote then, the audit log below holds: its writes are logged as they are served).
			require.Eventually(t, func() bool { return scrapeReconciles(t, ctx, p, gitopscluster.ControllerName) > before },
				time.Minute, 100*time.Millisecond, "the manager reconciles the touched GitOpsCluster")
		}
		writes, err := f.Hub.Writes(managerUser(), since)
		require.NoError(t, err)
		assert.Empty(t, writes, "writes by the manager in a steady state, over six reconciles of a touched GitOpsCluster")
		all, err := f.Hub.Writes(managerUser(), time.Time{})
		require.NoError(t, err)
		assert.NotEmpty(t, all, "the audit log does record the manager's writes")
	})

	// Drift: OCM's work agent re-applies on its resync (4-6 min), so the deletion happens
	// now and the repair is checked last, while the other subtests run.
	driftAt := time.Now()
	require.NoError(t, spokes[openshift].Client.Delete(ctx, operatorDeployment()))

	t.Run("the agent's hub credential renewed by OCM: the manager approves it, the agent restarts onto it and reports", func(t *testing.T) {
		s := spokes[vanilla]
		defer func() { // running again even when this subtest fails, for the ones after it
			if agent := p.Agent(vanilla); agent == nil || !agent.Running() {
				assert.NoError(t, p.StartAgent(ctx, s))
			}
		}()
		rotatedAt := time.Now()
		before, after, err := p.RotateAgentHubCredential(ctx, s)
		require.NoError(t, err)
		t.Logf("OCM issued a new hub certificate for the agent in %v", time.Since(rotatedAt).Round(100*time.Millisecond))
		assert.Equal(t, before.Subject.CommonName, after.Subject.CommonName, "the same identity")
		assert.NotEqual(t, before.SerialNumber, after.SerialNumber, "a new certificate")
		approvals, err := f.Hub.Writes(managerUser(), rotatedAt)
		require.NoError(t, err)
		assert.True(t, slices.ContainsFunc(approvals, func(e harness.AuditEvent) bool {
			return e.ObjectRef != nil && e.ObjectRef.Resource == "certificatesigningrequests" && e.ObjectRef.Subresource == "approval"
		}), "the manager approved the renewal's CSR; its writes: %v", approvals)

		// The agent's liveness check fails once on the new credential; with the Deployment's
		// failureThreshold of 1 that makes the kubelet restart it.
		require.Eventually(t, func() bool {
			healthy, err := p.AgentHealthy(ctx, vanilla)
			return err == nil && !healthy
		}, 30*time.Second, 200*time.Millisecond, "the agent's /healthz fails once its mounted credential changed")
		require.NoError(t, p.StopAgent(vanilla))
		// Remove what the agent reported, so that the restarted agent must write it again.
		mca := &addonv1beta1.ManagedClusterAddOn{}
		require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: vanilla, Name: contract.AddonName}, mca))
		require.True(t, meta.RemoveStatusCondition(&mca.Status.Conditions, contract.ConditionRouteAPI))
		require.NoError(t, f.Hub.Client.Status().Update(ctx, mca))
		restartedAt := time.Now()
		require.NoError(t, p.StartAgent(ctx, s), "the kubelet's restart")
		waitRouteAPI(t, ctx, f.Hub, vanilla, contract.RouteAPICRD)
		writes, err := f.Hub.Writes(after.Subject.CommonName, restartedAt)
		require.NoError(t, err)
		assert.NotEmpty(t, writes, "the restarted agent wrote to the hub, with the only certificate on its disk: the renewed one")
		healthy, err := p.AgentHealthy(ctx, vanilla)
		require.NoError(t, err)
		assert.True(t, healthy, "the restarted agent is live")
	})

	t.Run("a spoke offline and back: a hub change made meanwhile reaches it when it returns", func(t *testing.T) {
		s := spokes[vanilla]
		// The spoke loses the hub: its klusterlet and our agent stop talking to it.
		for _, proc := range []*harness.Process{s.RegistrationAgent, s.WorkAgent, p.Agent(vanilla)} {
			require.NoError(t, proc.Stop())
		}
		defer func() { // back even when this subtest fails, for the ones after it
			for _, proc := range []*harness.Process{s.RegistrationAgent, s.WorkAgent} {
				if !proc.Running() {
					assert.NoError(t, proc.Start())
				}
			}
			if agent := p.Agent(vanilla); agent == nil || !agent.Running() {
				assert.NoError(t, p.StartAgent(ctx, s))
			}
		}()
		mirrors, err := json.Marshal(map[string]any{"registries": []map[string]string{{"source": "quay.io", "mirror": "mirror.example.com/quay"}}})
		require.NoError(t, err)
		mc := &clusterv1.ManagedCluster{}
		require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Name: vanilla}, mc))
		metav1.SetMetaDataAnnotation(&mc.ObjectMeta, clusterv1.ClusterImageRegistriesAnnotationKey, string(mirrors))
		require.NoError(t, f.Hub.Client.Update(ctx, mc))
		require.Eventually(t, func() bool {
			return strings.HasPrefix(operatorImageInWork(ctx, f.Hub, vanilla), "mirror.example.com/quay/")
		}, time.Minute, 500*time.Millisecond, "the hub renders the change into the cluster's ManifestWork while the spoke is away")
		assert.True(t, strings.HasPrefix(operatorImage(ctx, s), "quay.io/"), "nothing reached the spoke while it was offline")

		backAt := time.Now()
		for _, proc := range []*harness.Process{s.RegistrationAgent, s.WorkAgent} {
			require.NoError(t, proc.Start())
		}
		require.NoError(t, p.StartAgent(ctx, s))
		require.Eventually(t, func() bool {
			return strings.HasPrefix(operatorImage(ctx, s), "mirror.example.com/quay/")
		}, 3*time.Minute, 500*time.Millisecond, "the spoke's operator Deployment takes the mirrored image once back")
		require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, vanilla, 2*time.Minute))
		t.Logf("the change reached the spoke %v after it came back", time.Since(backAt).Round(100*time.Millisecond))
	})

	t.Run("a cluster removed from the Placement loses the workloads and keeps CRDs and Applications", func(t *testing.T) {
		s := spokes[vanilla]
		app := guestbookApplication(contract.GitOpsNamespace, "guestbook")
		require.NoError(t, s.Client.Create(ctx, app))

		require.NoError(t, install.SelectCluster(ctx, f.Hub, vanilla, false))
		require.Eventually(t, func() bool {
			return !exists(ctx, f.Hub.Client, &addonv1beta1.ManagedClusterAddOn{}, vanilla+"/"+contract.AddonName)
		}, 2*time.Minute, 500*time.Millisecond, "the ManagedClusterAddOn is removed")
		require.Eventually(t, func() bool {
			return !exists(ctx, s.Client, &appsv1.Deployment{}, contract.GitOpsNamespace+"/"+contract.OperatorDeployment) &&
				!exists(ctx, s.Client, &rbacv1.ClusterRole{}, contract.PlatformExtensionsClusterRole)
		}, 2*time.Minute, 500*time.Millisecond, "the workloads are removed from the spoke")
		for _, crd := range append(argoCRDs, contract.RoutesCRDName) {
			assert.True(t, exists(ctx, s.Client, &apiextensionsv1.CustomResourceDefinition{}, crd), "CRD %s is kept", crd)
		}
		assert.True(t, exists(ctx, s.Client, app, contract.GitOpsNamespace+"/guestbook"), "the Application is kept")
		assert.True(t, exists(ctx, s.Client, &corev1.Namespace{}, contract.GitOpsNamespace), "the namespace is kept")
		assert.False(t, exists(ctx, f.Hub.Client, &corev1.Secret{}, contract.GitOpsNamespace+"/"+gitopscluster.ClusterSecretName(vanilla)),
			"the Argo CD registration is removed")
		require.NoError(t, p.StopAgent(vanilla), "the agent's Deployment is gone, so is its process")
	})

	t.Run("drift: a deleted operator Deployment is repaired by the work agent", func(t *testing.T) {
		s := spokes[openshift]
		require.Eventually(t, func() bool {
			return exists(ctx, s.Client, &appsv1.Deployment{}, contract.GitOpsNamespace+"/"+contract.OperatorDeployment)
		}, 8*time.Minute-time.Since(driftAt), time.Second, "the work agent re-applies the Deployment on its resync")
		t.Logf("repaired %v after the deletion", time.Since(driftAt).Round(time.Second))
	})

	t.Run("the Routes CRD never existed on the OpenShift-like spoke", func(t *testing.T) {
		assert.Empty(t, routesCRDSeen(), "Routes CRD events on the OpenShift-like spoke")
	})

	// Last: it takes the product away.
	t.Run("helm uninstall leaves nothing stuck and keeps what docs/operations/uninstall.md says", func(t *testing.T) {
		hub, spoke := f.Hub.Client, spokes[openshift].Client
		applicationsBefore, pullWorksBefore := hubApplications(ctx, t, hub), pullWorks(ctx, t, hub)
		t.Logf("pull-model ManifestWorks before: %v (TestMovingFromACM's way back uninstalls with pulled Applications running)", pullWorksBefore)
		spokeAppsBefore := map[string][]string{}
		for name, s := range spokes {
			spokeAppsBefore[name] = applicationUIDs(ctx, t, s.Client)
		}
		out, err := p.UninstallRelease(ctx, 5*time.Minute)
		require.NoError(t, err, "the pre-delete hook said:\n%s", out)
		t.Logf("the pre-delete hook said:\n%s", out)

		// docs/operations/uninstall.md's table, row by row.
		for _, crd := range []string{"gitopsclusters.apps.open-cluster-management.io", "multiclusterapplicationsetreports.apps.open-cluster-management.io"} {
			assert.True(t, exists(ctx, hub, &apiextensionsv1.CustomResourceDefinition{}, crd), "hub CRD %s kept", crd)
		}
		gitOpsClusters := &appsv1beta1.GitOpsClusterList{}
		require.NoError(t, hub.List(ctx, gitOpsClusters))
		require.NotEmpty(t, gitOpsClusters.Items, "GitOpsClusters kept")
		for _, gc := range gitOpsClusters.Items {
			assert.NotContains(t, gc.Finalizers, gitopscluster.Finalizer, "GitOpsCluster %s/%s released", gc.Namespace, gc.Name)
		}
		assert.True(t, exists(ctx, hub, &corev1.Secret{}, contract.GitOpsNamespace+"/"+gitopscluster.ClusterSecretName(openshift)), "Argo CD cluster Secret kept")
		assert.True(t, exists(ctx, hub, &corev1.ConfigMap{}, contract.GitOpsNamespace+"/"+appsv1beta1.PlacementConfigMapName), "acm-placement ConfigMap kept")
		assert.True(t, exists(ctx, hub, &rbacv1.Role{}, gitOpsClusters.Items[0].Namespace+"/"+appsetaccess.PlacementReaderName), "placement Role kept")
		assert.Equal(t, applicationsBefore, hubApplications(ctx, t, hub), "the hub's Argo CD Applications kept")
		// The pull-model ManifestWorks go, orphaning: each spoke keeps its Applications.
		require.Eventually(t, func() bool { return len(pullWorks(ctx, t, hub)) == 0 }, 2*time.Minute, time.Second,
			"the pull-model ManifestWorks removed (orphaning): %v", pullWorks(ctx, t, hub))
		// What each spoke's work agent does about a ManifestWork gone from the hub, it has
		// done once it has removed the work's AppliedManifestWork.
		require.Eventually(t, func() bool { return len(appliedPullWorks(ctx, t, spokes, pullWorksBefore)) == 0 }, 2*time.Minute, time.Second,
			"the spokes' work agents let go of the pull-model ManifestWorks: %v", appliedPullWorks(ctx, t, spokes, pullWorksBefore))
		for name, s := range spokes {
			assert.Equal(t, spokeAppsBefore[name], applicationUIDs(ctx, t, s.Client), "spoke %s: its Applications kept, same UIDs", name)
		}
		agents := &appsv1.DeploymentList{}
		require.NoError(t, spoke.List(ctx, agents, client.MatchingFields{"metadata.name": contract.AgentDeployment}))
		assert.Len(t, agents.Items, 1, "spoke: the agent kept")
		assert.True(t, exists(ctx, spoke, &appsv1.Deployment{}, contract.GitOpsNamespace+"/"+contract.OperatorDeployment), "spoke: GitOps operator kept")
		assert.True(t, exists(ctx, spoke, argoCD(), contract.GitOpsNamespace+"/"+contract.ArgoCDName), "spoke: ArgoCD instance kept")
		assert.True(t, exists(ctx, spoke, &rbacv1.ClusterRole{}, contract.PlatformExtensionsClusterRole), "spoke: platform role kept")
		for _, crd := range argoCRDs {
			assert.True(t, exists(ctx, spoke, &apiextensionsv1.CustomResourceDefinition{}, crd), "spoke: CRD %s kept", crd)
		}
		addons := &addonv1beta1.ManagedClusterAddOnList{}
		require.NoError(t, hub.List(ctx, addons, client.MatchingLabels{contract.LabelManagedBy: contract.ManagedByValue}))
		assert.Empty(t, addons.Items, "the ManagedClusterAddOns gitops-addon created are removed")
		assert.False(t, exists(ctx, hub, &addonv1beta1.ClusterManagementAddOn{}, contract.AddonName), "ClusterManagementAddOn removed")
		assert.False(t, exists(ctx, hub, &appsv1.Deployment{}, install.Namespace+"/gitops-addon-manager"), "manager Deployment removed")
		assert.False(t, exists(ctx, hub, &rbacv1.ClusterRole{}, "gitops-addon-manager"), "manager ClusterRole removed")
		assert.False(t, exists(ctx, hub, &corev1.ServiceAccount{}, install.Namespace+"/gitops-addon-manager"), "manager ServiceAccount removed")
		assert.False(t, exists(ctx, hub, &corev1.Service{}, install.Namespace+"/gitops-addon-manager-metrics"), "manager Service removed")
		assert.False(t, exists(ctx, hub, &rbacv1.Role{}, contract.GitOpsNamespace+"/gitops-addon-manager"), "manager's Role in the Argo CD namespace removed")
		assert.True(t, exists(ctx, hub, &corev1.Namespace{}, contract.GitOpsNamespace), "the Argo CD namespace kept")

		// The user then deletes every GitOpsCluster and the Argo CD namespace.
		for i := range gitOpsClusters.Items {
			require.NoError(t, client.IgnoreNotFound(hub.Delete(ctx, &gitOpsClusters.Items[i])))
		}
		require.NoError(t, hub.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: contract.GitOpsNamespace}}))
		var stuck []string
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 60*time.Second, true, func(context.Context) (bool, error) {
			stuck = append(terminating(ctx, t, "hub", hub), terminating(ctx, t, openshift, spoke)...)
			stuck = append(stuck, terminating(ctx, t, vanilla, spokes[vanilla].Client)...)
			return len(stuck) == 0, nil
		})
		assert.Empty(t, stuck, "still Terminating 60 s after the GitOpsClusters and the %s namespace were deleted", contract.GitOpsNamespace)
		// The spoke's stack is still there once OCM has removed the ManifestWork (orphaned,
		// not garbage-collected with it).
		works := &workv1.ManifestWorkList{}
		require.NoError(t, hub.List(ctx, works, client.InNamespace(openshift), client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}))
		assert.Empty(t, works.Items, "the addon's ManifestWorks are gone from the hub")
		assert.True(t, exists(ctx, spoke, &appsv1.Deployment{}, contract.GitOpsNamespace+"/"+contract.OperatorDeployment), "spoke: GitOps operator still there")
		assert.True(t, exists(ctx, spoke, argoCD(), contract.GitOpsNamespace+"/"+contract.ArgoCDName), "spoke: ArgoCD instance still there")
	})
}

// terminating names the objects of a cluster that are being deleted (namespaces,
// GitOpsClusters, ManagedClusterAddOns, ManifestWorks, Argo CD Applications and ArgoCDs),
// with the finalizers they wait for.
func terminating(ctx context.Context, t *testing.T, cluster string, c client.Client) []string {
	lists := []client.ObjectList{
		&corev1.NamespaceList{}, &appsv1beta1.GitOpsClusterList{}, &addonv1beta1.ManagedClusterAddOnList{}, &workv1.ManifestWorkList{},
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationList"},
		{Group: "argoproj.io", Version: "v1beta1", Kind: "ArgoCDList"},
	} {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(gvk)
		lists = append(lists, u)
	}
	var out []string
	for _, list := range lists {
		if err := c.List(ctx, list); err != nil {
			continue // a kind this cluster does not serve
		}
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, item := range items {
			obj, err := meta.Accessor(item)
			require.NoError(t, err)
			if obj.GetDeletionTimestamp() != nil {
				out = append(out, fmt.Sprintf("%s: %T %s/%s (finalizers %v)", cluster, item, obj.GetNamespace(), obj.GetName(), obj.GetFinalizers()))
			}
		}
	}
	return out
}

// startAgentsWhenDelivered runs each spoke's agent once OCM has delivered its Deployment
// and credential; the channel yields nil once all started, or the first error.
func startAgentsWhenDelivered(ctx context.Context, p *install.Product, spokes map[string]*harness.Spoke) <-chan error {
	out := make(chan error, 1)
	var wg sync.WaitGroup
	errs := make(chan error, len(spokes))
	for _, s := range spokes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			errs <- p.StartAgent(waitCtx, s)
		}()
	}
	go func() {
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				out <- err
				return
			}
		}
		out <- nil
	}()
	return out
}

// watchRoutesCRD records every event of the Routes CRD on a spoke from now on.
func watchRoutesCRD(t *testing.T, ctx context.Context, s *harness.Spoke) func() []string {
	wc, err := client.NewWithWatch(s.Config, client.Options{Scheme: s.Client.Scheme()})
	require.NoError(t, err)
	w, err := wc.Watch(ctx, &apiextensionsv1.CustomResourceDefinitionList{}, client.MatchingFields{"metadata.name": contract.RoutesCRDName})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []string
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Bookmark {
				continue
			}
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s at %s", ev.Type, time.Now().Format(time.RFC3339)))
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func waitRouteAPI(t *testing.T, ctx context.Context, hub *harness.Cluster, cluster, reason string) *addonv1beta1.ManagedClusterAddOn {
	t.Helper()
	var mca *addonv1beta1.ManagedClusterAddOn
	require.Eventually(t, func() bool {
		mca = &addonv1beta1.ManagedClusterAddOn{}
		if hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, mca) != nil {
			return false
		}
		c := meta.FindStatusCondition(mca.Status.Conditions, contract.ConditionRouteAPI)
		return c != nil && c.Reason == reason
	}, 2*time.Minute, 500*time.Millisecond, "the agent on %s reports RouteAPI=%s to the hub", cluster, reason)
	return mca
}

// crdsInManifestWorks lists "work/crd" for every CRD a cluster's addon ManifestWorks carry.
func crdsInManifestWorks(t *testing.T, ctx context.Context, hub *harness.Cluster, cluster string) []string {
	t.Helper()
	works := &workv1.ManifestWorkList{}
	require.NoError(t, hub.Client.List(ctx, works, client.InNamespace(cluster), client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}))
	var out []string
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			u := &unstructured.Unstructured{}
			require.NoError(t, u.UnmarshalJSON(m.Raw))
			if u.GetKind() == "CustomResourceDefinition" {
				out = append(out, w.Name+"/"+u.GetName())
			}
		}
	}
	return out
}

// guestbookApplication is an Argo CD Application as a user would create it on a spoke.
func guestbookApplication(namespace, name string) *unstructured.Unstructured {
	app := application(namespace, name)
	_ = unstructured.SetNestedMap(app.Object, map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps", "path": "guestbook"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
	}, "spec")
	return app
}

// appliedByAgent tells whether the spoke agent's field manager applied a CRD.
func appliedByAgent(t *testing.T, ctx context.Context, s *harness.Spoke, name string) bool {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	return s.Client.Get(ctx, client.ObjectKey{Name: name}, crd) == nil && install.AppliedByAgent(crd)
}

// waitCondition waits until the agent of a cluster reports a condition with a status.
func waitCondition(t *testing.T, ctx context.Context, hub *harness.Cluster, cluster, conditionType string, status metav1.ConditionStatus) {
	t.Helper()
	var last *metav1.Condition
	require.Eventually(t, func() bool {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, mca) != nil {
			return false
		}
		last = meta.FindStatusCondition(mca.Status.Conditions, conditionType)
		return last != nil && last.Status == status
	}, 2*time.Minute, 500*time.Millisecond, "the agent on %s reports %s=%s (last: %+v)", cluster, conditionType, status, last)
}

// assertNoDuplicates: one ManagedClusterAddOn and one Argo CD cluster secret per cluster,
// and every delivered object in exactly one ManifestWork.
func assertNoDuplicates(t *testing.T, ctx context.Context, hub *harness.Cluster) {
	t.Helper()
	for _, cluster := range []string{vanilla, openshift} {
		mcas := &addonv1beta1.ManagedClusterAddOnList{}
		require.NoError(t, hub.Client.List(ctx, mcas, client.InNamespace(cluster)))
		assert.Len(t, mcas.Items, 1, "ManagedClusterAddOns in %s", cluster)
		secrets := &corev1.SecretList{}
		require.NoError(t, hub.Client.List(ctx, secrets, client.InNamespace(contract.GitOpsNamespace),
			client.MatchingLabels{"argocd.argoproj.io/secret-type": "cluster", gitopscluster.LabelClusterName: cluster}))
		assert.Len(t, secrets.Items, 1, "Argo CD cluster secrets of %s", cluster)
		works := &workv1.ManifestWorkList{}
		require.NoError(t, hub.Client.List(ctx, works, client.InNamespace(cluster)))
		seen := map[string]string{}
		for _, w := range works.Items {
			for _, m := range w.Spec.Workload.Manifests {
				u := &unstructured.Unstructured{}
				require.NoError(t, u.UnmarshalJSON(m.Raw))
				id := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
				assert.NotContains(t, seen, id, "%s delivered by %s and %s", id, seen[id], w.Name)
				seen[id] = w.Name
			}
		}
	}
}

func managerUser() string {
	return "system:serviceaccount:" + install.Namespace + ":gitops-addon-manager"
}

// routesServedNatively lists Routes on a spoke and tells whether the aggregated server
// answered.
func routesServedNatively(ctx context.Context, s *harness.Spoke) bool {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("route.openshift.io/v1")
	list.SetKind("RouteList")
	if err := s.Client.List(ctx, list, client.InNamespace("default")); err != nil || len(list.Items) == 0 {
		return false
	}
	return list.Items[0].GetAnnotations()[fakeroute.ServedByAnnotation] == "aggregated"
}

// operatorDeployment is the GitOps operator Deployment every spoke receives.
// operatorImage is the image of the GitOps operator Deployment on a spoke, or "".
func operatorImage(ctx context.Context, s *harness.Spoke) string {
	d := operatorDeployment()
	if s.Client.Get(ctx, client.ObjectKeyFromObject(d), d) != nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// operatorImageInWork is the GitOps operator image the cluster's addon ManifestWorks carry,
// or "".
func operatorImageInWork(ctx context.Context, hub *harness.Cluster, cluster string) string {
	works := &workv1.ManifestWorkList{}
	if hub.Client.List(ctx, works, client.InNamespace(cluster), client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}) != nil {
		return ""
	}
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			d := &appsv1.Deployment{}
			if json.Unmarshal(m.Raw, d) != nil || d.Kind != "Deployment" || d.Name != contract.OperatorDeployment || len(d.Spec.Template.Spec.Containers) == 0 {
				continue
			}
			return d.Spec.Template.Spec.Containers[0].Image
		}
	}
	return ""
}

func operatorDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: contract.OperatorDeployment}}
}

// exists gets "namespace/name" or "name" into obj.
func exists(ctx context.Context, c client.Client, obj client.Object, key string) bool {
	k := client.ObjectKey{Name: key}
	if ns, name, ok := strings.Cut(key, "/"); ok {
		k = client.ObjectKey{Namespace: ns, Name: name}
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		obj = u.DeepCopy()
	}
	return c.Get(ctx, k, obj) == nil
}

// argoCD is an empty ArgoCD custom resource, for Gets.
func argoCD() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1beta1")
	u.SetKind("ArgoCD")
	return u
}

// hubApplications names the hub's Argo CD Applications.
func hubApplications(ctx context.Context, t *testing.T, c client.Client) []string {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("argoproj.io/v1alpha1")
	list.SetKind("ApplicationList")
	if err := c.List(ctx, list); err != nil {
		return nil // no Argo CD CRDs on the hub
	}
	var names []string
	for _, app := range list.Items {
		names = append(names, app.GetNamespace()+"/"+app.GetName())
	}
	return names
}

// applicationUIDs lists a cluster's Argo CD Applications as namespace/name/UID.
func applicationUIDs(ctx context.Context, t *testing.T, c client.Client) []string {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("argoproj.io/v1alpha1")
	list.SetKind("ApplicationList")
	require.NoError(t, c.List(ctx, list))
	var out []string
	for _, app := range list.Items {
		out = append(out, app.GetNamespace()+"/"+app.GetName()+"/"+string(app.GetUID()))
	}
	return out
}

// appliedPullWorks names the spokes' AppliedManifestWorks of the given hub ManifestWorks
// (cluster/name).
func appliedPullWorks(ctx context.Context, t *testing.T, spokes map[string]*harness.Spoke, works []string) []string {
	var names []string
	for cluster, s := range spokes {
		applied := &workv1.AppliedManifestWorkList{}
		require.NoError(t, s.Client.List(ctx, applied))
		for _, a := range applied.Items {
			if slices.Contains(works, cluster+"/"+a.Spec.ManifestWorkName) {
				names = append(names, cluster+"/"+a.Name)
			}
		}
	}
	return names
}

// pullWorks names the pull model's ManifestWorks on the hub.
func pullWorks(ctx context.Context, t *testing.T, c client.Client) []string {
	works := &workv1.ManifestWorkList{}
	require.NoError(t, c.List(ctx, works, client.MatchingLabels{pullnames.LabelPullWork: "true"}))
	var names []string
	for _, w := range works.Items {
		names = append(names, w.Namespace+"/"+w.Name)
	}
	return names
}
