package integration

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/uninstall"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// installedHub is a hub as the chart and a running manager leave it: the manager's
// Deployment and its held leader Lease, the ClusterManagementAddOn, a GitOpsCluster with
// the finalizer, its cluster Secret, our ManagedClusterAddOn and ManifestWork on c1, and
// a user's ManagedClusterAddOn on c2.
type installedHub struct {
	c                 client.Client
	gc                *appsv1beta1.GitOpsCluster
	ours, users       client.ObjectKey
	work, secret, crd client.ObjectKey
	pull              client.ObjectKey
}

// pullWork is a pull-model ManifestWork as the manager labels it.
func pullWork(cluster, name string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name,
		Labels: map[string]string{pullnames.LabelPullWork: "true", contract.LabelManagedBy: contract.ManagedByValue}}}
}

// markApplied sets Applied at the ManifestWork's generation, as a cluster's work agent does.
func markApplied(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey) {
	t.Helper()
	work := &workv1.ManifestWork{}
	require.NoError(t, c.Get(ctx, key, work))
	meta.SetStatusCondition(&work.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
		Reason: "AppliedManifestWorkComplete", ObservedGeneration: work.Generation})
	require.NoError(t, c.Status().Update(ctx, work))
}

func installHub(t *testing.T, ctx context.Context, c client.Client) installedHub {
	ours := map[string]string{contract.LabelManagedBy: contract.ManagedByValue}
	selector := map[string]string{"app": "gitops-addon-manager"}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c2"}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: chartNamespace, Name: uninstall.ManagerName},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "quay.io/gitops-addon/gitops-addon:0.1.0"}}}}},
		},
		&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: chartNamespace, Name: uninstall.ManagerName},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("manager-pod-1"), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: &metav1.MicroTime{Time: time.Now()}},
		},
		&addonv1beta1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: contract.AddonName,
			Labels: map[string]string{uninstall.ChartNameLabel: uninstall.ChartNameValue, "app.kubernetes.io/managed-by": "Helm"}},
			Spec: addonv1beta1.ClusterManagementAddOnSpec{InstallStrategy: addonv1beta1.InstallStrategy{Type: addonv1beta1.AddonInstallStrategyManual}}},
		&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: contract.AddonName, Labels: ours}},
		&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c2", Name: contract.AddonName}},
		&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "addon-gitops-addon-deploy-0",
			Labels: map[string]string{addonv1beta1.AddonLabelKey: contract.AddonName}}},
		pullWork("c1", "gitops-guestbook"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: gitopscluster.ClusterSecretName("c1"), Labels: ours}},
	}
	for _, obj := range objects {
		require.NoError(t, c.Create(ctx, obj), "creating %T %s", obj, obj.GetName())
	}
	gc := &appsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: "fleet", Finalizers: []string{gitopscluster.Finalizer}},
		Spec: appsv1beta1.GitOpsClusterSpec{
			ArgoServer:   appsv1beta1.ArgoServerSpec{ArgoNamespace: "gitops"},
			PlacementRef: &appsv1beta1.PlacementReference{Kind: "Placement", Name: "all"},
		},
	}
	require.NoError(t, c.Create(ctx, gc))
	return installedHub{
		c: c, gc: gc,
		ours:   client.ObjectKey{Namespace: "c1", Name: contract.AddonName},
		users:  client.ObjectKey{Namespace: "c2", Name: contract.AddonName},
		work:   client.ObjectKey{Namespace: "c1", Name: "addon-gitops-addon-deploy-0"},
		pull:   client.ObjectKey{Namespace: "c1", Name: "gitops-guestbook"},
		secret: client.ObjectKey{Namespace: "gitops", Name: gitopscluster.ClusterSecretName("c1")},
		crd:    client.ObjectKey{Name: gitOpsClusterCRD},
	}
}

