package manifests_test

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/gitops-addon/gitops-addon/manifests"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/test/agentchart"
)

func TestChartFSHoldsTheWholeChart(t *testing.T) {
	// Without the all: prefix go:embed drops _helpers.tpl and every template fails.
	_, err := fs.Stat(manifests.ChartFS, manifests.AgentChartDir+"/templates/_helpers.tpl")
	require.NoError(t, err, "_helpers.tpl missing from manifests.ChartFS: go:embed needs the all: prefix")

	agentChart := agentchart.Load(t)
	assert.Equal(t, "gitops-addon-agent", agentChart.Name())
	assert.Empty(t, agentChart.CRDObjects(), "the agent installs the CRDs; the chart (and so every ManifestWork) carries none")
}

// TestAgentCRDNamesMatchTheEmbeddedCRDs keeps the chart's list of the agent's CRDs (its
// RBAC resourceNames and its admission policy) equal to what the agent installs.
func TestAgentCRDNamesMatchTheEmbeddedCRDs(t *testing.T) {
	embedded, err := crdinstall.Load()
	require.NoError(t, err)
	objects := agentchart.MustRender(t, map[string]any{})
	var named []string
	for _, rule := range agentchart.RulesOf(t, agentchart.MustFind(t, objects, "ClusterRole", "", "gitops-addon:agent")) {
		if slices.Contains(rule.Resources, "customresourcedefinitions") && slices.Contains(rule.Verbs, "patch") {
			named = rule.ResourceNames
		}
	}
	assert.ElementsMatch(t, embedded.Names(), named, "update/patch on CRDs must name exactly the embedded CRDs")

	policy := agentchart.MustFind(t, objects, "ValidatingAdmissionPolicy", "", "gitops-addon-agent-crds")
	variables, _, _ := unstructured.NestedSlice(policy.Object, "spec", "variables")
	require.Len(t, variables, 1)
	own := variables[0].(map[string]any)["expression"].(string)
	for _, name := range embedded.Names() {
		assert.Contains(t, own, "'"+name+"'")
	}
	assert.Equal(t, len(embedded.Names()), strings.Count(own, "'")/2, "the policy lists exactly the embedded CRDs: %s", own)
}

