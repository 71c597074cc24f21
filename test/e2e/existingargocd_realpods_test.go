package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/olm"
	"github.com/gitops-addon/gitops-addon/test/realpods"
)

// usersApp is a user's own Application on a cluster that runs Argo CD before
// gitops-addon comes, run by that Argo CD.
const usersApp = "users-guestbook"

// TestExistingArgoCDOnRealPods is issue 41's situation B with every part running: an
// OpenShift-like spoke runs OpenShift GitOps as OLM places it (Subscription and CSV, the
// operator a pod in openshift-gitops-operator, its ArgoCD openshift-gitops whose Argo CD
// runs as pods) and a user's Application Synced/Healthy, before gitops-addon comes. The
// addon is installed as users install it (our image, the chart by helm, the seed) and
// enabled on that spoke. Nothing of the user's changes (byte for byte), one operator runs,
// the condition names OLM; with UseExisting the seed's pulled Application is run by the
// user's Argo CD; after the addon leaves, everything of the user's is still there and
// Synced/Healthy, on the same pods.
func TestExistingArgoCDOnRealPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	f := startRealPodFleet(t)
	r, err := realpods.Start(ctx, f, filepath.Join(f.WorkDir, "image"), olmSpoke, acmSpoke)
	require.NoError(t, err)
	spoke, acm := r.Spokes[0], r.Spokes[1]
	for _, s := range r.Spokes {
		routes, err := install.MakeOpenShiftLike(ctx, f.Hub, s)
		require.NoError(t, err)
		f.OnStop(routes.Stop)
	}
	require.NoError(t, r.ImportGitOpsImages(ctx, f.Hub.Name), "the hub runs its own Argo CD as pods")
	repoURL := serveApplications(t, ctx, f)

	// What OLM, Red Hat ACM and the users made before gitops-addon came, running: on the
	// hub and the OLM spoke OpenShift GitOps from OLM, on the ACM spoke ACM's instance;
	// each with a user's Application.
	existing := map[*harness.Cluster]existingGitOps{
		f.Hub: openShiftGitOpsFromOLM, spoke.Cluster: openShiftGitOpsFromOLM, acm.Cluster: acmsInstance,
	}
	users := map[*harness.Cluster][]client.Object{}
	operatorPods := map[*harness.Cluster]types.UID{}
	for c, e := range existing {
		installArgoCDCRDs(t, ctx, c)
		users[c] = runExistingGitOps(t, ctx, c, e, repoURL)
	}
	for c := range existing {
		waitAppStatus(t, ctx, c, usersApp, "Synced", "Healthy", 5*time.Minute)
		// The baseline is what the users' controllers made of it, as gitops-addon finds
		// it: the operator has put its finalizer and defaults on its ArgoCD.
		users[c] = append(asTheyAre(t, ctx, c.Client, users[c]), argoCDRoles(t, ctx, c.Client, existing[c].instance)...)
		operatorPods[c] = deploymentPod(t, ctx, c.Client, olmOperatorNamespace, contract.OperatorDeployment).UID
	}
	// untouched: everything of the users' as it was, one operator pod, the same one, and
	// their Application Synced/Healthy.
	untouched := func(t *testing.T, c *harness.Cluster) {
		t.Helper()
		assertUnchanged(t, ctx, c.Client, users[c])
		assert.Equal(t, 1, runningOperators(t, ctx, c.Client), "GitOps operator pods running on %s", c.Name)
		assert.Equal(t, operatorPods[c], deploymentPod(t, ctx, c.Client, olmOperatorNamespace, contract.OperatorDeployment).UID,
			"the user's operator pod on %s is the one it was", c.Name)
		waitAppStatus(t, ctx, c, usersApp, "Synced", "Healthy", time.Minute)
	}

	_, err = f.JoinHubAs(ctx, hubCluster)
	require.NoError(t, err, "registering the hub as %s, as on every ACM hub", hubCluster)
	require.NoError(t, r.InstallChart(ctx))
	require.NoError(t, r.EnableAddon(ctx))
	require.NoError(t, install.SelectCluster(ctx, f.Hub, hubCluster, true), "the Placement selects the hub too")

	t.Run("the OLM spoke: the agent names OLM's OpenShift GitOps; nothing but the agent is shipped; one operator runs", func(t *testing.T) {
		waitExistingArgoCD(t, ctx, f.Hub, olmSpoke, contract.ExistingArgoCDOLM,
			"via OLM (ClusterServiceVersion openshift-gitops-operator/openshift-gitops-operator.v1.16.0)",
			"ArgoCD openshift-gitops/openshift-gitops (not created by gitops-addon)")
		require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, olmSpoke, 5*time.Minute))
		waitAvailable(t, ctx, spoke.Client, r.Nodes[olmSpoke], harness.AddonNamespace, contract.AgentDeployment)
		assertNothingShippedBeside(t, ctx, f.Hub, spoke)
		untouched(t, spoke.Cluster)
	})

	t.Run("the ACM spoke: acm-openshift-gitops named, nothing of ours runs beside it", func(t *testing.T) {
		waitExistingArgoCD(t, ctx, f.Hub, acmSpoke, contract.ExistingArgoCDInstance,
			"ArgoCD openshift-gitops/acm-openshift-gitops (not created by gitops-addon)")
		require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, acmSpoke, 5*time.Minute))
		assertNothingShippedBeside(t, ctx, f.Hub, acm)
		untouched(t, acm.Cluster)
	})

	t.Run("the hub as local-cluster: no addon, nothing of its Argo CD changes, the GitOpsCluster says why", func(t *testing.T) {
		gc := waitGitOpsCluster(t, ctx, f.Hub, func(gc *appsv1beta1.GitOpsCluster) bool {
			return gc.Status.ExistingArgoCDClusters == 3
		})
		existing := meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionExistingArgoCD)
		require.NotNil(t, existing)
		assert.Contains(t, existing.Message, "Cluster local-cluster is the hub itself")
		assertHubGetsNothing(t, ctx, f.Hub)
		untouched(t, f.Hub)
	})

	t.Run("UseExisting: a pulled Application is run by the OLM spoke's Argo CD, Synced/Healthy on the hub", func(t *testing.T) {
		require.NoError(t, install.LabelCluster(ctx, f.Hub, olmSpoke, contract.ExistingArgoCDPolicy, contract.ExistingArgoCDUse))
		appSet, err := argocd.ApplicationSetFrom(install.SeedYAML("applicationset.yaml"), repoURL, "guestbook")
		require.NoError(t, err)
		require.NoError(t, f.Hub.Client.Create(ctx, appSet))
		app := generatedApplication(t, appSet, olmSpoke)
		require.NoError(t, f.Hub.Client.Create(ctx, app))
		waitAppStatus(t, ctx, spoke.Cluster, app.GetName(), "Synced", "Healthy", 3*time.Minute)
		waitAppStatus(t, ctx, f.Hub, app.GetName(), "Synced", "Healthy", 2*time.Minute)
		assert.True(t, exists(ctx, spoke.Client, &corev1.ConfigMap{}, "guestbook/guestbook-ui"), "the guestbook, deployed by the user's Argo CD")
		assertNothingShippedBeside(t, ctx, f.Hub, spoke)
		untouched(t, spoke.Cluster)
		require.NoError(t, f.Hub.Client.Delete(ctx, app))
		require.Eventually(t, func() bool {
			return !exists(ctx, spoke.Client, application("", ""), contract.GitOpsNamespace+"/"+app.GetName())
		}, 2*time.Minute, time.Second, "the pulled Application leaves with its ManifestWork")
	})

	t.Run("removing the addon leaves the users' operators, ArgoCDs, roles and Applications as they were, Synced/Healthy", func(t *testing.T) {
		for _, name := range []string{olmSpoke, acmSpoke} {
			require.NoError(t, install.SelectCluster(ctx, f.Hub, name, false))
		}
		for _, s := range r.Spokes {
			waitAddonGone(t, ctx, f.Hub, s.Name)
			require.Eventually(t, func() bool {
				return !exists(ctx, s.Client, &appsv1.Deployment{}, harness.AddonNamespace+"/"+contract.AgentDeployment)
			}, 2*time.Minute, time.Second, "the agent goes from %s", s.Name)
		}
		for c := range existing {
			untouched(t, c)
		}
	})
}

