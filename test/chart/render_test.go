// Package chart renders the manager's Helm chart with the Helm SDK for default and
// non-default values and checks what it produces.
package chart

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// render runs `helm template` through the SDK and returns the objects by "Kind/name".
func render(t *testing.T, set ...string) (map[string]*unstructured.Unstructured, error) {
	t.Helper()
	all, err := renderAll(t, set...)
	if err != nil {
		return nil, err
	}
	objects := map[string]*unstructured.Unstructured{}
	for _, u := range all {
		objects[u.GetKind()+"/"+u.GetName()] = u
	}
	return objects, nil
}

// renderAll runs `helm template` through the SDK and returns every object it renders.
func renderAll(t *testing.T, set ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	rel, err := installDryRun(t, true, set...)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	for _, object := range decodeManifest(t, rel.Manifest) {
		objects = append(objects, &unstructured.Unstructured{Object: object})
	}
	return objects, nil
}

// installDryRun renders the manager chart as `helm install --dry-run` on a v1.35 cluster
// would, with the --set values given; includeCRDs adds the chart's crds/.
func installDryRun(t *testing.T, includeCRDs bool, set ...string) (*release.Release, error) {
	t.Helper()
	chart, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"))
	require.NoError(t, err)
	values := map[string]any{}
	for _, s := range set {
		require.NoError(t, strvals.ParseInto(s, values))
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.IncludeCRDs = true, true, includeCRDs
	install.ReleaseName, install.Namespace = "gitops-addon", "open-cluster-management-addon"
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	return install.Run(chart, values)
}

func managerArgs(t *testing.T, objects map[string]*unstructured.Unstructured) []string {
	d := objects["Deployment/gitops-addon-manager"]
	require.NotNil(t, d)
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	var args []string
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

func TestDefaults(t *testing.T) {
	objects, err := render(t)
	require.NoError(t, err)
	for _, want := range []string{
		"ServiceAccount/gitops-addon-manager", "Deployment/gitops-addon-manager", "Service/gitops-addon-manager-metrics",
		"ClusterRole/gitops-addon-manager", "ClusterRoleBinding/gitops-addon-manager",
		"Role/gitops-addon-manager-leader-election", "RoleBinding/gitops-addon-manager-leader-election",
		"ClusterManagementAddOn/gitops-addon", "CustomResourceDefinition/gitopsclusters.apps.open-cluster-management.io",
	} {
		assert.Contains(t, objects, want)
	}
	args := managerArgs(t, objects)
	assert.Contains(t, args, "--leader-elect=true")
	assert.Contains(t, args, "--agent-image=ghcr.io/gitops-addon/gitops-addon:0.1.0", "the agent defaults to the manager's image")
	for _, a := range args {
		assert.NotContains(t, a, "--operator-image", "no operator override by default")
	}
	assert.Contains(t, args, "--kube-api-qps=200", "the hub client is sized for fleet work")
	assert.Contains(t, args, "--kube-api-burst=400")
	for _, a := range args {
		assert.NotContains(t, a, "--addon-workers", "deprecated and ignored: not passed")
	}

	d := objects["Deployment/gitops-addon-manager"]
	nonRoot, _, _ := unstructured.NestedBool(d.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot")
	assert.True(t, nonRoot)
	container := mustContainer(t, d)
	readOnly, _, _ := unstructured.NestedBool(container, "securityContext", "readOnlyRootFilesystem")
	assert.True(t, readOnly)
	escalation, _, _ := unstructured.NestedBool(container, "securityContext", "allowPrivilegeEscalation")
	assert.False(t, escalation)
	liveness, _, _ := unstructured.NestedString(container, "livenessProbe", "httpGet", "path")
	assert.Equal(t, "/healthz", liveness)
	env, _, _ := unstructured.NestedSlice(container, "env")
	var memoryLimit map[string]any
	for _, e := range env {
		if e.(map[string]any)["name"] == "CONTAINER_MEMORY_LIMIT" {
			memoryLimit = e.(map[string]any)
		}
	}
	require.NotNil(t, memoryLimit, "the Go memory limit follows the container's")
	resource, _, _ := unstructured.NestedString(memoryLimit, "valueFrom", "resourceFieldRef", "resource")
	assert.Equal(t, "limits.memory", resource)

	cma := objects["ClusterManagementAddOn/gitops-addon"]
	strategy, _, _ := unstructured.NestedString(cma.Object, "spec", "installStrategy", "type")
	assert.Equal(t, "Manual", strategy)
	configs, _, _ := unstructured.NestedSlice(cma.Object, "spec", "supportedConfigs")
	require.Len(t, configs, 1)
	assert.NotContains(t, configs[0], "defaultConfig")
}

func mustContainer(t *testing.T, d *unstructured.Unstructured) map[string]any {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	return containers[0].(map[string]any)
}

func TestRBACHasNoWildcards(t *testing.T) {
	objects, err := render(t)
	require.NoError(t, err)
	for _, key := range []string{"ClusterRole/gitops-addon-manager", "Role/gitops-addon-manager-leader-election"} {
		rules, _, _ := unstructured.NestedSlice(objects[key].Object, "rules")
		require.NotEmpty(t, rules)
		for _, r := range rules {
			rule := r.(map[string]any)
			for _, field := range []string{"apiGroups", "resources", "verbs"} {
				for _, v := range rule[field].([]any) {
					assert.NotEqual(t, "*", v, "%s %s has a wildcard: %v", key, field, rule)
				}
			}
			for _, v := range rule["verbs"].([]any) {
				assert.NotContains(t, []string{"escalate", "bind", "impersonate"}, v, "%s: %v", key, rule)
			}
		}
	}
}

func TestNonDefaultValues(t *testing.T) {
	cases := []struct {
		name  string
		set   []string
		check func(t *testing.T, objects map[string]*unstructured.Unstructured)
	}{
		{"leader election off", []string{"leaderElection.enabled=false"}, func(t *testing.T, o map[string]*unstructured.Unstructured) {
			assert.Contains(t, managerArgs(t, o), "--leader-elect=false")
		}},
		{"custom image and tag", []string{"image.repository=registry.example.com/gitops-addon", "image.tag=v9"}, func(t *testing.T, o map[string]*unstructured.Unstructured) {
			assert.Equal(t, "registry.example.com/gitops-addon:v9", mustContainer(t, o["Deployment/gitops-addon-manager"])["image"])
			assert.Contains(t, managerArgs(t, o), "--agent-image=registry.example.com/gitops-addon:v9")
		}},
		{"separate agent and operator images", []string{"agent.image=a.example.com/agent:1", "gitopsOperator.image=o.example.com/op:2"}, func(t *testing.T, o map[string]*unstructured.Unstructured) {
			args := managerArgs(t, o)
			assert.Contains(t, args, "--agent-image=a.example.com/agent:1")
			assert.Contains(t, args, "--operator-image=o.example.com/op:2")
		}},
		{"default AddOnDeploymentConfig", []string{"addonDeploymentConfig.name=fleet", "addonDeploymentConfig.namespace=open-cluster-management-addon"}, func(t *testing.T, o map[string]*unstructured.Unstructured) {
			configs, _, _ := unstructured.NestedSlice(o["ClusterManagementAddOn/gitops-addon"].Object, "spec", "supportedConfigs")
			assert.Equal(t, map[string]any{"name": "fleet", "namespace": "open-cluster-management-addon"}, configs[0].(map[string]any)["defaultConfig"])
		}},
		{"addon workers: deprecated, still accepted, not passed", []string{"addonManager.workers=32"}, func(t *testing.T, o map[string]*unstructured.Unstructured) {
			for _, a := range managerArgs(t, o) {
				assert.NotContains(t, a, "--addon-workers")
			}
		}},
		{"three replicas, metrics port", []string{"replicas=3", "metrics.port=9090"}, func(t *testing.T, o map[string]*unstructured.Unstructured) {
			replicas, _, _ := unstructured.NestedInt64(o["Deployment/gitops-addon-manager"].Object, "spec", "replicas")
			assert.Equal(t, int64(3), replicas)
			assert.Contains(t, managerArgs(t, o), "--metrics-bind-address=:9090")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects, err := render(t, tc.set...)
			require.NoError(t, err)
			tc.check(t, objects)
		})
	}
}

func TestBadValuesAreRejected(t *testing.T) {
	cases := map[string]struct {
		set  string
		want string
	}{
		"negative replicas":          {"replicas=-1", "replicas"},
		"unknown value":              {"replica=2", "replica"},
		"empty image repository":     {"image.repository=", "repository"},
		"bad pull policy":            {"image.pullPolicy=Sometimes", "pullPolicy"},
		"ADC name without namespace": {"addonDeploymentConfig.name=fleet", "addonDeploymentConfig.namespace is required"},
		"bad log level":              {"logLevel=verbose", "logLevel"},
		"zero burst":                 {"kubeAPI.burst=0", "burst"},
		"zero addon workers":         {"addonManager.workers=0", "workers"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, tc.set)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// pullRules are the ClusterRole's rules on Argo CD's and the report's API groups.
func pullRules(t *testing.T, objects map[string]*unstructured.Unstructured) []string {
	role := objects["ClusterRole/gitops-addon-manager"]
	require.NotNil(t, role)
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range rules {
		m := r.(map[string]any)
		if !slices.Contains(m["verbs"].([]any), any("get")) {
			continue // the CRD upgrade's create and update rules are not the pull model's
		}
		for _, res := range m["resources"].([]any) {
			switch res {
			case "applications", "appprojects", "applicationsets", "multiclusterapplicationsetreports", "customresourcedefinitions":
				out = append(out, res.(string))
			}
		}
	}
	return out
}

func TestPullModelValues(t *testing.T) {
	tests := []struct {
		name      string
		set       []string
		wantArgs  []string
		wantRules []string
		wantErr   string
	}{
		{name: "on by default with 4 workers", wantArgs: []string{"--pull-model=true", "--pull-workers=4"},
			wantRules: []string{"customresourcedefinitions", "applications", "appprojects", "applicationsets", "multiclusterapplicationsetreports"}},
		{name: "kill switch: off, and its RBAC goes", set: []string{"pullModel.enabled=false"}, wantArgs: []string{"--pull-model=false"}},
		{name: "workers sized", set: []string{"pullModel.workers=16"}, wantArgs: []string{"--pull-workers=16"},
			wantRules: []string{"customresourcedefinitions", "applications", "appprojects", "applicationsets", "multiclusterapplicationsetreports"}},
		{name: "zero workers rejected by the schema", set: []string{"pullModel.workers=0"}, wantErr: "workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := render(t, tt.set...)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			args := managerArgs(t, objects)
			for _, a := range tt.wantArgs {
				assert.Contains(t, args, a)
			}
			assert.Equal(t, tt.wantRules, pullRules(t, objects))
			assert.Contains(t, objects, "CustomResourceDefinition/multiclusterapplicationsetreports.apps.open-cluster-management.io")
		})
	}
}

// crdWriteRules are the ClusterRole's rules that write CRDs: verbs and resourceNames.
func crdWriteRules(t *testing.T, objects map[string]*unstructured.Unstructured) map[string][]string {
	role := objects["ClusterRole/gitops-addon-manager"]
	require.NotNil(t, role)
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	out := map[string][]string{}
	for _, r := range rules {
		m := r.(map[string]any)
		if !slices.Contains(m["resources"].([]any), any("customresourcedefinitions")) {
			continue
		}
		var names []string
		if rn, ok := m["resourceNames"].([]any); ok {
			for _, n := range rn {
				names = append(names, n.(string))
			}
		}
		for _, verb := range m["verbs"].([]any) {
			switch verb {
			case "get", "list", "watch":
			default:
				out[verb.(string)] = names
			}
		}
	}
	return out
}

// TestCRDUpgradeValues: the manager upgrades the chart's CRDs by default, with update and
// patch limited to exactly those CRDs (the names come from the chart's crds/ files) and no
// delete; crds.upgrade=false takes the flag and the write rules away.
func TestCRDUpgradeValues(t *testing.T) {
	objects, err := render(t)
	require.NoError(t, err)
	assert.Contains(t, managerArgs(t, objects), "--upgrade-crds=true")
	var chartCRDs []string
	for key := range objects {
		if name, ok := strings.CutPrefix(key, "CustomResourceDefinition/"); ok {
			chartCRDs = append(chartCRDs, name)
		}
	}
	require.Len(t, chartCRDs, 2)
	writes := crdWriteRules(t, objects)
	assert.Equal(t, map[string][]string{"create": nil, "update": writes["update"], "patch": writes["patch"]}, writes, "create, update, patch; never delete")
	assert.ElementsMatch(t, chartCRDs, writes["update"], "update only the chart's CRDs")
	assert.ElementsMatch(t, chartCRDs, writes["patch"], "patch only the chart's CRDs")

	objects, err = render(t, "crds.upgrade=false")
	require.NoError(t, err)
	assert.Contains(t, managerArgs(t, objects), "--upgrade-crds=false")
	assert.Empty(t, crdWriteRules(t, objects), "no CRD writes when the manager does not upgrade them")
}

// ruleResources are the resources a Role or ClusterRole grants, over all its rules.
func ruleResources(t *testing.T, role *unstructured.Unstructured) []string {
	return ruleResourcesOf(t, role, func(map[string]any) bool { return true })
}

// unnamedRuleResources are the resources of a role's rules that name no objects: those
// that grant every object of their kind.
func unnamedRuleResources(t *testing.T, role *unstructured.Unstructured) []string {
	return ruleResourcesOf(t, role, func(rule map[string]any) bool { return rule["resourceNames"] == nil })
}

func ruleResourcesOf(t *testing.T, role *unstructured.Unstructured, keep func(map[string]any) bool) []string {
	require.NotNil(t, role)
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range rules {
		if !keep(r.(map[string]any)) {
			continue
		}
		for _, res := range r.(map[string]any)["resources"].([]any) {
			out = append(out, res.(string))
		}
	}
	return out
}

// TestArgoNamespacesScopeSecretsAndConfigMaps: by default the manager gets Secrets and
// ConfigMaps through a Role in each Argo CD namespace, not cluster-wide; the flag names the
// same namespaces; an empty list is the opt-in to the cluster-wide grant.
func TestArgoNamespacesScopeSecretsAndConfigMaps(t *testing.T) {
	tests := []struct {
		name           string
		set            []string
		wantArg        string
		wantRoles      []string // namespaces with the manager's Role and RoleBinding
		wantNamespaces []string // namespaces the chart creates
		clusterWide    bool
	}{
		{name: "default", wantArg: "--argo-namespaces=openshift-gitops", wantRoles: []string{"openshift-gitops"}, wantNamespaces: []string{"openshift-gitops"}},
		{name: "two namespaces", set: []string{"argoNamespaces={openshift-gitops,team-a-argocd}"}, wantArg: "--argo-namespaces=openshift-gitops,team-a-argocd",
			wantRoles: []string{"openshift-gitops", "team-a-argocd"}, wantNamespaces: []string{"openshift-gitops", "team-a-argocd"}},
		{name: "namespaces not created", set: []string{"createArgoNamespaces=false"}, wantArg: "--argo-namespaces=openshift-gitops", wantRoles: []string{"openshift-gitops"}},
		{name: "empty list is cluster-wide", set: []string{"argoNamespaces=null"}, clusterWide: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chart, err := renderAll(t, tt.set...)
			require.NoError(t, err)
			var roles, bindings, namespaces []string
			for _, o := range chart {
				switch {
				case o.GetKind() == "Role" && o.GetName() == "gitops-addon-manager":
					roles = append(roles, o.GetNamespace())
					assert.ElementsMatch(t, []string{"secrets", "configmaps", "services", "routes"}, ruleResources(t, o))
				case o.GetKind() == "RoleBinding" && o.GetName() == "gitops-addon-manager":
					bindings = append(bindings, o.GetNamespace())
				case o.GetKind() == "Namespace":
					namespaces = append(namespaces, o.GetName())
					assert.Equal(t, "keep", o.GetAnnotations()["helm.sh/resource-policy"], "Argo CD's namespace outlives the release")
				}
			}
			assert.ElementsMatch(t, tt.wantRoles, roles)
			assert.ElementsMatch(t, tt.wantRoles, bindings)
			assert.ElementsMatch(t, tt.wantNamespaces, namespaces)

			objects, err := render(t, tt.set...)
			require.NoError(t, err)
			clusterRole := unnamedRuleResources(t, objects["ClusterRole/gitops-addon-manager"])
			args := managerArgs(t, objects)
			if tt.clusterWide {
				assert.Contains(t, clusterRole, "secrets")
				assert.Contains(t, clusterRole, "configmaps")
				for _, a := range args {
					assert.NotContains(t, a, "--argo-namespaces")
				}
				return
			}
			assert.NotContains(t, clusterRole, "secrets", "no cluster-wide Secrets (but the live-resources tokens and cluster-proxy's CA, by name)")
			assert.NotContains(t, clusterRole, "configmaps", "no cluster-wide ConfigMaps")
			assert.Contains(t, args, tt.wantArg)
		})
	}
}

// TestHubOnlyValues: addonManager.enabled=false installs no ClusterManagementAddOn (the
// addon is left to another installation's, such as Red Hat ACM's) and tells the manager.
func TestHubOnlyValues(t *testing.T) {
	for _, tt := range []struct {
		name    string
		set     []string
		wantArg string
		wantCMA bool
	}{
		{name: "delivers the addon by default", wantArg: "--deliver-addon=true", wantCMA: true},
		{name: "hub-only", set: []string{"addonManager.enabled=false"}, wantArg: "--deliver-addon=false"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := render(t, tt.set...)
			require.NoError(t, err)
			assert.Contains(t, managerArgs(t, objects), tt.wantArg)
			_, hasCMA := objects["ClusterManagementAddOn/gitops-addon"]
			assert.Equal(t, tt.wantCMA, hasCMA)
		})
	}
}