func TestDefaultValuesRenderEveryObject(t *testing.T) {
	// Only the chart's own values.yaml: what `gitops-addon render` relies on.
	objects := agentchart.MustRender(t, map[string]any{})

	expected := []struct{ kind, namespace, name string }{
		{"Namespace", "", contract.GitOpsNamespace},
		{"ServiceAccount", contract.GitOpsNamespace, contract.OperatorDeployment},
		{"ClusterRole", "", "gitops-addon:openshift-gitops-operator"},
		{"ClusterRoleBinding", "", "gitops-addon:openshift-gitops-operator"},
		{"Deployment", contract.GitOpsNamespace, contract.OperatorDeployment},
		{"ClusterRole", "", contract.PlatformExtensionsClusterRole},
		{"ClusterRoleBinding", "", contract.PlatformExtensionsClusterRole},
		{"ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName},
		{"ServiceAccount", agentchart.InstallNamespace, contract.AgentDeployment},
		{"Deployment", agentchart.InstallNamespace, contract.AgentDeployment},
		{"ClusterRole", "", "gitops-addon:agent"},
		{"ClusterRoleBinding", "", "gitops-addon:agent"},
		{"Role", agentchart.InstallNamespace, "gitops-addon:agent"},
		{"RoleBinding", agentchart.InstallNamespace, "gitops-addon:agent"},
		{"ValidatingAdmissionPolicy", "", "gitops-addon-agent-crds"},
		{"ValidatingAdmissionPolicyBinding", "", "gitops-addon-agent-crds"},
		{"ValidatingAdmissionPolicy", "", "gitops-addon-agent-applications"},
		{"ValidatingAdmissionPolicyBinding", "", "gitops-addon-agent-applications"},
		{"ValidatingAdmissionPolicy", "", "gitops-addon-agent-secrets"},
		{"ValidatingAdmissionPolicyBinding", "", "gitops-addon-agent-secrets"},
		{"Role", contract.GitOpsNamespace, "gitops-addon:agent:repository-credentials"},
		{"RoleBinding", contract.GitOpsNamespace, "gitops-addon:agent:repository-credentials"},
		{"Role", contract.GitOpsNamespace, "gitops-addon:agent:resource-summary"},
		{"RoleBinding", contract.GitOpsNamespace, "gitops-addon:agent:resource-summary"},
		{"Role", contract.GitOpsNamespace, "gitops-addon:agent-teardown"},
		{"RoleBinding", contract.GitOpsNamespace, "gitops-addon:agent-teardown"},
		{"NetworkPolicy", contract.GitOpsNamespace, "gitops-addon-agent-redis"},
		{"Job", agentchart.InstallNamespace, "gitops-addon-spoke-teardown"},
	}
	for _, want := range expected {
		assert.NotNil(t, agentchart.Find(objects, want.kind, want.namespace, want.name),
			"%s %s/%s not rendered", want.kind, want.namespace, want.name)
	}
	assert.Len(t, objects, len(expected), "unexpected extra objects")
}

func TestEveryObjectCarriesTheGitOpsAddonLabels(t *testing.T) {
	objects := agentchart.MustRender(t, map[string]any{})
	for _, object := range objects {
		labels := object.GetLabels()
		assert.Equal(t, contract.ManagedByValue, labels[contract.LabelManagedBy],
			"%s %s lacks %s", object.GetKind(), object.GetName(), contract.LabelManagedBy)
		assert.Equal(t, contract.ManagedByValue, labels["app.kubernetes.io/part-of"],
			"%s %s lacks app.kubernetes.io/part-of", object.GetKind(), object.GetName())
	}
}

func TestGitOpsNamespaceIsOrphanedOnAddonDeletion(t *testing.T) {
	objects := agentchart.MustRender(t, map[string]any{})
	for _, object := range objects {
		if object.GetKind() != "Namespace" {
			continue
		}
		_, orphaned := object.GetAnnotations()[addon.AnnotationDeletionOrphan]
		assert.True(t, orphaned, "%s %s must carry %s", object.GetKind(), object.GetName(), addon.AnnotationDeletionOrphan)
	}
}

// TestStackShipsNoSecondArgoCD holds the chart to what each stack ships beside the agent:
// nothing of the GitOps namespace while the agent has not reported (agentOnly) or where
// another Argo CD runs and the cluster is skipped; only the agent's own roles there when
// it serves an existing instance (useExisting); never our Namespace object, operator,
// ArgoCD or argocd-platform-extensions beside an Argo CD we did not create.
func TestStackShipsNoSecondArgoCD(t *testing.T) {
	stackOnly := []struct{ kind, namespace, name string }{
		{"Namespace", "", contract.GitOpsNamespace},
		{"Deployment", contract.GitOpsNamespace, contract.OperatorDeployment},
		{"ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName},
		{"ClusterRole", "", contract.PlatformExtensionsClusterRole},
	}
	for _, tc := range []struct {
		stack string
		// inGitOpsNamespace: the objects rendered in openshift-gitops.
		inGitOpsNamespace []string
	}{
		{stack: "agentOnly"},
		{stack: "useExisting", inGitOpsNamespace: []string{
			"Role/gitops-addon:agent-teardown", "Role/gitops-addon:agent:repository-credentials", "Role/gitops-addon:agent:resource-summary",
			"RoleBinding/gitops-addon:agent-teardown", "RoleBinding/gitops-addon:agent:repository-credentials", "RoleBinding/gitops-addon:agent:resource-summary",
			"NetworkPolicy/gitops-addon-agent-redis",
		}},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			objects := agentchart.MustRender(t, map[string]any{"stack": tc.stack})
			for _, o := range stackOnly {
				assert.Nil(t, agentchart.Find(objects, o.kind, o.namespace, o.name), "%s %s rendered with stack %s", o.kind, o.name, tc.stack)
			}
			var got []string
			for _, o := range objects {
				if o.GetNamespace() == contract.GitOpsNamespace {
					got = append(got, o.GetKind()+"/"+o.GetName())
				}
			}
			assert.ElementsMatch(t, tc.inGitOpsNamespace, got)
			agent := typedDeployment(t, objects, agentchart.InstallNamespace, contract.AgentDeployment)
			assert.Contains(t, agent.Spec.Template.Spec.Containers[0].Args, "--stack="+tc.stack)
			agentchart.MustFind(t, objects, "Job", agentchart.InstallNamespace, "gitops-addon-spoke-teardown")
		})
	}
	_, err := agentchart.Render(t, map[string]any{"stack": "everything"})
	require.ErrorContains(t, err, "want full, agentOnly or useExisting")
}