func exists(t *testing.T, c client.Client, key client.ObjectKey, obj client.Object) bool {
	err := c.Get(context.Background(), key, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestUninstall runs `gitops-addon uninstall`'s steps on a real kube-apiserver: a dry run
// changes nothing; while a manager still holds the leader Lease it stops and says so;
// a ManagedClusterAddOn that does not go is named with its cluster and finalizers; then
// everything is released in order, and what docs/operations/uninstall.md says stays is still there.
func TestUninstall(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(append(append(testenv.OCMCRDPaths(), testenv.ArgoCDCRDPaths(t)...),
		filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon", "crds"))...))
	ctx := context.Background()
	h := installHub(t, ctx, env.Client)
	pulled := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": "gitops", "name": "guestbook",
			"labels":     map[string]any{pullnames.LabelPull: "true"},
			"finalizers": []any{"resources-finalizer.argocd.argoproj.io", "example.com/users-own"}},
		"spec": map[string]any{"project": "default", "destination": map[string]any{"server": "https://kubernetes.default.svc"},
			"source": map[string]any{"repoURL": "https://example.com/guestbook.git", "path": "guestbook"}},
	}}
	require.NoError(t, env.Client.Create(ctx, pulled))
	c := env.Client
	// The command runs as the chart's pre-delete hook runs it: with the hook's
	// ServiceAccount and the RBAC the chart gives it, so a missing permission fails here.
	asHook := hookClient(t, ctx, env)
	// What the hook's roles allow, asked of the apiserver's authorizer: docs/security.md
	// states each of their rules, and TestSecurityPageStatesEveryRBACRule (test/chart)
	// checks these rows against the page and the rendered roles.
	hook := "system:serviceaccount:" + chartNamespace + ":gitops-addon-uninstall"
	hookGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + chartNamespace, "system:authenticated"}
	res := func(ns, group, resource, verb, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: verb, Name: name}
	}
	hookChecks := []struct {
		name    string
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{"hook orphans ManifestWorks", res("c1", "work.open-cluster-management.io", "manifestworks", "patch", ""), true},
		{"hook deletes the pull model's ManifestWorks", res("c1", "work.open-cluster-management.io", "manifestworks", "delete", ""), true},
		{"hook releases GitOpsClusters", res("gitops", "apps.open-cluster-management.io", "gitopsclusters", "patch", ""), true},
		{"hook deletes ManagedClusterAddOns", res("c1", "addon.open-cluster-management.io", "managedclusteraddons", "delete", contract.AddonName), true},
		{"hook releases pulled Applications", res("gitops", "argoproj.io", "applications", "patch", "guestbook"), true},
		{"hook deletes the ClusterManagementAddOn", res("", "addon.open-cluster-management.io", "clustermanagementaddons", "delete", contract.AddonName), true},
		{"hook scales the manager", res(chartNamespace, "apps", "deployments", "patch", uninstall.ManagerName), true},
		{"hook reads the manager's leader Lease", res(chartNamespace, "coordination.k8s.io", "leases", "get", uninstall.ManagerName), true},
		{"hook cannot delete another ClusterManagementAddOn", res("", "addon.open-cluster-management.io", "clustermanagementaddons", "delete", "other-addon"), false},
		{"hook cannot scale another Deployment", res(chartNamespace, "apps", "deployments", "patch", "other"), false},
		{"hook cannot create ManifestWorks", res("c1", "work.open-cluster-management.io", "manifestworks", "create", ""), false},
		{"hook cannot delete GitOpsClusters", res("gitops", "apps.open-cluster-management.io", "gitopsclusters", "delete", ""), false},
		{"hook cannot read Secrets", res(chartNamespace, "", "secrets", "get", ""), false},
		{"hook cannot write RBAC", res("", "rbac.authorization.k8s.io", "clusterrolebindings", "create", ""), false},
	}
	for _, c := range hookChecks {
		allowed, reason := testenv.Allowed(t, ctx, env.Client, hook, hookGroups, testenv.Access{Resource: c.attrs})
		assert.Equal(t, c.allowed, allowed, "%s (%s)", c.name, reason)
	}
	run := func(yes bool, timeout time.Duration) (string, error) {
		var out bytes.Buffer
		err := uninstall.Run(ctx, asHook, uninstall.Options{Namespace: chartNamespace, Yes: yes, Timeout: timeout, Out: &out})
		t.Log(out.String())
		return out.String(), err
	}

	out, err := run(false, time.Second)
	require.NoError(t, err)
	for _, step := range []string{"Dry run", "Scale the manager Deployment", "2 gitops-addon ManifestWork", "Release 1 GitOpsCluster",
		"Release 1 pull-model Application", "Delete the 1 ManagedClusterAddOn", "Delete the 1 pull-model ManifestWork", "Delete the ClusterManagementAddOn"} {
		assert.Contains(t, out, step)
	}
	d := &appsv1.Deployment{}
	require.True(t, exists(t, c, client.ObjectKey{Namespace: chartNamespace, Name: uninstall.ManagerName}, d))
	assert.Equal(t, int32(1), *d.Spec.Replicas, "a dry run changes nothing")
	assert.True(t, exists(t, c, h.ours, &addonv1beta1.ManagedClusterAddOn{}), "a dry run changes nothing")

	_, err = run(true, 3*time.Second)
	require.Error(t, err, "a manager still holds the Lease")
	assert.Contains(t, err.Error(), "still held by manager-pod-1")
	require.True(t, exists(t, c, client.ObjectKey{Namespace: chartNamespace, Name: uninstall.ManagerName}, d))
	assert.Equal(t, int32(0), *d.Spec.Replicas, "the manager was told to stop")
	assert.Contains(t, mustGitOpsCluster(t, c, h.gc).Finalizers, gitopscluster.Finalizer, "nothing released while a manager may still run")

	// The manager's pod stops: LeaderElectionReleaseOnCancel empties the holder.
	lease := &coordinationv1.Lease{}
	require.True(t, exists(t, c, client.ObjectKey{Namespace: chartNamespace, Name: uninstall.ManagerName}, lease))
	lease.Spec.HolderIdentity = ptr.To("")
	require.NoError(t, c.Update(ctx, lease))

	// The cluster's work agent has not applied the orphaning yet (it is offline).
	_, err = run(true, 3*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has not applied the orphaning of 2 ManifestWork(s)")
	assert.Contains(t, err.Error(), h.work.String(), "the work that waits is named")
	assert.True(t, exists(t, c, h.ours, &addonv1beta1.ManagedClusterAddOn{}), "nothing deleted while a spoke could lose its stack")
	assert.Contains(t, mustGitOpsCluster(t, c, h.gc).Finalizers, gitopscluster.Finalizer, "nothing released either")
	// The work agent applies it, as OCM's does: Applied at the work's new generation.
	markApplied(t, ctx, c, h.work)
	markApplied(t, ctx, c, h.pull)

	// A ManagedClusterAddOn held by a finalizer nobody removes (its cluster is offline),
	// and by addon-framework's pre-delete hook, which no manager runs any more.
	held := &addonv1beta1.ManagedClusterAddOn{}
	require.True(t, exists(t, c, h.ours, held))
	held.Finalizers = []string{"example.com/offline-cluster", addonv1beta1.AddonPreDeleteHookFinalizer}
	require.NoError(t, c.Update(ctx, held))
	_, err = run(true, 3*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cluster c1 (finalizers example.com/offline-cluster)", "the stuck object is named, with what it waits for")
	require.True(t, exists(t, c, h.ours, held))
	assert.Equal(t, []string{"example.com/offline-cluster"}, held.Finalizers,
		"the spoke teardown hook is released (the spoke keeps its stack); the cluster's own finalizer is not touched")
	held.Finalizers = nil
	require.NoError(t, c.Update(ctx, held))

	out, err = run(true, 30*time.Second)
	require.NoError(t, err)
	t.Run("the spokes keep their stack: the ManifestWork orphans its objects", func(t *testing.T) {
		w := &workv1.ManifestWork{}
		require.True(t, exists(t, c, h.work, w))
		require.NotNil(t, w.Spec.DeleteOption)
		assert.Equal(t, workv1.DeletePropagationPolicyTypeOrphan, w.Spec.DeleteOption.PropagationPolicy)
	})
	t.Run("the pull-model ManifestWork is gone, deleted only once orphaning: the spoke keeps its Application", func(t *testing.T) {
		assert.False(t, exists(t, c, h.pull, &workv1.ManifestWork{}))
	})
	t.Run("the GitOpsCluster is released: it stays, and deleting it finishes at once", func(t *testing.T) {
		gc := mustGitOpsCluster(t, c, h.gc)
		assert.NotContains(t, gc.Finalizers, gitopscluster.Finalizer)
		require.NoError(t, c.Delete(ctx, gc))
		assert.False(t, exists(t, c, client.ObjectKeyFromObject(gc), &appsv1beta1.GitOpsCluster{}), "nothing left Terminating")
	})
	t.Run("our ManagedClusterAddOn and the ClusterManagementAddOn are gone; the user's stays", func(t *testing.T) {
		assert.False(t, exists(t, c, h.ours, &addonv1beta1.ManagedClusterAddOn{}))
		assert.True(t, exists(t, c, h.users, &addonv1beta1.ManagedClusterAddOn{}))
		assert.False(t, exists(t, c, client.ObjectKey{Name: contract.AddonName}, &addonv1beta1.ClusterManagementAddOn{}))
	})
	t.Run("the pull-model Application stays, released of Argo CD's resource finalizer only", func(t *testing.T) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(pulled.GroupVersionKind())
		require.True(t, exists(t, c, client.ObjectKeyFromObject(pulled), got))
		assert.Equal(t, []string{"example.com/users-own"}, got.GetFinalizers())
	})
	t.Run("kept: the CRD and the Argo CD cluster Secret", func(t *testing.T) {
		assert.True(t, exists(t, c, h.crd, &apiextensionsv1.CustomResourceDefinition{}))
		assert.True(t, exists(t, c, h.secret, &corev1.Secret{}))
		assert.Contains(t, out, "Kept:")
	})
	_, err = run(true, 5*time.Second)
	require.NoError(t, err, "running it again is harmless")
}

