package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/hub/liveresources"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestHubRBACIsLeastPrivilege installs the manager chart's RBAC and grants a spoke agent
// its hub permissions through the product's own registration code, then asks the real
// apiserver's authorizer what each hub identity may and may not do, and tries the
// escalations a SubjectAccessReview cannot show (a RoleBinding to cluster-admin).
func TestHubRBACIsLeastPrivilege(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(testenv.OCMCRDPaths()...))
	ctx := context.Background()
	const namespace = chartNamespace
	_, err := installChart(ctx, helmConfig(t, env.KubeconfigFile(t), namespace), managerChart(t), map[string]any{})
	require.NoError(t, err, "helm install")

	argoNS := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "openshift-gitops"}, argoNS), "the chart creates its argoNamespace when missing")
	assert.Equal(t, "keep", argoNS.Annotations["helm.sh/resource-policy"], "and keeps it on uninstall")
	const cluster = "cluster1"
	for _, ns := range []string{cluster, "cluster2", "team-x"} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	agentUser, agentGroups := grantAgentHubPermissions(t, ctx, env.Client, env.Config, cluster)
	manager := fmt.Sprintf("system:serviceaccount:%s:gitops-addon-manager", namespace)
	managerGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}

	res := func(ns, group, resource, verb, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: verb, Name: name}
	}
	sub := func(a authorizationv1.ResourceAttributes, subresource string) authorizationv1.ResourceAttributes {
		a.Subresource = subresource
		return a
	}
	checks := []struct {
		name    string
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		// The manager: what its controllers need.
		{"manager writes Argo CD cluster Secrets", res("openshift-gitops", "", "secrets", "create", ""), true},
		{"manager watches Secrets in its argoNamespace", res("openshift-gitops", "", "secrets", "watch", ""), true},
		{"manager writes the acm-placement ConfigMap", res("openshift-gitops", "", "configmaps", "update", "acm-placement"), true},
		{"manager watches the principal's Service in its argoNamespace", res("openshift-gitops", "", "services", "watch", ""), true},
		{"manager watches the principal's Route in its argoNamespace", res("openshift-gitops", "route.openshift.io", "routes", "watch", ""), true},
		{"manager creates ManagedClusterAddOns", res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "create", ""), true},
		{"manager writes ManifestWorks", res(cluster, "work.open-cluster-management.io", "manifestworks", "patch", ""), true},
		{"manager writes GitOpsCluster status", sub(res("openshift-gitops", "apps.open-cluster-management.io", "gitopsclusters", "update", ""), "status"), true},
		{"manager grants the agent its hub RoleBinding", res(cluster, "rbac.authorization.k8s.io", "rolebindings", "create", ""), true},
		{"manager writes the ApplicationSet placement Role", res("team-x", "rbac.authorization.k8s.io", "roles", "update", ""), true},
		{"manager approves agent client certificates", res("", "certificates.k8s.io", "signers", "approve", "kubernetes.io/kube-apiserver-client"), true},
		{"manager signs Argo CD Agent client certificates", res("", "certificates.k8s.io", "signers", "sign", signer.SignerName), true},
		{"manager upgrades its own CRD", res("", "apiextensions.k8s.io", "customresourcedefinitions", "patch", "gitopsclusters.apps.open-cluster-management.io"), true},
		{"manager reads the hub's cluster ID (kube-system's UID)", res("", "", "namespaces", "get", "kube-system"), true},
		{"manager keeps its finalizer on GitOpsClusters", res("openshift-gitops", "apps.open-cluster-management.io", "gitopsclusters", "update", ""), true},
		{"manager sets GitOpsClusters as owners", sub(res("openshift-gitops", "apps.open-cluster-management.io", "gitopsclusters", "update", ""), "finalizers"), true},
		{"manager reads PlacementDecisions", res("openshift-gitops", "cluster.open-cluster-management.io", "placementdecisions", "list", ""), true},
		{"manager watches ManagedClusters", res("", "cluster.open-cluster-management.io", "managedclusters", "watch", ""), true},
		{"manager writes ManagedClusterAddOn status", sub(res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "patch", contract.AddonName), "status"), true},
		{"manager sets ManagedClusterAddOns as owners", sub(res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "update", contract.AddonName), "finalizers"), true},
		{"manager reads its ClusterManagementAddOn", res("", "addon.open-cluster-management.io", "clustermanagementaddons", "get", contract.AddonName), true},
		{"manager writes its ClusterManagementAddOn's status", sub(res("", "addon.open-cluster-management.io", "clustermanagementaddons", "patch", contract.AddonName), "status"), true},
		{"manager reads AddOnDeploymentConfigs", res("open-cluster-management-addon", "addon.open-cluster-management.io", "addondeploymentconfigs", "list", ""), true},
		{"manager records Events", res(cluster, "events.k8s.io", "events", "create", ""), true},
		{"manager holds the agent's lease rights, to grant them", res(cluster, "coordination.k8s.io", "leases", "update", contract.AddonName), true},
		{"manager renews its leader election Lease", res(namespace, "coordination.k8s.io", "leases", "update", "gitops-addon-manager"), true},
		{"manager records leader election Events", res(namespace, "", "events", "patch", ""), true},
		{"manager reads certificate requests", res("", "certificates.k8s.io", "certificatesigningrequests", "list", ""), true},
		{"manager approves certificate requests", sub(res("", "certificates.k8s.io", "certificatesigningrequests", "update", ""), "approval"), true},
		{"manager writes signed certificates", sub(res("", "certificates.k8s.io", "certificatesigningrequests", "update", ""), "status"), true},
		{"manager watches CRDs (Argo CD's, established)", res("", "apiextensions.k8s.io", "customresourcedefinitions", "watch", ""), true},
		{"manager creates a missing CRD of its own (its admission policy holds it to those)", res("", "apiextensions.k8s.io", "customresourcedefinitions", "create", ""), true},
		{"manager patches hub Applications (the pull model)", res("openshift-gitops", "argoproj.io", "applications", "patch", ""), true},
		{"manager reads AppProjects", res("openshift-gitops", "argoproj.io", "appprojects", "list", ""), true},
		{"manager writes MulticlusterApplicationSetReports", res("openshift-gitops", "apps.open-cluster-management.io", "multiclusterapplicationsetreports", "create", ""), true},
		// Live resources: a ManagedServiceAccount per cluster, its token and cluster-proxy's CA by name.
		{"manager creates ManagedServiceAccounts", res(cluster, "authentication.open-cluster-management.io", "managedserviceaccounts", "create", ""), true},
		{"manager reads a cluster's live-resources token", res(cluster, "", "secrets", "get", "gitops-addon-live-resources"), true},
		{"manager watches the live-resources tokens by name", res("", "", "secrets", "watch", "gitops-addon-live-resources"), true},
		{"manager reads cluster-proxy's CA certificate", res("open-cluster-management-addon", "", "secrets", "get", "proxy-server-ca"), true},
		{"manager reads cluster-proxy's configuration", res("", "proxy.open-cluster-management.io", "managedproxyconfigurations", "get", "cluster-proxy"), true},
		// The manager: must not.
		{"manager cannot read cluster-proxy's CA key", res("open-cluster-management-addon", "", "secrets", "get", "proxy-server-ca-key"), false},
		{"manager cannot read another Secret of a cluster namespace by name", res(cluster, "", "secrets", "get", "cluster1-kubeconfig"), false},
		{"manager cannot update ManagedServiceAccounts", res(cluster, "authentication.open-cluster-management.io", "managedserviceaccounts", "update", ""), false},
		{"manager cannot write cluster-proxy's configuration", res("", "proxy.open-cluster-management.io", "managedproxyconfigurations", "update", "cluster-proxy"), false},
		{"manager writes Routes", res("openshift-gitops", "route.openshift.io", "routes", "update", ""), false},
		{"manager cannot impersonate users", res("", "", "users", "impersonate", "admin"), false},
		{"manager cannot impersonate ServiceAccounts", res("kube-system", "", "serviceaccounts", "impersonate", "default"), false},
		{"manager cannot escalate ClusterRoles", res("", "rbac.authorization.k8s.io", "clusterroles", "escalate", ""), false},
		{"manager cannot escalate Roles", res(cluster, "rbac.authorization.k8s.io", "roles", "escalate", ""), false},
		{"manager cannot bind ClusterRoles", res("", "rbac.authorization.k8s.io", "clusterroles", "bind", "cluster-admin"), false},
		{"manager cannot create ClusterRoleBindings", res("", "rbac.authorization.k8s.io", "clusterrolebindings", "create", ""), false},
		{"manager cannot request ServiceAccount tokens", sub(res("kube-system", "", "serviceaccounts", "create", "default"), "token"), false},
		{"manager cannot exec into pods", sub(res("kube-system", "", "pods", "create", ""), "exec"), false},
		{"manager cannot create pods", res("kube-system", "", "pods", "create", ""), false},
		{"manager cannot delete CRDs", res("", "apiextensions.k8s.io", "customresourcedefinitions", "delete", "gitopsclusters.apps.open-cluster-management.io"), false},
		{"manager cannot change others' CRDs", res("", "apiextensions.k8s.io", "customresourcedefinitions", "update", "applications.argoproj.io"), false},
		{"manager cannot write webhooks", res("", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "create", ""), false},
		{"manager cannot write admission policies", res("", "admissionregistration.k8s.io", "validatingadmissionpolicies", "create", ""), false},
		{"manager cannot patch nodes", res("", "", "nodes", "patch", "node-1"), false},
		{"manager cannot approve kubelet serving certificates", res("", "certificates.k8s.io", "signers", "approve", "kubernetes.io/kubelet-serving"), false},
		{"manager cannot sign hub client certificates", res("", "certificates.k8s.io", "signers", "sign", "kubernetes.io/kube-apiserver-client"), false},
		{"manager cannot sign kubelet serving certificates", res("", "certificates.k8s.io", "signers", "sign", "kubernetes.io/kubelet-serving"), false},
		{"manager cannot delete namespaces", res("", "", "namespaces", "delete", cluster), false},
		{"manager cannot delete ManagedClusters", res("", "cluster.open-cluster-management.io", "managedclusters", "delete", cluster), false},
		{"manager cannot write Deployments", res("kube-system", "apps", "deployments", "patch", ""), false},
		{"manager cannot read Secrets in kube-system", res("kube-system", "", "secrets", "get", "bootstrap-token-abcdef"), false},
		{"manager cannot list Secrets cluster-wide", res("", "", "secrets", "list", ""), false},
		{"manager cannot read Secrets of a cluster namespace", res(cluster, "", "secrets", "get", ""), false},
		{"manager cannot write Secrets outside its argoNamespaces", res("team-x", "", "secrets", "create", ""), false},
		{"manager cannot write ConfigMaps in kube-system", res("kube-system", "", "configmaps", "update", "kube-proxy"), false},
		{"manager cannot write Services", res("openshift-gitops", "", "services", "patch", ""), false},
		{"manager cannot patch RoleBindings (it creates and updates them)", res(cluster, "rbac.authorization.k8s.io", "rolebindings", "patch", ""), false},
		{"manager cannot delete Leases outside its namespace", res(cluster, "coordination.k8s.io", "leases", "delete", contract.AddonName), false},
		{"manager cannot ask the authorizer about others", res("", "authorization.k8s.io", "subjectaccessreviews", "create", ""), false},
		{"manager cannot read ManagedClusterSets", res("", "cluster.open-cluster-management.io", "managedclustersets", "list", ""), false},
	}
	agentChecks := []struct {
		name    string
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{"agent reports its addon's status", sub(res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "patch", contract.AddonName), "status"), true},
		{"agent keeps its lease", res(cluster, "coordination.k8s.io", "leases", "update", contract.AddonName), true},
		{"agent reads its addon", res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "get", contract.AddonName), true},
		{"agent records Events", res(cluster, "", "events", "create", ""), true},
		{"agent cannot change its addon's spec", res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "patch", contract.AddonName), false},
		{"agent cannot touch another addon", sub(res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "patch", "other-addon"), "status"), false},
		{"agent cannot read Secrets of its cluster namespace", res(cluster, "", "secrets", "get", ""), false},
		{"agent cannot read ManifestWorks", res(cluster, "work.open-cluster-management.io", "manifestworks", "list", ""), false},
		{"agent cannot reach another cluster's namespace", sub(res("cluster2", "addon.open-cluster-management.io", "managedclusteraddons", "patch", contract.AddonName), "status"), false},
		{"agent cannot read Argo CD cluster Secrets", res("openshift-gitops", "", "secrets", "list", ""), false},
		{"agent cannot write RBAC", res(cluster, "rbac.authorization.k8s.io", "rolebindings", "create", ""), false},
		{"agent cannot impersonate", res("", "", "users", "impersonate", "admin"), false},
		{"agent cannot read ManagedClusters", res("", "cluster.open-cluster-management.io", "managedclusters", "list", ""), false},
		{"agent cannot read GitOpsClusters", res("openshift-gitops", "apps.open-cluster-management.io", "gitopsclusters", "list", ""), false},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			allowed, reason := testenv.Allowed(t, ctx, env.Client, manager, managerGroups, testenv.Access{Resource: c.attrs})
			assert.Equal(t, c.allowed, allowed, reason)
		})
	}
	for _, c := range agentChecks {
		t.Run(c.name, func(t *testing.T) {
			allowed, reason := testenv.Allowed(t, ctx, env.Client, agentUser, agentGroups, testenv.Access{Resource: c.attrs})
			assert.Equal(t, c.allowed, allowed, reason)
		})
	}

	// The agent's RoleBinding binds its own user and its cluster's group, not the group every
	// cluster's agent of the addon is in: another cluster's agent has nothing here.
	t.Run("another cluster's agent has nothing in this cluster's namespace", func(t *testing.T) {
		otherUser := agent.DefaultUser("cluster2", contract.AddonName, contract.AgentName)
		otherGroups := append(agent.DefaultGroups("cluster2", contract.AddonName), "system:authenticated")
		for _, attrs := range []authorizationv1.ResourceAttributes{
			sub(res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "patch", contract.AddonName), "status"),
			res(cluster, "addon.open-cluster-management.io", "managedclusteraddons", "get", contract.AddonName),
			res(cluster, "coordination.k8s.io", "leases", "update", contract.AddonName),
			res(cluster, "", "events", "create", ""),
		} {
			allowed, reason := testenv.Allowed(t, ctx, env.Client, otherUser, otherGroups, testenv.Access{Resource: attrs})
			assert.False(t, allowed, "cluster2's agent: %+v (%s)", attrs, reason)
		}
	})

	// Creating Roles and RoleBindings is what the manager must do; RBAC's escalation check
	// keeps that from granting anything the manager does not hold itself.
	asManager := testenv.Impersonating(t, env.Config, manager, managerGroups)
	t.Run("manager cannot bind cluster-admin through a RoleBinding it may create", func(t *testing.T) {
		err := asManager.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "escalate"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: agentUser}},
		})
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
	})
	t.Run("manager cannot create a CRD that is not its own (the chart's admission policy)", func(t *testing.T) {
		if !testenv.ServesValidatingAdmissionPolicyV1(t, env.Config) {
			t.Skip("Kubernetes before 1.30 serves no ValidatingAdmissionPolicy v1: the chart leaves its policy out (docs/operations/compatibility.md)")
		}
		widgets := unrelatedCRD()
		// RBAC allows the create (it cannot name what is created); the policy denies it
		// once the apiserver has loaded it.
		var createErr error
		require.Eventually(t, func() bool {
			createErr = asManager.Create(ctx, widgets.DeepCopy())
			if createErr == nil {
				require.NoError(t, env.Client.Delete(ctx, widgets.DeepCopy()))
			}
			// Created before the apiserver loaded the policy: the CRD is being deleted (its
			// cleanup finalizer) and the next create finds it there; try again once it is gone.
			return createErr != nil && !apierrors.IsAlreadyExists(createErr)
		}, 30*time.Second, 200*time.Millisecond, "the manager created an unrelated CRD")
		assert.Contains(t, createErr.Error(), "the gitops-addon manager may create or change only its own CRDs")
		assert.Contains(t, createErr.Error(), "gitopsclusters.apps.open-cluster-management.io")

		own := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, asManager.Get(ctx, client.ObjectKey{Name: "gitopsclusters.apps.open-cluster-management.io"}, own))
		metav1.SetMetaDataAnnotation(&own.ObjectMeta, "example.com/touched", "yes")
		require.NoError(t, asManager.Update(ctx, own), "its own CRDs stay writable")
	})

	// What the manager asks at its start before it reads the live resources' Secrets
	// (liveresources.MissingGrants), answered by this apiserver's authorizer: nothing
	// missing under the chart's ClusterRole; every read of both names for an identity
	// without it, which the manager then runs without live resources for and says so.
	t.Run("live resources: the manager may read both Secrets; an identity without the chart's rules is told each missing read", func(t *testing.T) {
		missing, err := liveresources.MissingGrants(ctx, asManager)
		require.NoError(t, err)
		assert.Empty(t, missing)
		nobody := testenv.Impersonating(t, env.Config, "system:serviceaccount:"+namespace+":nobody",
			[]string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"})
		missing, err = liveresources.MissingGrants(ctx, nobody)
		require.NoError(t, err)
		assert.Equal(t, []string{
			"get Secrets gitops-addon-live-resources", "list Secrets gitops-addon-live-resources", "watch Secrets gitops-addon-live-resources",
			"get Secrets proxy-server-ca", "list Secrets proxy-server-ca", "watch Secrets proxy-server-ca",
		}, missing)
	})

	t.Run("manager cannot write a Role granting pods/exec", func(t *testing.T) {
		err := asManager.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "escalate"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}},
		})
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
	})
}