// The work agent never deletes the ArgoCD instance: the pre-delete hook deletes it, and
// only when the creation record holds its UID.
func TestArgoCDInstanceIsOrphanedOnAddonDeletion(t *testing.T) {
	argocd := agentchart.MustFind(t, agentchart.MustRender(t, map[string]any{}), "ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName)
	assert.Contains(t, argocd.GetAnnotations(), addon.AnnotationDeletionOrphan)
}

func TestBuiltInTypesDecodeStrictly(t *testing.T) {
	// Catches misspelt fields: the apiserver would drop them silently.
	objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{
		"global":      map[string]any{"imagePullSecret": "pull", "nodeSelector": map[string]any{"a": "b"}, "proxyConfig": map[string]any{"HTTP_PROXY": "http://p:3128"}},
		"tolerations": []any{map[string]any{"key": "k", "operator": "Exists"}},
	}))
	for _, object := range objects {
		typed, err := clientgoscheme.Scheme.New(object.GroupVersionKind())
		if err != nil {
			continue // ArgoCD and CRDs: checked against a real apiserver in the envtest.
		}
		err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(object.Object, typed, true)
		assert.NoError(t, err, "%s %s", object.GetKind(), object.GetName())
	}
}

func TestAgentIsToldTheHubsFlavour(t *testing.T) {
	for _, openshift := range []bool{false, true} {
		t.Run(fmt.Sprintf("openshift=%v", openshift), func(t *testing.T) {
			objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{"openshift": openshift}))
			agent := agentchart.MustFind(t, objects, "Deployment", agentchart.InstallNamespace, contract.AgentDeployment)
			containers, _, _ := unstructured.NestedSlice(agent.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			assert.Contains(t, args, fmt.Sprintf("--openshift=%v", openshift), "the agent installs the Routes CRD only where the hub did not find OpenShift")
		})
	}
}

func TestPlatformExtensionsDefaultsAreLeastPrivilege(t *testing.T) {
	objects := agentchart.MustRender(t, map[string]any{})
	rules := agentchart.RulesOf(t, agentchart.MustFind(t, objects, "ClusterRole", "", contract.PlatformExtensionsClusterRole))
	require.NotEmpty(t, rules)
	for _, rule := range rules {
		assert.NotContains(t, rule.APIGroups, "rbac.authorization.k8s.io")
		assert.NotContains(t, rule.APIGroups, "apiextensions.k8s.io")
		assert.NotContains(t, rule.APIGroups, "*", "no wildcard API group by default")
		assert.NotContains(t, rule.Resources, "*", "no wildcard resource by default")
	}
	// What the rules allow is asked of a real authorizer (SubjectAccessReview), not read
	// from verb strings: see TestRenderedManifestsOnARealAPIServer's RBAC rows.

	binding := agentchart.MustFind(t, objects, "ClusterRoleBinding", "", contract.PlatformExtensionsClusterRole)
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	require.Len(t, subjects, 1)
	subject := subjects[0].(map[string]any)
	assert.Equal(t, "openshift-gitops-argocd-application-controller", subject["name"])
	assert.Equal(t, contract.GitOpsNamespace, subject["namespace"])
}

func TestExtraAPIGroupsAddOneRuleEach(t *testing.T) {
	tests := []struct {
		name   string
		groups []any
	}{
		{name: "none", groups: nil},
		{name: "one group", groups: []any{"cert-manager.io"}},
		{name: "user opts into RBAC", groups: []any{"rbac.authorization.k8s.io", "external-secrets.io"}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{
				"platformExtensions": map[string]any{"extraAPIGroups": test.groups},
			}))
			defaults := agentchart.RulesOf(t, agentchart.MustFind(t, agentchart.MustRender(t, map[string]any{}), "ClusterRole", "", contract.PlatformExtensionsClusterRole))
			rules := agentchart.RulesOf(t, agentchart.MustFind(t, objects, "ClusterRole", "", contract.PlatformExtensionsClusterRole))

			require.Len(t, rules, len(defaults)+len(test.groups))
			assert.Equal(t, defaults, rules[:len(defaults)], "extra groups must not change the defaults")
			for i, group := range test.groups {
				verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
				if group == "rbac.authorization.k8s.io" {
					verbs = append(verbs, "escalate", "bind") // the user's knowing choice; never impersonate
				}
				assert.Equal(t, agentchart.PolicyRule{APIGroups: []string{group.(string)}, Resources: []string{"*"}, Verbs: verbs},
					rules[len(defaults)+i])
			}
		})
	}
}