func mustGitOpsCluster(t *testing.T, c client.Client, gc *appsv1beta1.GitOpsCluster) *appsv1beta1.GitOpsCluster {
	got := &appsv1beta1.GitOpsCluster{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: gc.Namespace, Name: gc.Name}, got))
	return got
}

// hookClient applies the chart's pre-delete hook ServiceAccount and RBAC, as Helm creates
// them before the hook's Job, and returns a client with that ServiceAccount's identity.
func hookClient(t *testing.T, ctx context.Context, env *testenv.Env) client.Client {
	t.Helper()
	rel, err := install.RenderRelease()
	require.NoError(t, err)
	var job bool
	for _, hook := range rel.Hooks {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(hook.Manifest), &obj.Object))
		switch obj.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			require.NoError(t, env.Client.Create(ctx, obj), "creating the hook's %s", obj.GetKind())
		case "Job":
			job = true
			args, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			require.Len(t, args, 1)
			assert.Equal(t, []any{"uninstall", "--yes", "--namespace=" + chartNamespace, "--timeout=300s"}, args[0].(map[string]any)["args"])
		}
		assert.Contains(t, hook.Events, release.HookPreDelete, "%s is a pre-delete hook", obj.GetKind())
	}
	require.True(t, job, "the chart runs gitops-addon uninstall as a pre-delete hook Job")
	hook, err := client.New(asChartServiceAccount(env.Config, "gitops-addon-uninstall"), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	// The apiserver's authorizer learns of new RBAC through its informers: under load it
	// lags (a clean-clone CI run failed the first request Forbidden). Wait until the
	// hook's namespaced and cluster-wide grants are both in force.
	require.Eventually(t, func() bool {
		deployErr := hook.Get(ctx, client.ObjectKey{Namespace: chartNamespace, Name: "gitops-addon-manager"}, &appsv1.Deployment{})
		worksErr := hook.List(ctx, &workv1.ManifestWorkList{})
		return !apierrors.IsForbidden(deployErr) && !apierrors.IsForbidden(worksErr)
	}, 30*time.Second, 100*time.Millisecond, "the uninstall hook's RBAC never came in force")
	return hook
}

