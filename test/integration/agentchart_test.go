package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/releaseutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/comparisonretry"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
	"github.com/gitops-addon/gitops-addon/test/agentchart"
	"github.com/gitops-addon/gitops-addon/test/pki"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// applicationControllerSA is the ServiceAccount the operator creates for the Argo CD
// application controller of the openshift-gitops instance.
const applicationControllerSA = "openshift-gitops-argocd-application-controller"

// startAPIServer starts a real kube-apiserver and etcd (RBAC authorization) from the
// repository's bin directory and returns its config and a client.
func startAPIServer(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	env := testenv.Start(t)
	return env.Config, env.Client
}

// applyRendered creates every object the way a strict apply would: the CRDs the agent
// installs first, waiting until they serve, then the rendered objects with strict field
// validation, so that a field the apiserver does not know is an error rather than
// silently dropped.
func applyRendered(t *testing.T, ctx context.Context, kubeClient client.Client, objects []*unstructured.Unstructured) {
	t.Helper()
	embedded, err := crdinstall.Load()
	require.NoError(t, err)
	crds := append(slices.Clone(embedded.ArgoCD), embedded.Routes)
	for _, crd := range crds {
		object, err := crd.Decode()
		require.NoError(t, err)
		require.NoError(t, kubeClient.Create(ctx, object, client.FieldValidation("Strict")), "creating CRD %s", crd.Name())
	}
	for _, crd := range crds {
		waitEstablished(t, ctx, kubeClient, crd.Name())
	}
	createInInstallOrder(t, ctx, kubeClient, objects)
}

// createInInstallOrder creates the objects in the addon framework's order, with strict
// field validation.
func createInInstallOrder(t *testing.T, ctx context.Context, kubeClient client.Client, objects []*unstructured.Unstructured) {
	t.Helper()
	for _, object := range inInstallOrder(objects) {
		// The client's REST mapper learns about new CRDs lazily: retry while it does not
		// know the kind yet, fail at once on any other error.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err := kubeClient.Create(ctx, object.DeepCopy(), client.FieldValidation("Strict"))
			if meta.IsNoMatchError(err) {
				return false, nil
			}
			return err == nil, err
		})
		require.NoError(t, err, "creating %s %s/%s", object.GetKind(), object.GetNamespace(), object.GetName())
	}
}

// inInstallOrder sorts objects by kind as the addon framework does before building the
// ManifestWork (Helm's install order: namespaces first, unknown kinds last).
func inInstallOrder(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
	rank := func(kind string) int {
		if index := slices.Index(releaseutil.InstallOrder, kind); index >= 0 {
			return index
		}
		return len(releaseutil.InstallOrder)
	}
	sorted := slices.Clone(objects)
	slices.SortStableFunc(sorted, func(a, b *unstructured.Unstructured) int {
		return rank(a.GetKind()) - rank(b.GetKind())
	})
	return sorted
}

func waitEstablished(t *testing.T, ctx context.Context, kubeClient client.Client, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := kubeClient.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		return apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established), nil
	})
	require.NoError(t, err, "CRD %s never became established", name)
}

func TestRenderedManifestsOnARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	config, kubeClient := startAPIServer(t)

	objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{
		"platformExtensions": map[string]any{"extraAPIGroups": []any{"cert-manager.io"}},
		"argoCD":             map[string]any{"image": "quay.io/argoproj/argocd:v3.1.0", "redisImage": "mirror:5000/redis@sha256:0123"},
		"global":             map[string]any{"proxyConfig": map[string]any{"HTTPS_PROXY": "http://proxy:3128"}},
		// Argo CD Agent mode: the ArgoCD CR's agent settings, the CA Secret and the
		// agent's certificate RBAC are applied too.
		"argoCDAgent": map[string]any{"mode": "managed", "principalAddress": "principal.example.com", "principalPort": "443", "caCertificate": agentChartTestCA(t)},
		// The basic pull model's live-resources reader (managed-serviceaccount's ServiceAccount),
		// bound to the same read-only role as argocd-agent.
		"liveResources": map[string]any{"reader": map[string]any{"namespace": "open-cluster-management-agent-addon", "name": "gitops-addon-live-resources"}},
	}))
	// The klusterlet creates the default addon namespace; the chart does not.
	require.NoError(t, kubeClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentchart.InstallNamespace}}))
	applyRendered(t, ctx, kubeClient, objects)

	t.Run("ArgoCD CR is stored as rendered", func(t *testing.T) {
		rendered := agentchart.MustFind(t, objects, "ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName)
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(contract.ArgoCDGVK)
		require.NoError(t, kubeClient.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName}, stored))
		// Pruning would remove unknown fields silently; strict validation already
		// refused them, and nothing was defaulted away either.
		for key, value := range rendered.Object["spec"].(map[string]any) {
			assert.Equal(t, value, stored.Object["spec"].(map[string]any)[key], "spec.%s", key)
		}
	})

	t.Run("RBAC grants exactly what the comments say", func(t *testing.T) {
		agent := serviceAccountUser(agentchart.InstallNamespace, contract.AgentDeployment)
		operator := serviceAccountUser(contract.GitOpsNamespace, contract.OperatorDeployment)
		controller := serviceAccountUser(contract.GitOpsNamespace, applicationControllerSA)
		argoCDAgent := serviceAccountUser(contract.GitOpsNamespace, argocdagent.ServiceAccount(contract.ArgoCDName))
		reader := serviceAccountUser("open-cluster-management-agent-addon", "gitops-addon-live-resources")

		checks := []struct {
			name    string
			user    string
			attrs   authorizationv1.ResourceAttributes
			path    string // a non-resource URL instead of attrs
			allowed bool
		}{
			{"agent deletes the Routes CRD", agent, crdAttrs("delete", contract.RoutesCRDName), "", true},
			{"agent cannot delete Argo CD CRDs", agent, crdAttrs("delete", "applications.argoproj.io"), "", false},
			{"agent creates CRDs (its admission policy holds it to its own names)", agent, crdAttrs("create", ""), "", true},
			{"agent patches the CRDs it installs", agent, crdAttrs("patch", "argocds.argoproj.io"), "", true},
			{"agent updates the Routes CRD it installs", agent, crdAttrs("update", contract.RoutesCRDName), "", true},
			{"agent cannot patch other CRDs", agent, crdAttrs("patch", "certificates.cert-manager.io"), "", false},
			{"agent cannot update other CRDs", agent, crdAttrs("update", "widgets.example.com"), "", false},
			{"agent cannot delete other CRDs", agent, crdAttrs("delete", "widgets.example.com"), "", false},
			{"agent watches APIServices", agent, authorizationv1.ResourceAttributes{Group: "apiregistration.k8s.io", Resource: "apiservices", Verb: "watch"}, "", true},
			{"agent creates its admission policy", agent, vapAttrs("create", ""), "", true},
			{"agent updates its admission policy", agent, vapAttrs("update", "gitops-addon-deny-routes-crd"), "", true},
			{"agent cannot update other admission policies", agent, vapAttrs("update", "someone-elses"), "", false},
			{"agent cannot delete other admission policies", agent, vapAttrs("delete", "someone-elses"), "", false},
			{"agent reads OpenAPI v3", agent, authorizationv1.ResourceAttributes{}, "/openapi/v3/apis/route.openshift.io/v1", true},
			{"agent records Events", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "events", Verb: "create"}, "", true},
			{"agent records Events (events.k8s.io)", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "events.k8s.io", Resource: "events", Verb: "patch"}, "", true},
			{"agent reads its own pods", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "pods", Verb: "list"}, "", true},
			{"agent updates its lease", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Group: "coordination.k8s.io", Resource: "leases", Verb: "update"}, "", true},
			{"agent has no leases elsewhere", agent, authorizationv1.ResourceAttributes{Namespace: "default", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"}, "", false},
			{"agent cannot read secrets", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "secrets", Verb: "get"}, "", false},
			{"agent (agent mode) reads the certificate OCM keeps for argocd-agent", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "secrets", Verb: "watch", Name: argocdagent.SourceSecretName(contract.AddonName, signer.SignerName)}, "", true},
			{"agent (agent mode) cannot read its own hub credential", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "secrets", Verb: "get", Name: contract.HubKubeconfigSecret}, "", false},
			{"agent (agent mode) creates argocd-agent-client-tls", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "create"}, "", true},
			{"agent deletes argocd-agent-client-tls (the teardown hook, and out of agent mode)", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "delete", Name: "argocd-agent-client-tls"}, "", true},
			{"agent (agent mode) keeps argocd-agent-client-tls", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "update", Name: "argocd-agent-client-tls"}, "", true},
			// Repository credentials (pkg/spoke/repocreds): RBAC cannot narrow Secrets by
			// label, so the agent reads the Argo CD namespace's Secrets as Argo CD does; its
			// writes there are held to its own by gitops-addon-agent-secrets (below).
			{"agent lists the Secrets of the Argo CD namespace (repository credentials)", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "list"}, "", true},
			{"agent creates and deletes Secrets in the Argo CD namespace (its admission policy holds it to its own)", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "delete", Name: "private-repo"}, "", true},
			{"agent cannot patch Secrets of the Argo CD namespace", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "patch", Name: "argocd-secret"}, "", false},
			{"agent cannot read Secrets of other namespaces", agent, authorizationv1.ResourceAttributes{Namespace: "kube-system", Resource: "secrets", Verb: "list"}, "", false},
			{"agent cannot write Secrets of other namespaces", agent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "secrets", Verb: "create"}, "", false},
			{"agent (agent mode) restarts argocd-agent", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "apps", Resource: "deployments", Verb: "patch", Name: "openshift-gitops-agent-agent"}, "", true},
			{"agent (agent mode) cannot change other Deployments", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "apps", Resource: "deployments", Verb: "patch", Name: "openshift-gitops-server"}, "", false},

			// The existing Argo CD detector (pkg/spoke/existingargocd) reads, never writes.
			{"agent lists ArgoCDs everywhere (an Argo CD it did not create)", agent, authorizationv1.ResourceAttributes{Group: "argoproj.io", Resource: "argocds", Verb: "list"}, "", true},
			{"agent watches OLM's Subscriptions", agent, authorizationv1.ResourceAttributes{Group: "operators.coreos.com", Resource: "subscriptions", Verb: "watch"}, "", true},
			{"agent watches OLM's ClusterServiceVersions", agent, authorizationv1.ResourceAttributes{Group: "operators.coreos.com", Resource: "clusterserviceversions", Verb: "watch"}, "", true},
			{"agent cannot change OLM's Subscriptions", agent, authorizationv1.ResourceAttributes{Namespace: "openshift-gitops-operator", Group: "operators.coreos.com", Resource: "subscriptions", Verb: "patch", Name: "openshift-gitops-operator"}, "", false},
			{"agent watches Deployments everywhere (operators watching openshift-gitops)", agent, authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Verb: "watch"}, "", true},
			{"agent cannot change another operator's Deployment", agent, authorizationv1.ResourceAttributes{Namespace: "openshift-gitops-operator", Group: "apps", Resource: "deployments", Verb: "update", Name: "openshift-gitops-operator-controller-manager"}, "", false},
			{"agent cannot change another ArgoCD", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "argocds", Verb: "patch", Name: "acm-openshift-gitops"}, "", false},
			{"agent creates its creation record", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "configmaps", Verb: "create"}, "", true},
			{"agent updates its creation record", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "configmaps", Verb: "update", Name: contract.CreationRecordConfigMap}, "", true},
			{"agent cannot update other ConfigMaps of its namespace", agent, authorizationv1.ResourceAttributes{Namespace: agentchart.InstallNamespace, Resource: "configmaps", Verb: "update", Name: "someone-elses"}, "", false},
			{"agent cannot write ConfigMaps elsewhere", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "configmaps", Verb: "create"}, "", false},

			{"operator escalates cluster roles", operator, authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "escalate"}, "", true},
			{"operator binds cluster roles", operator, authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind"}, "", true},
			{"operator manages ArgoCDs", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "argocds/finalizers", Verb: "update"}, "", true},
			{"operator cannot write CRDs", operator, crdAttrs("create", ""), "", false},
			{"agent's teardown hook deletes our ArgoCD", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "argocds", Verb: "delete", Name: contract.ArgoCDName}, "", true},
			{"agent cannot delete another ArgoCD", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "argocds", Verb: "delete", Name: "team-argocd"}, "", false},
			{"agent's teardown hook watches the Applications its ArgoCD must prune first", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "applications", Verb: "watch"}, "", true},
			{"agent cannot watch Applications of other namespaces", agent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "argoproj.io", Resource: "applications", Verb: "watch"}, "", false},
			{"agent may patch Applications in the Argo CD namespace (the admission policy holds it to the resource summary annotation)", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "applications", Verb: "patch"}, "", true},
			{"agent cannot patch Applications of other namespaces", agent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "argoproj.io", Resource: "applications", Verb: "patch"}, "", false},
			{"agent watches the AppProjects of the Argo CD namespace (whether a missing project exists now)", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "appprojects", Verb: "watch"}, "", true},
			{"agent cannot watch AppProjects of other namespaces", agent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "argoproj.io", Resource: "appprojects", Verb: "watch"}, "", false},
			{"agent cannot change AppProjects", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "appprojects", Verb: "patch"}, "", false},
			{"agent cannot create Applications", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "applications", Verb: "create"}, "", false},
			{"agent cannot delete Applications", agent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "applications", Verb: "delete"}, "", false},
			{"agent cannot delete ArgoCDs of other namespaces", agent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "argoproj.io", Resource: "argocds", Verb: "delete", Name: contract.ArgoCDName}, "", false},
			{"operator manages the components' Secrets", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "create"}, "", true},
			{"operator records Events", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "events", Verb: "create"}, "", true},
			{"operator reads namespaces", operator, authorizationv1.ResourceAttributes{Resource: "namespaces", Verb: "list"}, "", true},
			{"operator manages the components' Deployments", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "apps", Resource: "deployments", Verb: "update"}, "", true},
			{"operator writes NetworkPolicies", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "create"}, "", true},
			{"operator sets the server Route's host", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "route.openshift.io", Resource: "routes", Subresource: "custom-host", Verb: "create"}, "", true},
			{"operator manages the image updater's kinds", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argocd-image-updater.argoproj.io", Resource: "imageupdaters", Verb: "create"}, "", true},
			{"operator writes ServiceMonitors", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "monitoring.coreos.com", Resource: "servicemonitors", Verb: "create"}, "", true},
			{"operator writes HorizontalPodAutoscalers", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "autoscaling", Resource: "horizontalpodautoscalers", Verb: "create"}, "", true},
			{"operator runs Jobs", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "batch", Resource: "jobs", Verb: "create"}, "", true},
			{"operator elects a leader", operator, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "coordination.k8s.io", Resource: "leases", Verb: "update"}, "", true},
			{"operator reads the cluster version (OpenShift)", operator, authorizationv1.ResourceAttributes{Group: "config.openshift.io", Resource: "clusterversions", Verb: "get", Name: "version"}, "", true},
			{"operator writes console links (OpenShift)", operator, authorizationv1.ResourceAttributes{Group: "console.openshift.io", Resource: "consolelinks", Verb: "create"}, "", true},
			{"operator manages GitopsServices", operator, authorizationv1.ResourceAttributes{Group: "pipelines.openshift.io", Resource: "gitopsservices", Verb: "update"}, "", true},
			{"operator writes OAuth clients (OpenShift)", operator, authorizationv1.ResourceAttributes{Group: "oauth.openshift.io", Resource: "oauthclients", Verb: "create"}, "", true},
			{"operator reads CRDs (which optional APIs are installed)", operator, crdAttrs("list", ""), "", true},
			{"operator reads APIServices (its start-up check for Routes and Prometheus)", operator, authorizationv1.ResourceAttributes{Group: "apiregistration.k8s.io", Resource: "apiservices", Verb: "get", Name: "v1.monitoring.coreos.com"}, "", true},
			{"operator cannot write APIServices", operator, authorizationv1.ResourceAttributes{Group: "apiregistration.k8s.io", Resource: "apiservices", Verb: "update", Name: "v1.route.openshift.io"}, "", false},
			{"operator cannot delete namespaces", operator, authorizationv1.ResourceAttributes{Resource: "namespaces", Verb: "delete", Name: "default"}, "", false},

			// argocd-agent (Argo CD Agent mode) reads for the hub's Argo CD UI, never writes.
			{"argocd-agent reads a live manifest", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "apps", Resource: "deployments", Verb: "get", Name: "web"}, "", true},
			{"argocd-agent reads a Pod of the tree", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Verb: "get", Name: "web-1"}, "", true},
			{"argocd-agent reads a Pod's logs", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Subresource: "log", Verb: "get", Name: "web-1"}, "", true},
			{"argocd-agent lists Events", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "events", Verb: "list"}, "", true},
			{"argocd-agent reads the extra API group", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "cert-manager.io", Resource: "certificates", Verb: "get", Name: "web"}, "", true},
			{"argocd-agent reads a Job", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "batch", Resource: "jobs", Verb: "get", Name: "migrate"}, "", true},
			{"argocd-agent reads an Ingress", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "networking.k8s.io", Resource: "ingresses", Verb: "get", Name: "web"}, "", true},
			{"argocd-agent reads a PodDisruptionBudget", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "policy", Resource: "poddisruptionbudgets", Verb: "get", Name: "web"}, "", true},
			{"argocd-agent reads a HorizontalPodAutoscaler", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "autoscaling", Resource: "horizontalpodautoscalers", Verb: "get", Name: "web"}, "", true},
			{"argocd-agent reads an Application of an app-of-apps", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "applications", Verb: "get", Name: "child"}, "", true},
			{"argocd-agent cannot read Secrets outside its namespace", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "secrets", Verb: "get", Name: "db"}, "", false},
			{"argocd-agent cannot list Pods", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Verb: "list"}, "", false},
			{"argocd-agent cannot patch a Deployment (a resource action from the hub)", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "apps", Resource: "deployments", Verb: "patch", Name: "web"}, "", false},
			{"argocd-agent cannot delete a Pod (deleting from the hub's UI)", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Verb: "delete", Name: "web-1"}, "", false},
			{"argocd-agent cannot exec into a Pod", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Subresource: "exec", Verb: "create", Name: "web-1"}, "", false},
			{"argocd-agent cannot get a Pod's exec (websocket upgrade)", argoCDAgent, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Subresource: "exec", Verb: "get", Name: "web-1"}, "", false},

			// The live-resources reader (the basic pull model's, whose token the hub's Argo CD
			// presents through cluster-proxy) reads the same, and nothing else.
			{"the reader reads a live manifest", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "apps", Resource: "deployments", Verb: "get", Name: "web"}, "", true},
			{"the reader reads a Pod's logs", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Subresource: "log", Verb: "get", Name: "web-1"}, "", true},
			{"the reader lists Events", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "events", Verb: "list"}, "", true},
			{"the reader reads the extra API group", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "cert-manager.io", Resource: "certificates", Verb: "get", Name: "web"}, "", true},
			{"the reader reads a Job", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "batch", Resource: "jobs", Verb: "get", Name: "migrate"}, "", true},
			{"the reader reads an Ingress", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "networking.k8s.io", Resource: "ingresses", Verb: "get", Name: "web"}, "", true},
			{"the reader reads a PodDisruptionBudget", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "policy", Resource: "poddisruptionbudgets", Verb: "get", Name: "web"}, "", true},
			{"the reader reads a HorizontalPodAutoscaler", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "autoscaling", Resource: "horizontalpodautoscalers", Verb: "get", Name: "web"}, "", true},
			{"the reader reads an Application of an app-of-apps", reader, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "applications", Verb: "get", Name: "child"}, "", true},
			{"the reader cannot read a Secret", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "secrets", Verb: "get", Name: "db"}, "", false},
			{"the reader cannot read Argo CD's Secrets", reader, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "secrets", Verb: "get", Name: "argocd-secret"}, "", false},
			{"the reader cannot list Pods", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Verb: "list"}, "", false},
			{"the reader cannot patch a Deployment", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "apps", Resource: "deployments", Verb: "patch", Name: "web"}, "", false},
			{"the reader cannot delete a Pod", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Verb: "delete", Name: "web-1"}, "", false},
			{"the reader cannot exec into a Pod", reader, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Subresource: "exec", Verb: "create", Name: "web-1"}, "", false},
			{"the reader cannot request a ServiceAccount token", reader, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Resource: "serviceaccounts", Subresource: "token", Verb: "create", Name: "openshift-gitops-argocd-application-controller"}, "", false},

			{"controller deploys workloads", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "apps", Resource: "deployments", Verb: "create"}, "", true},
			{"controller manages Applications", controller, authorizationv1.ResourceAttributes{Namespace: contract.GitOpsNamespace, Group: "argoproj.io", Resource: "applications", Verb: "patch"}, "", true},
			{"controller gets the extra API group", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "cert-manager.io", Resource: "certificates", Verb: "create"}, "", true},
			{"controller runs Jobs", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "batch", Resource: "jobs", Verb: "create"}, "", true},
			{"controller exposes by Ingresses", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "networking.k8s.io", Resource: "ingresses", Verb: "create"}, "", true},
			{"controller writes PodDisruptionBudgets", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "policy", Resource: "poddisruptionbudgets", Verb: "create"}, "", true},
			{"controller writes HorizontalPodAutoscalers", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "autoscaling", Resource: "horizontalpodautoscalers", Verb: "create"}, "", true},
			{"controller writes Routes", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "route.openshift.io", Resource: "routes", Verb: "create"}, "", true},
			{"controller writes ServiceMonitors", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "monitoring.coreos.com", Resource: "servicemonitors", Verb: "create"}, "", true},
			{"controller cannot write RBAC", controller, authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings", Verb: "create"}, "", false},
			{"controller cannot escalate", controller, authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "escalate"}, "", false},
			{"controller cannot impersonate", controller, authorizationv1.ResourceAttributes{Resource: "users", Verb: "impersonate", Name: "admin"}, "", false},
			{"controller cannot install CRDs", controller, crdAttrs("create", ""), "", false},
			{"controller cannot touch nodes", controller, authorizationv1.ResourceAttributes{Resource: "nodes", Verb: "patch"}, "", false},
			{"controller manages ServiceAccounts", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "serviceaccounts", Verb: "create"}, "", true},
			{"controller cannot impersonate a ServiceAccount", controller, authorizationv1.ResourceAttributes{Namespace: "kube-system", Resource: "serviceaccounts", Verb: "impersonate", Name: "clusterrole-aggregation-controller"}, "", false},
			{"controller cannot request ServiceAccount tokens", controller, authorizationv1.ResourceAttributes{Namespace: "kube-system", Resource: "serviceaccounts", Subresource: "token", Verb: "create", Name: "default"}, "", false},
			{"controller watches the Pods of its trees", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Verb: "watch"}, "", true},
			{"controller reads ControllerRevisions", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Group: "apps", Resource: "controllerrevisions", Verb: "list"}, "", true},
			{"controller cannot delete Pods", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Verb: "delete", Name: "web-1"}, "", false},
			{"controller cannot exec into pods", controller, authorizationv1.ResourceAttributes{Namespace: "team-a", Resource: "pods", Subresource: "exec", Verb: "create"}, "", false},
			{"controller cannot impersonate in an extra API group", controller, authorizationv1.ResourceAttributes{Group: "cert-manager.io", Resource: "certificates", Verb: "impersonate"}, "", false},
			{"controller cannot write webhooks", controller, authorizationv1.ResourceAttributes{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "create"}, "", false},
			{"operator cannot impersonate in argoproj.io", operator, authorizationv1.ResourceAttributes{Group: "argoproj.io", Resource: "argocds", Verb: "impersonate"}, "", false},
		}
		for _, check := range checks {
			allowed, reason := testenv.Allowed(t, ctx, kubeClient, check.user, []string{"system:serviceaccounts", "system:authenticated"},
				testenv.Access{Resource: check.attrs, Path: check.path})
			assert.Equal(t, check.allowed, allowed, "%s (%s)", check.name, reason)
		}
	})

	t.Run("the agent's identity cannot create or change a CRD it does not own", func(t *testing.T) {
		asAgent := impersonating(t, config, agentchart.InstallNamespace, contract.AgentDeployment)
		widgets := unrelatedCRD()
		// The policy is enforced once the apiserver has loaded it: wait for the denial.
		var createErr error
		require.Eventually(t, func() bool {
			createErr = asAgent.Create(ctx, widgets.DeepCopy())
			if createErr == nil {
				require.NoError(t, kubeClient.Delete(ctx, widgets.DeepCopy()))
			}
			return createErr != nil
		}, 30*time.Second, 200*time.Millisecond, "the agent created an unrelated CRD")
		assert.True(t, apierrors.IsForbidden(createErr) || apierrors.IsInvalid(createErr), "%v", createErr)
		assert.Contains(t, createErr.Error(), "may create or change only the CRDs it installs")

		// Someone else's CRD: RBAC refuses any change by name.
		require.NoError(t, kubeClient.Create(ctx, widgets.DeepCopy()))
		waitEstablished(t, ctx, kubeClient, widgets.Name)
		theirs := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, kubeClient.Get(ctx, client.ObjectKey{Name: widgets.Name}, theirs))
		theirs.Labels = map[string]string{contract.LabelManagedBy: contract.ManagedByValue}
		err := asAgent.Update(ctx, theirs)
		assert.True(t, apierrors.IsForbidden(err), "updating someone else's CRD: %v", err)
		err = asAgent.Delete(ctx, theirs)
		assert.True(t, apierrors.IsForbidden(err), "deleting someone else's CRD: %v", err)

		// Its own: a server-side apply of the embedded argocds CRD goes through.
		embedded, err := crdinstall.Load()
		require.NoError(t, err)
		for _, own := range embedded.ArgoCD {
			if own.Name() != "argocds.argoproj.io" {
				continue
			}
			applied := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: own.Name()}}
			require.NoError(t, asAgent.Patch(ctx, applied, client.RawPatch(types.ApplyPatchType, own.ApplyJSON),
				client.ForceOwnership, client.FieldOwner(crdinstall.FieldManager)))
		}
	})

	t.Run("the agent's identity may change only the resource summary and tree annotations of an Application and ask for a normal refresh", func(t *testing.T) {
		app := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "guestbook", "namespace": contract.GitOpsNamespace, "annotations": map[string]any{"team": "blue"}},
			"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://example.com/repo.git", "path": "guestbook"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"}},
		}}
		require.NoError(t, kubeClient.Create(ctx, app))
		asAgent := impersonating(t, config, agentchart.InstallNamespace, contract.AgentDeployment)
		patch := func(doc string) error {
			target := app.DeepCopy()
			return asAgent.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(doc)))
		}
		// The policy is enforced once the apiserver has loaded it: wait for the denial.
		var specErr error
		require.Eventually(t, func() bool {
			specErr = patch(`{"spec":{"source":{"path":"elsewhere"}}}`)
			if specErr == nil {
				require.NoError(t, patch(`{"spec":{"source":{"path":"guestbook"}}}`))
			}
			return specErr != nil
		}, 30*time.Second, 200*time.Millisecond, "the agent changed an Application's spec")
		assert.True(t, apierrors.IsForbidden(specErr) || apierrors.IsInvalid(specErr), "%v", specErr)
		assert.Contains(t, specErr.Error(), "may change only the annotations gitops-addon.open-cluster-management.io/resources and")
		for name, doc := range map[string]string{
			"another annotation":  `{"metadata":{"annotations":{"team":"red"}}}`,
			"a new annotation":    `{"metadata":{"annotations":{"example.com/owner":"agent"}}}`,
			"a hard refresh":      `{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`,
			"a label":             `{"metadata":{"labels":{"team":"red"}}}`,
			"a finalizer":         `{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io"]}}`,
			"the status":          `{"status":{"health":{"status":"Healthy"}}}`,
			"a sync operation":    `{"operation":{"sync":{"revision":"HEAD"}}}`,
			"removing annotation": `{"metadata":{"annotations":{"team":null}}}`,
		} {
			assert.Error(t, patch(doc), "the agent changed %s", name)
		}
		require.NoError(t, patch(`{"metadata":{"annotations":{"gitops-addon.open-cluster-management.io/resources":"{\"v\":1,\"total\":0}"}}}`),
			"the summary annotation is the agent's to write")
		require.NoError(t, patch(`{"metadata":{"annotations":{"gitops-addon.open-cluster-management.io/tree":"H4sI"}}}`),
			"the tree annotation is the agent's to write (pkg/spoke/treereport)")
		require.NoError(t, patch(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`),
			"a normal refresh is the agent's to ask for (pkg/spoke/comparisonretry)")
		assert.Error(t, patch(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":null}}}`), "the agent removed a refresh request; Argo CD does that")
		err := asAgent.Delete(ctx, app.DeepCopy())
		assert.True(t, apierrors.IsForbidden(err), "deleting an Application: %v", err)
	})

	t.Run("the agent, as its identity, asks Argo CD to compare again an Application delivered before its project, once the project exists", func(t *testing.T) {
		testComparisonRetryForAMissingProject(ctx, t, config, kubeClient)
	})

	t.Run("the agent's identity may write only its own repository credentials in the Argo CD namespace", func(t *testing.T) {
		asAgent := impersonating(t, config, agentchart.InstallNamespace, contract.AgentDeployment)
		secret := func(name string, labels map[string]string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: name, Labels: labels},
				Data: map[string][]byte{"password": []byte("theirs")}}
		}
		owned := map[string]string{contract.LabelRepositoryCredential: contract.RepositoryCredentialOwned}
		foreign := secret("private-repo", map[string]string{"team": "a"})
		require.NoError(t, kubeClient.Create(ctx, foreign))
		// The policy is enforced once the apiserver has loaded it: wait for the denial.
		var updateErr error
		require.Eventually(t, func() bool {
			theirs := &corev1.Secret{}
			require.NoError(t, kubeClient.Get(ctx, client.ObjectKeyFromObject(foreign), theirs))
			theirs.Labels = owned
			theirs.Data["password"] = []byte("ours")
			updateErr = asAgent.Update(ctx, theirs)
			if updateErr == nil {
				theirs.Labels, theirs.Data["password"] = map[string]string{"team": "a"}, []byte("theirs")
				require.NoError(t, kubeClient.Update(ctx, theirs))
			}
			return updateErr != nil
		}, 30*time.Second, 200*time.Millisecond, "the agent overwrote a Secret it did not create")
		assert.True(t, apierrors.IsForbidden(updateErr) || apierrors.IsInvalid(updateErr), "%v", updateErr)
		assert.Contains(t, updateErr.Error(), "only the repository credentials it created")
		assert.Error(t, asAgent.Delete(ctx, foreign.DeepCopy()), "the agent deleted a Secret it did not create")
		assert.Error(t, asAgent.Create(ctx, secret("unlabelled", nil)), "the agent created a Secret not labelled as its own")
		stored := &corev1.Secret{}
		require.NoError(t, kubeClient.Get(ctx, client.ObjectKeyFromObject(foreign), stored))
		assert.Equal(t, "theirs", string(stored.Data["password"]), "untouched")

		// Its own: created, updated, deleted.
		mine := secret("hub-repo", owned)
		require.NoError(t, asAgent.Create(ctx, mine))
		mine.Data["password"] = []byte("rotated")
		require.NoError(t, asAgent.Update(ctx, mine))
		mine.Labels = map[string]string{"team": "a"}
		assert.Error(t, asAgent.Update(ctx, mine.DeepCopy()), "the agent gave its Secret away (then it could not delete it)")
		require.NoError(t, asAgent.Delete(ctx, mine))
	})

	t.Run("operator can grant permissions it does not hold", func(t *testing.T) {
		// The reason for escalate: the operator must be able to create roles for Argo CD
		// beyond its own rights. Nodes are a permission the operator does not have.
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "granted-by-operator"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"patch"}}},
		}
		asOperator := impersonating(t, config, contract.GitOpsNamespace, contract.OperatorDeployment)
		require.NoError(t, asOperator.Create(ctx, role.DeepCopy()))

		asController := impersonating(t, config, contract.GitOpsNamespace, applicationControllerSA)
		role.Name = "granted-by-controller"
		err := asController.Create(ctx, role)
		require.Error(t, err, "the application controller must not write RBAC by default")
	})
}