func TestExtraAPIGroupsRejectNonStrings(t *testing.T) {
	_, err := agentchart.Render(t, agentchart.WithValues(map[string]any{
		"platformExtensions": map[string]any{"extraAPIGroups": []any{map[string]any{"group": "x"}}},
	}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "extraAPIGroups must hold API group names")
}

func TestOperatorImageChoice(t *testing.T) {
	tests := []struct {
		name      string
		override  string
		openshift bool
		want      string
	}{
		{name: "kubernetes default", want: "quay.io/argoprojlabs/argocd-operator:v0.18.0"},
		{name: "openshift default", openshift: true, want: "quay.io/argoprojlabs/argocd-operator:v0.18.0"},
		{name: "hub override wins", override: "mirror.example.com/op@sha256:abc", openshift: true, want: "mirror.example.com/op@sha256:abc"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{
				"openshift": test.openshift,
				"global":    map[string]any{"imageOverrides": map[string]any{"gitopsOperator": test.override}},
			}))
			deployment := typedDeployment(t, objects, contract.GitOpsNamespace, contract.OperatorDeployment)
			assert.Equal(t, test.want, deployment.Spec.Template.Spec.Containers[0].Image)
		})
	}
}

func TestOperatorDeployment(t *testing.T) {
	objects := agentchart.MustRender(t, map[string]any{})
	deployment := typedDeployment(t, objects, contract.GitOpsNamespace, contract.OperatorDeployment)
	pod := deployment.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	container := pod.Containers[0]

	assert.Equal(t, contract.OperatorDeployment, pod.ServiceAccountName)
	env := envMap(container.Env)
	assert.Equal(t, "true", env["DISABLE_DEFAULT_ARGOCD_INSTANCE"])
	assert.Contains(t, env, "WATCH_NAMESPACE")
	assert.Empty(t, env["WATCH_NAMESPACE"])
	// Cluster-scoped instance; its */* default ClusterRole is disabled in the ArgoCD CR
	// (TestArgoCDInstance), so argocd-platform-extensions is the only cluster-wide grant.
	assert.Equal(t, contract.GitOpsNamespace, env["ARGOCD_CLUSTER_CONFIG_NAMESPACES"])

	assertProbesOn8081(t, container)
	assertRestricted(t, pod, container)
}

func TestAgentDeployment(t *testing.T) {
	objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{"agent": map[string]any{"logLevel": "debug"}}))
	deployment := typedDeployment(t, objects, agentchart.InstallNamespace, contract.AgentDeployment)
	pod := deployment.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	container := pod.Containers[0]

	assert.Equal(t, "ghcr.io/gitops-addon/gitops-addon:0.1.0", container.Image, "the release image of the chart's appVersion")
	assert.Equal(t, contract.AgentDeployment, pod.ServiceAccountName)
	assert.Equal(t, []string{
		"agent",
		"--hub-kubeconfig=/var/run/hub/kubeconfig",
		"--cluster-name=cluster1",
		"--addon-namespace=" + agentchart.InstallNamespace,
		"--zap-log-level=debug",
		"--openshift=false",
		"--stack=full",
		"--disable-resource-tree", // until the hub writes trees (agent.resourceTree)
	}, container.Args)

	// The whole hub kubeconfig secret is a directory: the kubeconfig references
	// tls.crt/tls.key relatively and a subPath mount would miss certificate rotation.
	var hubVolume *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Secret != nil && pod.Volumes[i].Secret.SecretName == contract.HubKubeconfigSecret {
			hubVolume = &pod.Volumes[i]
		}
	}
	require.NotNil(t, hubVolume, "no volume for secret %s", contract.HubKubeconfigSecret)
	assert.Empty(t, hubVolume.Secret.Items, "the whole secret must be mounted")
	var mounted bool
	for _, mount := range container.VolumeMounts {
		if mount.Name == hubVolume.Name {
			mounted = true
			assert.Equal(t, "/var/run/hub", mount.MountPath)
			assert.Empty(t, mount.SubPath)
		}
	}
	assert.True(t, mounted, "hub kubeconfig volume not mounted")

	ports := map[string]int32{}
	for _, port := range container.Ports {
		ports[port.Name] = port.ContainerPort
	}
	assert.Equal(t, map[string]int32{"metrics": 8080, "health": 8081}, ports)
	assertProbesOn8081(t, container)
	// The hub credential check fails once per change of the mounted credential: with a
	// higher threshold the kubelet would never restart the agent onto the new one.
	assert.Equal(t, int32(1), container.LivenessProbe.FailureThreshold, "the agent restarts on the first failed liveness check")
	// ...so a slow start must not count as one: liveness waits for the startup probe.
	require.NotNil(t, container.StartupProbe, "a startup probe holds liveness back while the agent starts")
	assert.Equal(t, container.LivenessProbe.HTTPGet, container.StartupProbe.HTTPGet)
	assert.GreaterOrEqual(t, container.StartupProbe.PeriodSeconds*container.StartupProbe.FailureThreshold, int32(120),
		"a starting agent gets minutes, not the liveness probe's one chance")
	assert.Zero(t, container.LivenessProbe.InitialDelaySeconds, "the startup probe gates liveness")
	assert.GreaterOrEqual(t, container.LivenessProbe.TimeoutSeconds, int32(5), "one slow answer on a busy node is not a failure")
	assertRestricted(t, pod, container)
}