// serveApplications commits the test applications to a repository served over the Git
// protocol at the fleet's address, where the spokes' pods reach it, and returns its URL.
func serveApplications(t *testing.T, ctx context.Context, f *harness.Fleet) string {
	t.Helper()
	repo, err := argocd.NewRepo(filepath.Join(f.WorkDir, "git"))
	require.NoError(t, err)
	_, err = repo.Commit("applications", argocd.Apps)
	require.NoError(t, err)
	url, err := repo.Serve(ctx, f, harness.FleetIP)
	require.NoError(t, err)
	return url
}

// existingGitOps is how a GitOps operator and its Argo CD came to a cluster before
// gitops-addon.
type existingGitOps struct {
	// olm: OpenShift GitOps from OLM (a Subscription and a CSV); else Red Hat ACM's own
	// gitops-addon installed it, with its label.
	olm      bool
	instance string
	labels   map[string]string
}

var (
	openShiftGitOpsFromOLM = existingGitOps{olm: true, instance: contract.ArgoCDName, labels: map[string]string{"control-plane": "gitops-operator"}}
	acmsInstance           = existingGitOps{instance: "acm-openshift-gitops", labels: map[string]string{"apps.open-cluster-management.io/gitopsaddon": "true"}}
)

// runExistingGitOps makes a cluster run a GitOps operator and its Argo CD as e says: the
// operator a pod in openshift-gitops-operator (its ServiceAccount bound to what OLM grants
// from the CSV, here cluster-admin; WATCH_NAMESPACE all namespaces, from the
// OperatorGroup's annotation as OLM sets it), with OLM's Subscription and CSV if it came
// from OLM; the ArgoCD instance in openshift-gitops (the images the nodes hold); and a
// user's Application over repoURL. It returns them.
func runExistingGitOps(t *testing.T, ctx context.Context, c *harness.Cluster, e existingGitOps, repoURL string) []client.Object {
	t.Helper()
	for _, ns := range []string{olmOperatorNamespace, contract.GitOpsNamespace} {
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	var objects []client.Object
	if e.olm {
		for _, crd := range olm.CRDs() {
			require.NoError(t, c.Client.Create(ctx, crd))
		}
		require.Eventually(t, func() bool {
			err := c.Client.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": olm.Group + "/" + olm.Version, "kind": "SubscriptionList"}})
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "OLM's CRDs served")
		objects = append(objects, olm.Subscription(olmOperatorNamespace, "openshift-gitops-operator", "openshift-gitops-operator"),
			olm.ClusterServiceVersion(olmOperatorNamespace, "openshift-gitops-operator.v1.16.0", "Red Hat OpenShift GitOps"))
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: olmOperatorNamespace, Name: contract.OperatorDeployment}}
	grant := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "openshift-gitops-operator-olm"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: olmOperatorNamespace, Name: account.Name}},
	}
	operator := runningOperator(account.Name, e.labels)
	instance := usersArgoCD()
	instance.SetName(e.instance)
	if !e.olm {
		instance.SetLabels(e.labels)
	}
	// No Dex: the nodes hold no Dex image, and the users' login is not what is proven here.
	unstructured.RemoveNestedField(instance.Object, "spec", "sso")
	argoImage, redisImage := splitImage(argocd.ArgoCDImageRef), splitImage(argocd.RedisImageRef)
	require.NoError(t, unstructured.SetNestedField(instance.Object, argoImage[0], "spec", "image"))
	require.NoError(t, unstructured.SetNestedField(instance.Object, argoImage[1], "spec", "version"))
	require.NoError(t, unstructured.SetNestedMap(instance.Object, map[string]any{"image": redisImage[0], "version": redisImage[1]}, "spec", "redis"))
	app := guestbookApplication(contract.GitOpsNamespace, usersApp)
	require.NoError(t, unstructured.SetNestedMap(app.Object, map[string]any{"repoURL": repoURL, "path": "guestbook", "targetRevision": "HEAD"},
		"spec", "source"))
	require.NoError(t, unstructured.SetNestedMap(app.Object, map[string]any{"server": "https://kubernetes.default.svc", "namespace": usersApp},
		"spec", "destination"))
	require.NoError(t, unstructured.SetNestedMap(app.Object, map[string]any{
		"automated": map[string]any{"prune": true, "selfHeal": true}, "syncOptions": []any{"CreateNamespace=true"},
	}, "spec", "syncPolicy"))
	return createSettled(t, ctx, c, operator, append(objects, account, grant, operator, instance, app)...)
}