func serviceAccountUser(namespace, name string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name)
}

func crdAttrs(verb, name string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: verb, Name: name}
}

func vapAttrs(verb, name string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Verb: verb, Name: name}
}

// impersonating returns a client acting as the ServiceAccount namespace/name.
func impersonating(t *testing.T, config *rest.Config, namespace, name string) client.Client {
	t.Helper()
	return testenv.Impersonating(t, config, serviceAccountUser(namespace, name), []string{"system:serviceaccounts", "system:authenticated"})
}

// agentChartTestCA is a CA certificate (PEM), as the hub propagates it.
func agentChartTestCA(t *testing.T) string {
	t.Helper()
	ca, err := pki.NewCA("argocd-agent-ca")
	require.NoError(t, err)
	return string(ca.CertPEM)
}

// testComparisonRetryForAMissingProject runs the agent's controllers of pulled
// Applications (pkg/spoke/pulledapps, pkg/spoke/comparisonretry) as the agent's
// ServiceAccount, with the chart's RBAC and admission policy: an Application that Argo CD
// found without its project gets Argo CD's refresh annotation only once the AppProject is
// created, by the watch of AppProjects, not before.
func testComparisonRetryForAMissingProject(ctx context.Context, t *testing.T, config *rest.Config, kubeClient client.Client) {
	t.Helper()
	const late, present = "team-late", "team-present"
	require.NoError(t, kubeClient.Create(ctx, appProject(present)))
	// Names in the order the controller's first list takes them (by key) and its one
	// worker reconciles them: the sentinel, whose project exists, is refreshed after the
	// waiting one was looked at.
	waiting, sentinel := pulledWithoutProject("a-before-its-project", late), pulledWithoutProject("z-sentinel", present)
	require.NoError(t, kubeClient.Create(ctx, waiting))
	require.NoError(t, kubeClient.Create(ctx, sentinel))

	agentConfig := rest.CopyConfig(config)
	agentConfig.Impersonate = rest.ImpersonationConfig{
		UserName: serviceAccountUser(agentchart.InstallNamespace, contract.AgentDeployment),
		Groups:   []string{"system:serviceaccounts", "system:authenticated"},
	}
	mgr := newSpokeManager(t, agentConfig, nil)
	require.NoError(t, pulledapps.SetupWithManager(mgr, contract.GitOpsNamespace, comparisonretry.Controller(contract.GitOpsNamespace)))
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() {
		stop()
		require.NoError(t, <-done, "the agent's controllers stopped with an error (a watch its role does not allow?)")
	}()

	refresh := func(app client.Object) string {
		stored := pulledapps.New()
		require.NoError(t, kubeClient.Get(ctx, client.ObjectKeyFromObject(app), stored))
		return stored.GetAnnotations()[contract.AnnotationArgoCDRefresh]
	}
	require.Eventually(t, func() bool { return refresh(sentinel) == "normal" }, 30*time.Second, 100*time.Millisecond,
		"the Application whose project exists is refreshed")
	assert.Empty(t, refresh(waiting), "a refresh before the project exists would only repeat the error")

	require.NoError(t, kubeClient.Create(ctx, appProject(late)))
	require.Eventually(t, func() bool { return refresh(waiting) == "normal" }, 30*time.Second, 100*time.Millisecond,
		"the AppProject's creation made the agent ask Argo CD to compare the Application again")
}

// pulledWithoutProject is an Application the hub pulled here, as Argo CD leaves it when
// its project did not exist.
func pulledWithoutProject(name, project string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": contract.GitOpsNamespace,
			"ownerReferences": []any{map[string]any{"apiVersion": "work.open-cluster-management.io/v1", "kind": "AppliedManifestWork", "name": "abc-guestbook", "uid": "u1"}}},
		"spec": map[string]any{"project": project, "source": map[string]any{"repoURL": "https://example.com/repo.git", "path": "guestbook"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "InvalidSpecError",
			"message": "Application referencing project " + project + " which does not exist"}}},
	}}
}

func appProject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": name, "namespace": contract.GitOpsNamespace},
		"spec":     map[string]any{"sourceRepos": []any{"*"}, "destinations": []any{map[string]any{"server": "*", "namespace": "*"}}},
	}}
}