func TestAgentFollowsTheInstallNamespace(t *testing.T) {
	// An AddOnDeploymentConfig can move the agent; the framework passes the namespace as
	// .Release.Namespace and as addonInstallNamespace.
	const custom = "gitops-addon-custom"
	values := agentchart.WithValues(map[string]any{"addonInstallNamespace": custom})
	objects, err := agentchart.RenderInNamespace(t, custom, values)
	require.NoError(t, err)

	for _, id := range [][2]string{
		{"ServiceAccount", contract.AgentDeployment},
		{"Deployment", contract.AgentDeployment},
		{"Role", "gitops-addon:agent"},
		{"RoleBinding", "gitops-addon:agent"},
	} {
		agentchart.MustFind(t, objects, id[0], custom, id[1])
	}
	agent := typedDeployment(t, objects, custom, contract.AgentDeployment)
	assert.Contains(t, agent.Spec.Template.Spec.Containers[0].Args, "--addon-namespace="+custom)

	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		binding := agentchart.MustFind(t, objects, kind, map[string]string{"RoleBinding": custom}[kind], "gitops-addon:agent")
		subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
		require.Len(t, subjects, 1)
		assert.Equal(t, custom, subjects[0].(map[string]any)["namespace"], kind)
	}
}

func TestAgentRBACIsScopedByResourceName(t *testing.T) {
	objects := agentchart.MustRender(t, map[string]any{})
	rules := agentchart.RulesOf(t, agentchart.MustFind(t, objects, "ClusterRole", "", "gitops-addon:agent"))

	for _, rule := range rules {
		if slices.Contains(rule.Resources, "customresourcedefinitions") && slices.Contains(rule.Verbs, "delete") {
			assert.Equal(t, []string{contract.RoutesCRDName}, rule.ResourceNames, "CRD delete must be limited to the Routes CRD")
		}
		if slices.Contains(rule.Resources, "customresourcedefinitions") && (slices.Contains(rule.Verbs, "update") || slices.Contains(rule.Verbs, "patch")) {
			assert.NotEmpty(t, rule.ResourceNames, "CRD update/patch must be limited to the agent's own CRDs")
		}
		if slices.Contains(rule.APIGroups, "admissionregistration.k8s.io") {
			for _, verb := range []string{"update", "patch", "delete"} {
				if slices.Contains(rule.Verbs, verb) {
					assert.Equal(t, []string{"gitops-addon-deny-routes-crd"}, rule.ResourceNames, "%s on admission policies", verb)
				}
			}
		}
		assert.NotContains(t, rule.Verbs, "*")
		assert.NotContains(t, rule.Resources, "*")
	}
}

func TestResourceRequirementsFromAddOnDeploymentConfig(t *testing.T) {
	requirement := func(regex, cpu string) map[string]any {
		return map[string]any{
			"containerIDRegex": regex,
			"resources":        map[string]any{"requests": map[string]any{"cpu": cpu}},
		}
	}
	tests := []struct {
		name         string
		requirements []any
		wantAgentCPU string
		wantOperator string
	}{
		{name: "defaults", wantAgentCPU: "10m", wantOperator: "100m"},
		{name: "one container", requirements: []any{requirement("^deployments:gitops-addon-agent:agent$", "1")},
			wantAgentCPU: "1", wantOperator: "100m"},
		{name: "all containers, later wins", requirements: []any{
			requirement("^.+:.+:.+$", "2"),
			requirement("^deployments:openshift-gitops-operator-controller-manager:manager$", "3"),
		}, wantAgentCPU: "2", wantOperator: "3"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{
				"global": map[string]any{"resourceRequirements": test.requirements},
			}))
			agent := typedDeployment(t, objects, agentchart.InstallNamespace, contract.AgentDeployment)
			operator := typedDeployment(t, objects, contract.GitOpsNamespace, contract.OperatorDeployment)
			assertCPURequest(t, test.wantAgentCPU, agent.Spec.Template.Spec.Containers[0])
			assertCPURequest(t, test.wantOperator, operator.Spec.Template.Spec.Containers[0])
		})
	}
}