// runningOperator is the GitOps operator's Deployment as OLM makes it from the CSV, with
// the image the nodes hold.
func runningOperator(serviceAccount string, labels map[string]string) *appsv1.Deployment {
	d := operatorInOLMsNamespace(labels, argocd.OperatorImageRef,
		corev1.EnvVar{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['olm.targetNamespaces']"}}})
	d.Spec.Template.Annotations = map[string]string{"olm.targetNamespaces": ""}
	pod := &d.Spec.Template.Spec
	pod.ServiceAccountName = serviceAccount
	pod.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	container := &pod.Containers[0]
	container.ImagePullPolicy = corev1.PullNever
	container.Args = []string{"--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--leader-elect"}
	container.Env = append(container.Env,
		corev1.EnvVar{Name: "ARGOCD_CLUSTER_CONFIG_NAMESPACES", Value: contract.GitOpsNamespace},
		corev1.EnvVar{Name: "OPERATOR_NAME", Value: "gitops-operator"})
	return d
}

// asTheyAre reads each object again.
func asTheyAre(t *testing.T, ctx context.Context, c client.Client, objects []client.Object) []client.Object {
	t.Helper()
	var out []client.Object
	for _, o := range objects {
		now := o.DeepCopyObject().(client.Object)
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(o), now))
		out = append(out, now)
	}
	return out
}