// TestUninstallOfAHubOnlyInstallationLeavesACMsAddonAlone: gitops-addon installed hub-only
// beside Red Hat ACM's AddOnTemplate gitops-addon, uninstalled (moving back to ACM, or
// simply removed): ACM's ClusterManagementAddOn and the ManifestWorks OCM renders from its
// AddOnTemplate are left exactly as they are (deleting the ClusterManagementAddOn would
// run ACM's cleanup Job on every spoke, which removes the GitOps operator and Argo CD);
// gitops-addon's pull-model ManifestWork is orphaned, then deleted.
func TestUninstallOfAHubOnlyInstallationLeavesACMsAddonAlone(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(append(testenv.OCMCRDPaths(),
		filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon", "crds"))...))
	ctx := context.Background()
	c := env.Client
	for _, ns := range []string{chartNamespace, "c1"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	// Red Hat ACM's own, as a hub with OCM's conversion serves it (this apiserver stores
	// the addon kinds as v1beta1 without the webhook: see testenv).
	acm := fixtures.ACMManagementAddOn(t)
	require.NoError(t, c.Create(ctx, acm))
	acmWork := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "addon-gitops-addon-deploy-0",
		Labels: map[string]string{addonv1beta1.AddonLabelKey: contract.AddonName}}}
	require.NoError(t, c.Create(ctx, acmWork))
	ours := pullWork("c1", "gitops-guestbook")
	require.NoError(t, c.Create(ctx, ours))

	// The cluster's work agent, applying each ManifestWork's spec as it changes.
	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	go wait.UntilWithContext(agentCtx, func(ctx context.Context) {
		w := &workv1.ManifestWork{}
		if c.Get(ctx, client.ObjectKeyFromObject(ours), w) != nil {
			return
		}
		if applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); applied == nil || applied.ObservedGeneration < w.Generation {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
				Reason: "AppliedManifestWorkComplete", ObservedGeneration: w.Generation})
			_ = c.Status().Update(ctx, w)
		}
	}, 100*time.Millisecond)

	var out bytes.Buffer
	asHook := hookClient(t, ctx, env)
	require.NoError(t, uninstall.Run(ctx, asHook, uninstall.Options{Namespace: chartNamespace, Yes: true, Timeout: 30 * time.Second, Out: &out}))
	t.Log(out.String())

	assert.Contains(t, out.String(), "Mark 1 gitops-addon ManifestWork(s) to orphan", "only gitops-addon's pull-model ManifestWork")
	assert.Contains(t, out.String(), "is not this chart's (an AddOnTemplate addon, as Red Hat ACM delivers its gitops-addon): left as it is")
	after := &addonv1beta1.ClusterManagementAddOn{}
	require.True(t, exists(t, c, client.ObjectKeyFromObject(acm), after), "ACM's ClusterManagementAddOn is not deleted")
	assert.Equal(t, acm.ResourceVersion, after.ResourceVersion, "nor changed")
	w := &workv1.ManifestWork{}
	require.True(t, exists(t, c, client.ObjectKeyFromObject(acmWork), w), "ACM's addon ManifestWork is not deleted")
	assert.Equal(t, acmWork.ResourceVersion, w.ResourceVersion, "nor changed (OCM renders it from ACM's AddOnTemplate)")
	assert.False(t, exists(t, c, client.ObjectKeyFromObject(ours), &workv1.ManifestWork{}),
		"gitops-addon's pull-model ManifestWork is gone, after orphaning its Application")
}