func TestProxyPlacementAndPullSecretReachBothDeployments(t *testing.T) {
	objects := agentchart.MustRender(t, agentchart.WithValues(map[string]any{
		"global": map[string]any{
			"imagePullSecret": "registry-pull",
			"nodeSelector":    map[string]any{"node-role.kubernetes.io/infra": ""},
			"proxyConfig": map[string]any{
				"HTTP_PROXY":  "http://proxy:3128",
				"HTTPS_PROXY": "http://proxy:3129",
				"NO_PROXY":    ".cluster.local,10.0.0.0/8",
			},
		},
		"tolerations": []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}},
	}))
	for _, id := range [][2]string{
		{agentchart.InstallNamespace, contract.AgentDeployment},
		{contract.GitOpsNamespace, contract.OperatorDeployment},
	} {
		pod := typedDeployment(t, objects, id[0], id[1]).Spec.Template.Spec
		env := envMap(pod.Containers[0].Env)
		assert.Equal(t, "http://proxy:3128", env["HTTP_PROXY"], id[1])
		assert.Equal(t, "http://proxy:3129", env["HTTPS_PROXY"], id[1])
		assert.Equal(t, ".cluster.local,10.0.0.0/8", env["NO_PROXY"], id[1])
		assert.Equal(t, map[string]string{"node-role.kubernetes.io/infra": ""}, pod.NodeSelector, id[1])
		assert.Equal(t, []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			pod.Tolerations, id[1])
		assert.Equal(t, []corev1.LocalObjectReference{{Name: "registry-pull"}}, pod.ImagePullSecrets, id[1])
	}

	// And nothing of it by default.
	defaults := agentchart.MustRender(t, map[string]any{})
	pod := typedDeployment(t, defaults, agentchart.InstallNamespace, contract.AgentDeployment).Spec.Template.Spec
	assert.NotContains(t, envMap(pod.Containers[0].Env), "HTTP_PROXY")
	assert.Empty(t, pod.NodeSelector)
	assert.Empty(t, pod.Tolerations)
	assert.Empty(t, pod.ImagePullSecrets)
}

func TestArgoCDInstance(t *testing.T) {
	tests := []struct {
		name      string
		argoCD    map[string]any
		openshift bool
		want      map[string]any // expected spec fields beyond the fixed ones
	}{
		{name: "defaults", want: map[string]any{}},
		{name: "openshift enables the route", openshift: true, want: map[string]any{}},
		{name: "image and version as given", argoCD: map[string]any{"image": "quay.io/argoproj/argocd", "version": "v3.1.0"},
			want: map[string]any{"image": "quay.io/argoproj/argocd", "version": "v3.1.0"}},
		{name: "tag moved out of the image", argoCD: map[string]any{"image": "quay.io/argoproj/argocd:v3.1.0"},
			want: map[string]any{"image": "quay.io/argoproj/argocd", "version": "v3.1.0"}},
		{name: "digest moved out of the image", argoCD: map[string]any{"image": "quay.io/argoproj/argocd@sha256:0123"},
			want: map[string]any{"image": "quay.io/argoproj/argocd", "version": "sha256:0123"}},
		{name: "registry port is not a tag", argoCD: map[string]any{"image": "mirror:5000/argoproj/argocd"},
			want: map[string]any{"image": "mirror:5000/argoproj/argocd"}},
		{name: "version alone", argoCD: map[string]any{"version": "v3.1.0"},
			want: map[string]any{"version": "v3.1.0"}},
		{name: "redis image with tag", argoCD: map[string]any{"redisImage": "mirror:5000/redis:7.2"},
			want: map[string]any{"redis": map[string]any{"image": "mirror:5000/redis", "version": "7.2"}}},
		{name: "redis image without tag", argoCD: map[string]any{"redisImage": "mirror/redis"},
			want: map[string]any{"redis": map[string]any{"image": "mirror/redis"}}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			overrides := map[string]any{"openshift": test.openshift}
			if test.argoCD != nil {
				// A nil map would be a YAML null, which Helm reads as "delete the key".
				overrides["argoCD"] = test.argoCD
			}
			objects := agentchart.MustRender(t, agentchart.WithValues(overrides))
			argoCD := agentchart.MustFind(t, objects, "ArgoCD", contract.GitOpsNamespace, contract.ArgoCDName)
			assert.Equal(t, "argoproj.io/v1beta1", argoCD.GetAPIVersion())

			want := map[string]any{
				"defaultClusterScopedRoleDisabled": true,
				"extraConfig":                      map[string]any{"resource.respectRBAC": "normal"},
				"applicationSet":                   map[string]any{},
				"server":                           map[string]any{"route": map[string]any{"enabled": test.openshift}},
			}
			for key, value := range test.want {
				want[key] = value
			}
			assert.Equal(t, want, argoCD.Object["spec"])
		})
	}
}