// splitImage is an image reference's repository and tag.
func splitImage(ref string) [2]string {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return [2]string{ref[:i], ref[i+1:]}
		}
	}
	return [2]string{ref, ""}
}

// argoCDRoles are the cluster roles and bindings the user's operator made for its
// instance (labelled managed-by the instance): the user's as much as the instance is.
func argoCDRoles(t *testing.T, ctx context.Context, c client.Client, instance string) []client.Object {
	t.Helper()
	var out []client.Object
	roles := &rbacv1.ClusterRoleList{}
	require.NoError(t, c.List(ctx, roles, client.MatchingLabels{"app.kubernetes.io/managed-by": instance}))
	for i := range roles.Items {
		out = append(out, &roles.Items[i])
	}
	bindings := &rbacv1.ClusterRoleBindingList{}
	require.NoError(t, c.List(ctx, bindings, client.MatchingLabels{"app.kubernetes.io/managed-by": instance}))
	for i := range bindings.Items {
		out = append(out, &bindings.Items[i])
	}
	require.NotEmpty(t, out, "the operator's roles for the user's instance")
	return out
}

// runningOperators counts the running pods of GitOps operators on a cluster, in every
// namespace.
func runningOperators(t *testing.T, ctx context.Context, c client.Client) int {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, c.List(ctx, pods))
	n := 0
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		for _, container := range pod.Spec.Containers {
			if container.Image == argocd.OperatorImageRef {
				n++
			}
		}
	}
	return n
}