// grantAgentHubPermissions runs the addon's registration PermissionConfig, as
// addon-framework does for a cluster, and returns the agent's hub user and groups.
func grantAgentHubPermissions(t *testing.T, ctx context.Context, c client.Client, cfg *rest.Config, cluster string) (string, []string) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	a, err := addon.New(addon.Options{AgentImage: "quay.io/gitops-addon/gitops-addon:test", KubeClient: kube})
	require.NoError(t, err)
	reg := a.GetAgentAddonOptions().Registration
	require.NotNil(t, reg)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
	mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: contract.AddonName}}
	require.NoError(t, c.Create(ctx, mca), "the Role and RoleBinding are owned by the ManagedClusterAddOn")
	configs, err := reg.Configurations(ctx, mc, mca)
	require.NoError(t, err)
	require.Len(t, configs, 1)
	// addon-framework's registration controller records the subject before permissions
	// are granted to it.
	mca.Status.Registrations = []addonv1beta1.RegistrationConfig{configs[0].RegistrationAPI()}
	require.NoError(t, c.Status().Update(ctx, mca))
	require.NoError(t, reg.PermissionConfig(ctx, mc, mca))
	subject, ok := configs[0].(*agent.KubeClientRegistration)
	require.True(t, ok, "a kube-apiserver client registration: %T", configs[0])
	return subject.User, append(subject.Groups, "system:authenticated")
}

// unrelatedCRD is a CRD neither gitops-addon nor Argo CD owns: the admission policies of
// the manager's and the agent's charts must deny their identities creating it.
func unrelatedCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
			}},
		},
	}
}