func typedDeployment(t *testing.T, objects []*unstructured.Unstructured, namespace, name string) *appsv1.Deployment {
	t.Helper()
	deployment := &appsv1.Deployment{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(
		agentchart.MustFind(t, objects, "Deployment", namespace, name).Object, deployment, true))
	return deployment
}

func envMap(env []corev1.EnvVar) map[string]string {
	values := map[string]string{}
	for _, variable := range env {
		values[variable.Name] = variable.Value
	}
	return values
}

func assertProbesOn8081(t *testing.T, container corev1.Container) {
	t.Helper()
	require.NotNil(t, container.LivenessProbe)
	require.NotNil(t, container.ReadinessProbe)
	assert.Equal(t, "/healthz", container.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, 8081, container.LivenessProbe.HTTPGet.Port.IntValue())
	assert.Equal(t, "/readyz", container.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, 8081, container.ReadinessProbe.HTTPGet.Port.IntValue())
}

// assertRestricted checks what the restricted Pod Security Standard requires.
func assertRestricted(t *testing.T, pod corev1.PodSpec, container corev1.Container) {
	t.Helper()
	require.NotNil(t, pod.SecurityContext)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.NotNil(t, pod.SecurityContext.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)

	security := container.SecurityContext
	require.NotNil(t, security)
	require.NotNil(t, security.AllowPrivilegeEscalation)
	assert.False(t, *security.AllowPrivilegeEscalation)
	require.NotNil(t, security.ReadOnlyRootFilesystem)
	assert.True(t, *security.ReadOnlyRootFilesystem)
	require.NotNil(t, security.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, security.Capabilities.Drop)

	require.NotNil(t, container.Resources.Requests)
	assert.False(t, container.Resources.Limits.Memory().IsZero(), "a memory limit by default")
}

func assertCPURequest(t *testing.T, want string, container corev1.Container) {
	t.Helper()
	got := container.Resources.Requests[corev1.ResourceCPU]
	wantQuantity := resource.MustParse(want)
	assert.Zero(t, wantQuantity.Cmp(got), "%s: cpu request %s, want %s", container.Name, got.String(), want)
}

// The teardown Job is the addon's pre-delete hook: addon-framework recognises it by this
// annotation, keeps it out of the deploy ManifestWork and runs it before deleting that.
func TestTheTeardownJobIsThePreDeleteHook(t *testing.T) {
	job := agentchart.MustFind(t, agentchart.MustRender(t, map[string]any{}), "Job", agentchart.InstallNamespace, "gitops-addon-spoke-teardown")
	assert.Contains(t, job.GetAnnotations(), "addon.open-cluster-management.io/addon-pre-delete")
	args, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	require.Len(t, args, 1)
	assert.Equal(t, "spoke-teardown", args[0].(map[string]any)["args"].([]any)[0])
}

// What the hub's Argo CD UI reads of a spoke (live manifests, events, logs) is one read-only
// role: every kind the spoke Argo CD may manage but Secrets, and nothing else but the
// children the UI shows; it never writes (what it may do is asked of a real authorizer in
// TestRenderedManifestsOnARealAPIServer). It is bound to argocd-agent in Argo CD Agent mode,
// to the live-resources reader (managed-serviceaccount's ServiceAccount) in the basic pull
// model, and to no one otherwise.
func TestLiveResourcesAreReadButSecrets(t *testing.T) {
	agentMode := map[string]any{"mode": "managed", "principalAddress": "principal.example.com"}
	reader := map[string]any{"reader": map[string]any{"namespace": "open-cluster-management-agent-addon", "name": "gitops-addon-live-resources"}}
	argocdAgent := map[string]any{"kind": "ServiceAccount", "name": argocdagent.ServiceAccount(contract.ArgoCDName), "namespace": contract.GitOpsNamespace}
	readerSubject := map[string]any{"kind": "ServiceAccount", "name": "gitops-addon-live-resources", "namespace": "open-cluster-management-agent-addon"}
	for _, tc := range []struct {
		name     string
		values   map[string]any
		subjects map[string]any // binding name: its one subject
	}{
		{"Argo CD Agent mode", map[string]any{"argoCDAgent": agentMode}, map[string]any{contract.LiveResourcesArgoCDAgentBinding: argocdAgent}},
		{"the basic pull model with live resources", map[string]any{"liveResources": reader}, map[string]any{contract.LiveResourcesReaderBinding: readerSubject}},
		{"the reader on a cluster whose existing Argo CD runs pulled Applications", map[string]any{"liveResources": reader, "stack": "useExisting"},
			map[string]any{contract.LiveResourcesReaderBinding: readerSubject}},
		{"both", map[string]any{"argoCDAgent": agentMode, "liveResources": reader},
			map[string]any{contract.LiveResourcesArgoCDAgentBinding: argocdAgent, contract.LiveResourcesReaderBinding: readerSubject}},
	} {
		for _, extra := range [][]any{nil, {"cert-manager.io", ""}} {
			t.Run(fmt.Sprintf("%s, extra groups %v", tc.name, extra), func(t *testing.T) {
				values := maps.Clone(tc.values)
				values["platformExtensions"] = map[string]any{"extraAPIGroups": extra}
				objects := agentchart.MustRender(t, agentchart.WithValues(values))
				values["stack"] = "full" // argocd-platform-extensions, the kinds Argo CD may manage, is rendered there
				assertReadsWhatArgoCDManagesButSecrets(t, objects, agentchart.MustRender(t, agentchart.WithValues(values)))
				bound := map[string]any{}
				for _, name := range []string{contract.LiveResourcesArgoCDAgentBinding, contract.LiveResourcesReaderBinding} {
					if binding := agentchart.Find(objects, "ClusterRoleBinding", "", name); binding != nil {
						subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
						require.Len(t, subjects, 1, name)
						bound[name] = subjects[0]
						role, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
						assert.Equal(t, contract.LiveResourcesClusterRole, role)
					}
				}
				assert.Equal(t, tc.subjects, bound)
			})
		}
	}
	for name, values := range map[string]map[string]any{
		"no agent mode, no reader": {},
		"a reader on a cluster that gets no pulled Application (its own Argo CD skipped)": {"liveResources": reader, "stack": "agentOnly"},
	} {
		assert.Nil(t, agentchart.Find(agentchart.MustRender(t, agentchart.WithValues(values)), "ClusterRole", "", contract.LiveResourcesClusterRole),
			"%s: nothing is granted", name)
	}
	_, err := agentchart.Render(t, agentchart.WithValues(map[string]any{"liveResources": map[string]any{"reader": map[string]any{"name": "sa"}}}))
	assert.ErrorContains(t, err, "liveResources.reader.namespace is required")
}

func assertReadsWhatArgoCDManagesButSecrets(t *testing.T, objects, full []*unstructured.Unstructured) {
	t.Helper()
	reads := map[string][]string{}
	for _, rule := range agentchart.RulesOf(t, agentchart.MustFind(t, objects, "ClusterRole", "", contract.LiveResourcesClusterRole)) {
		assert.Empty(t, rule.ResourceNames)
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				reads[group+"/"+resource] = append(reads[group+"/"+resource], rule.Verbs...)
			}
		}
	}
	for _, rule := range agentchart.RulesOf(t, agentchart.MustFind(t, full, "ClusterRole", "", contract.PlatformExtensionsClusterRole)) {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				kind := group + "/" + resource
				switch kind {
				case "/secrets", "/*":
					assert.NotContains(t, reads, kind, "no Secret is read")
				default:
					assert.Equal(t, []string{"get"}, reads[kind], "%s is read, which Argo CD may manage", kind)
				}
			}
		}
	}
	assert.Equal(t, []string{"list"}, reads["/events"], "the events the UI shows")
	for _, child := range []string{"/pods", "/pods/log", "apps/controllerrevisions"} {
		assert.Equal(t, []string{"get"}, reads[child], "the tree's children: %s", child)
	}
	for kind, verbs := range reads {
		for _, verb := range verbs {
			assert.Contains(t, []string{"get", "list"}, verb, "%s: only read", kind)
		}
	}
}
