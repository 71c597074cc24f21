package addon

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// fakeADCGetter serves AddOnDeploymentConfigs from memory.
type fakeADCGetter map[string]*addonv1beta1.AddOnDeploymentConfig

func (f fakeADCGetter) Get(_ context.Context, namespace, name string) (*addonv1beta1.AddOnDeploymentConfig, error) {
	if adc, ok := f[namespace+"/"+name]; ok {
		return adc, nil
	}
	return nil, fmt.Errorf("addondeploymentconfig %s/%s not found", namespace, name)
}

var (
	vanilla = func() *clusterv1.ManagedCluster {
		return fixtures.ManagedCluster("c1", map[string]string{claimProduct: "EKS"})
	}
	openshift = func() *clusterv1.ManagedCluster {
		return fixtures.ManagedCluster("c1", map[string]string{claimProduct: "OpenShift", claimOpenShiftVer: "4.20.1"},
			fixtures.Labels(map[string]string{labelVendor: "OpenShift"}))
	}
	unknown = func() *clusterv1.ManagedCluster { return fixtures.ManagedCluster("c1", nil) }
)

// mca is a ManagedClusterAddOn, optionally bound to an AddOnDeploymentConfig and
// carrying annotations and a RouteAPI report.
func mca(adc string, annotations map[string]string, routeAPI string) *addonv1beta1.ManagedClusterAddOn {
	a := &addonv1beta1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: contract.AddonName, Namespace: "c1", Annotations: annotations},
		Status: addonv1beta1.ManagedClusterAddOnStatus{Namespace: DefaultInstallNamespace, Conditions: []metav1.Condition{
			{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionFalse, Reason: contract.ExistingArgoCDNone},
		}},
	}
	if adc != "" {
		a.Status.ConfigReferences = []addonv1beta1.ConfigReference{{
			ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			DesiredConfig:       &addonv1beta1.ConfigSpecHash{ConfigReferent: addonv1beta1.ConfigReferent{Namespace: "c1", Name: adc}, SpecHash: "hash"},
		}}
	}
	if routeAPI != "" {
		a.Status.Conditions = append(a.Status.Conditions, metav1.Condition{Type: contract.ConditionRouteAPI, Status: metav1.ConditionTrue, Reason: routeAPI})
	}
	return a
}

func render(t *testing.T, o Options, mc *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn) []runtime.Object {
	t.Helper()
	a, err := New(o)
	require.NoError(t, err)
	objects, err := a.Manifests(context.Background(), mc, addon)
	require.NoError(t, err)
	return objects
}

func find[T runtime.Object](objects []runtime.Object, name string) T {
	var zero T
	for _, o := range objects {
		if typed, ok := o.(T); ok {
			if m, ok := o.(metav1.Object); ok && m.GetName() == name {
				return typed
			}
		}
	}
	return zero
}

func TestRenderFlavours(t *testing.T) {
	cases := []struct {
		name          string
		cluster       *clusterv1.ManagedCluster
		wantOpenShift bool
		wantImage     string
	}{
		{name: "vanilla cluster known by its product claim", cluster: vanilla(), wantImage: "quay.io/argoprojlabs/argocd-operator"},
		{name: "OpenShift cluster", cluster: openshift(), wantOpenShift: true, wantImage: "quay.io/argoprojlabs/argocd-operator"},
		{name: "unknown flavour", cluster: unknown(), wantImage: "quay.io/argoprojlabs/argocd-operator"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects := render(t, Options{AgentImage: "example.com/agent:v1"}, tc.cluster, mca("", nil, ""))
			op := find[*appsv1.Deployment](objects, contract.OperatorDeployment)
			require.NotNil(t, op, "operator Deployment rendered")
			assert.Contains(t, op.Spec.Template.Spec.Containers[0].Image, tc.wantImage)
			ag := find[*appsv1.Deployment](objects, contract.AgentDeployment)
			require.NotNil(t, ag, "agent Deployment rendered")
			assert.Equal(t, "example.com/agent:v1", ag.Spec.Template.Spec.Containers[0].Image)
			assert.Equal(t, DefaultInstallNamespace, ag.Namespace)
			assert.Contains(t, ag.Spec.Template.Spec.Containers[0].Args, fmt.Sprintf("--openshift=%v", tc.wantOpenShift),
				"the hub's flavour decision reaches the agent, which installs the Routes CRD only where it is false")
			for _, o := range objects {
				if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
					t.Errorf("CRD %s rendered: the agent installs CRDs, the ManifestWork carries none", crd.Name)
				}
			}
			argocd := find[*unstructured.Unstructured](objects, contract.ArgoCDName)
			require.NotNil(t, argocd, "ArgoCD CR rendered")
			route, _, _ := unstructured.NestedBool(argocd.Object, "spec", "server", "route", "enabled")
			assert.Equal(t, tc.cluster.Labels[labelVendor] == "OpenShift", route, "the Argo CD server Route only on OpenShift")
			noDefaultRole, _, _ := unstructured.NestedBool(argocd.Object, "spec", "defaultClusterScopedRoleDisabled")
			assert.True(t, noDefaultRole, "no */* ClusterRole: argocd-platform-extensions is the grant")
			ns := find[*corev1.Namespace](objects, contract.GitOpsNamespace)
			require.NotNil(t, ns)
			assert.Contains(t, ns.Annotations, AnnotationDeletionOrphan)
		})
	}
}

func TestAgentMountsWholeHubSecret(t *testing.T) {
	objects := render(t, Options{AgentImage: "a:1"}, vanilla(), mca("", nil, ""))
	ag := find[*appsv1.Deployment](objects, contract.AgentDeployment)
	require.NotNil(t, ag)
	var found bool
	for _, v := range ag.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == contract.HubKubeconfigSecret {
			found = true
			assert.Empty(t, v.Secret.Items, "the whole secret is mounted: the kubeconfig refers to tls.crt/tls.key beside it")
		}
	}
	assert.True(t, found, "agent mounts %s", contract.HubKubeconfigSecret)
	for _, m := range ag.Spec.Template.Spec.Containers[0].VolumeMounts {
		assert.Empty(t, m.SubPath)
	}
}

func TestImagePrecedence(t *testing.T) {
	adcs := fakeADCGetter{"c1/cfg": {
		ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{
			CustomizedVariables: []addonv1beta1.CustomizedVariable{{Name: VarGitOpsOperatorImage, Value: "adc.example.com/operator:v2"}},
		},
	}}
	mirrored := fakeADCGetter{"c1/cfg": {
		ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{
			Registries: []addonv1beta1.ImageMirror{{Source: "quay.io/argoprojlabs", Mirror: "mirror.example.com/gitops"}, {Source: "quay.io/gitops-addon", Mirror: "mirror.example.com/addon"}},
		},
	}}
	cases := []struct {
		name      string
		opts      Options
		addon     *addonv1beta1.ManagedClusterAddOn
		wantOp    string
		wantAgent string
	}{
		{name: "manager flag", opts: Options{AgentImage: "quay.io/gitops-addon/gitops-addon:v1", OperatorImage: "flag.example.com/op:v1"},
			addon: mca("", nil, ""), wantOp: "flag.example.com/op:v1", wantAgent: "quay.io/gitops-addon/gitops-addon:v1"},
		{name: "ADC customizedVariable beats the flag", opts: Options{AgentImage: "a:1", OperatorImage: "flag.example.com/op:v1", ADCGetter: adcs},
			addon: mca("cfg", nil, ""), wantOp: "adc.example.com/operator:v2", wantAgent: "a:1"},
		{name: "GitOpsCluster annotation beats the ADC", opts: Options{AgentImage: "a:1", ADCGetter: adcs},
			addon: mca("cfg", contract.AddonSettings{Images: contract.Images{Operator: "gc.example.com/op:v3"}}.Annotations(), ""), wantOp: "gc.example.com/op:v3", wantAgent: "a:1"},
		{name: "ADC registries mirror the default operator image and the agent image", opts: Options{AgentImage: "quay.io/gitops-addon/gitops-addon:v1", ADCGetter: mirrored},
			addon: mca("cfg", nil, ""), wantOp: "mirror.example.com/gitops/argocd-operator:v0.18.0", wantAgent: "mirror.example.com/addon/gitops-addon:v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects := render(t, tc.opts, vanilla(), tc.addon)
			op := find[*appsv1.Deployment](objects, contract.OperatorDeployment)
			require.NotNil(t, op)
			assert.Contains(t, op.Spec.Template.Spec.Containers[0].Image, tc.wantOp)
			ag := find[*appsv1.Deployment](objects, contract.AgentDeployment)
			require.NotNil(t, ag)
			assert.Equal(t, tc.wantAgent, ag.Spec.Template.Spec.Containers[0].Image)
		})
	}
}

// TestRegistriesMirrorEveryShippedImage: on a disconnected cluster every image the addon
// ships must come from the mirror, the defaults the operator would pick included; without
// a mirror the Argo CD and redis images stay the operator's choice (they follow its
// version).
func TestRegistriesMirrorEveryShippedImage(t *testing.T) {
	defaults, err := chartDefaults()
	require.NoError(t, err)
	mirrors := []addonv1beta1.ImageMirror{
		{Source: "quay.io", Mirror: "mirror.example.com/quay"},
		{Source: "public.ecr.aws/docker/library", Mirror: "mirror.example.com/library"},
	}
	viaADC := fakeADCGetter{"c1/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"}, Spec: addonv1beta1.AddOnDeploymentConfigSpec{Registries: mirrors}}}
	noRegistries := fakeADCGetter{"c1/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"}}}
	annotated := vanilla()
	raw, err := json.Marshal(map[string]any{"registries": mirrors})
	require.NoError(t, err)
	annotated.Annotations = map[string]string{clusterv1.ClusterImageRegistriesAnnotationKey: string(raw)}

	cases := []struct {
		name      string
		opts      Options
		cluster   *clusterv1.ManagedCluster
		addon     *addonv1beta1.ManagedClusterAddOn
		mirrored  bool
		wantArgo  string
		wantRedis string
	}{
		{name: "AddOnDeploymentConfig registries", opts: Options{AgentImage: "quay.io/gitops-addon/gitops-addon:v1", ADCGetter: viaADC},
			cluster: vanilla(), addon: mca("cfg", nil, ""), mirrored: true,
			wantArgo:  strings.Replace(defaults.ArgoCD.DefaultImage, "quay.io", "mirror.example.com/quay", 1),
			wantRedis: strings.Replace(defaults.ArgoCD.DefaultRedisImage, "public.ecr.aws/docker/library", "mirror.example.com/library", 1)},
		{name: "the cluster's image-registries annotation", opts: Options{AgentImage: "quay.io/gitops-addon/gitops-addon:v1"},
			cluster: annotated, addon: mca("", nil, ""), mirrored: true,
			wantArgo:  strings.Replace(defaults.ArgoCD.DefaultImage, "quay.io", "mirror.example.com/quay", 1),
			wantRedis: strings.Replace(defaults.ArgoCD.DefaultRedisImage, "public.ecr.aws/docker/library", "mirror.example.com/library", 1)},
		{name: "the cluster's annotation, with an AddOnDeploymentConfig that names no registries", opts: Options{AgentImage: "quay.io/gitops-addon/gitops-addon:v1", ADCGetter: noRegistries},
			cluster: annotated, addon: mca("cfg", nil, ""), mirrored: true,
			wantArgo:  strings.Replace(defaults.ArgoCD.DefaultImage, "quay.io", "mirror.example.com/quay", 1),
			wantRedis: strings.Replace(defaults.ArgoCD.DefaultRedisImage, "public.ecr.aws/docker/library", "mirror.example.com/library", 1)},
		{name: "no mirror: the operator's own defaults", opts: Options{AgentImage: "quay.io/gitops-addon/gitops-addon:v1"},
			cluster: vanilla(), addon: mca("", nil, "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects := render(t, tc.opts, tc.cluster, tc.addon)
			for _, name := range []string{contract.OperatorDeployment, contract.AgentDeployment} {
				d := find[*appsv1.Deployment](objects, name)
				require.NotNil(t, d, name)
				for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
					assert.Equal(t, tc.mirrored, strings.HasPrefix(c.Image, "mirror.example.com/quay/"), "%s container %s: %s", name, c.Name, c.Image)
				}
			}
			cr := find[*unstructured.Unstructured](objects, contract.ArgoCDName)
			require.NotNil(t, cr, "ArgoCD CR rendered")
			image, _, _ := unstructured.NestedString(cr.Object, "spec", "image")
			version, _, _ := unstructured.NestedString(cr.Object, "spec", "version")
			redisImage, _, _ := unstructured.NestedString(cr.Object, "spec", "redis", "image")
			redisVersion, _, _ := unstructured.NestedString(cr.Object, "spec", "redis", "version")
			joined := func(image, version string) string {
				if image == "" {
					return ""
				}
				return image + "@" + version
			}
			assert.Equal(t, tc.wantArgo, joined(image, version), "Argo CD image")
			assert.Equal(t, tc.wantRedis, joined(redisImage, redisVersion), "redis image")
		})
	}
}

func TestDeploymentConfigKnobs(t *testing.T) {
	adcs := fakeADCGetter{"c1/cfg": {
		ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{
			NodePlacement: &addonv1beta1.NodePlacement{
				NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
				Tolerations:  []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			},
			ProxyConfig:           addonv1beta1.ProxyConfig{HTTPSProxy: "https://proxy.example.com:3129", NoProxy: "10.0.0.0/8"},
			AgentInstallNamespace: "gitops-agent",
			CustomizedVariables: []addonv1beta1.CustomizedVariable{
				{Name: VarExtraAPIGroups, Value: "cert-manager.io, external-secrets.io"},
				{Name: VarAgentLogLevel, Value: "debug"},
				{Name: VarRouteCRDAdmissionGuard, Value: "false"},
			},
		},
	}}
	a := mca("cfg", nil, "")
	objects := render(t, Options{AgentImage: "a:1", ADCGetter: adcs}, vanilla(), a)

	for _, name := range []string{contract.OperatorDeployment, contract.AgentDeployment} {
		d := find[*appsv1.Deployment](objects, name)
		require.NotNil(t, d, name)
		spec := d.Spec.Template.Spec
		assert.Equal(t, map[string]string{"node-role.kubernetes.io/infra": ""}, spec.NodeSelector, name)
		require.Len(t, spec.Tolerations, 1, name)
		assert.Equal(t, "infra", spec.Tolerations[0].Key)
		env := map[string]string{}
		for _, e := range spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		assert.Equal(t, "https://proxy.example.com:3129", env["HTTPS_PROXY"], name)
	}
	ag := find[*appsv1.Deployment](objects, contract.AgentDeployment)
	assert.Equal(t, "gitops-agent", ag.Namespace, "agentInstallNamespace from the ADC")
	assert.Contains(t, ag.Spec.Template.Spec.Containers[0].Args, "--zap-log-level=debug")
	assert.Contains(t, ag.Spec.Template.Spec.Containers[0].Args, "--disable-route-crd-admission-guard")

	role := find[*rbacv1.ClusterRole](objects, contract.PlatformExtensionsClusterRole)
	require.NotNil(t, role)
	groups := map[string]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			groups[g] = true
		}
	}
	assert.True(t, groups["cert-manager.io"] && groups["external-secrets.io"], "extra API groups granted: %v", groups)
	assert.False(t, groups["rbac.authorization.k8s.io"], "no RBAC escalation by default")
}

func TestArgoCDAppliedServerSide(t *testing.T) {
	a, err := New(Options{AgentImage: "a:1"})
	require.NoError(t, err)
	var found bool
	for _, c := range a.GetAgentAddonOptions().ManifestConfigs {
		if c.ResourceIdentifier.Resource == "argocds" && c.ResourceIdentifier.Name == contract.ArgoCDName {
			found = true
			require.NotNil(t, c.UpdateStrategy)
			assert.Equal(t, workv1.UpdateStrategyTypeServerSideApply, c.UpdateStrategy.Type)
		}
	}
	assert.True(t, found)
	assert.NotNil(t, a.GetAgentAddonOptions().Registration, "the agent gets a hub credential")
}

func TestRenderRejectsBadCustomizedVariables(t *testing.T) {
	cases := map[string]addonv1beta1.CustomizedVariable{
		"invalid API group":   {Name: VarExtraAPIGroups, Value: "Cert_Manager"},
		"invalid log level":   {Name: VarAgentLogLevel, Value: "verbose"},
		"guard not a bool":    {Name: VarRouteCRDAdmissionGuard, Value: "off"},
		"image with a space":  {Name: VarGitOpsOperatorImage, Value: "a b"},
		"instance not a name": {Name: VarPlatformExtensionsForExisting, Value: "Team_ArgoCD"},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			adcs := fakeADCGetter{"c1/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"},
				Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1beta1.CustomizedVariable{v}}}}
			a, err := New(Options{AgentImage: "a:1", ADCGetter: adcs})
			require.NoError(t, err)
			_, err = a.Manifests(context.Background(), vanilla(), mca("cfg", nil, ""))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "AddOnDeploymentConfig c1/cfg")
		})
	}
}

// TestUnknownCustomizedVariablesAreIgnoredWithAWarning: a name gitops-addon does not know
// (a typo, a variable of another addon sharing the ADC, one of a newer release) leaves the
// stack rendered with everything else applied, and says so once per change.
func TestUnknownCustomizedVariablesAreIgnoredWithAWarning(t *testing.T) {
	adcs := fakeADCGetter{"c1/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1beta1.CustomizedVariable{
			{Name: "extraApiGroups", Value: "cert-manager.io"},
			{Name: VarAgentLogLevel, Value: "debug"},
		}}}}
	var warnings []string
	warn := func(_ *addonv1beta1.ManagedClusterAddOn, message string) { warnings = append(warnings, message) }
	objects := render(t, Options{AgentImage: "a:1", ADCGetter: adcs, Warn: warn}, vanilla(), mca("cfg", nil, ""))

	ag := find[*appsv1.Deployment](objects, contract.AgentDeployment)
	require.NotNil(t, ag, "the stack is rendered")
	assert.Contains(t, ag.Spec.Template.Spec.Containers[0].Args, "--zap-log-level=debug", "the known variable still applies")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "AddOnDeploymentConfig c1/cfg: ignored customizedVariables extraApiGroups")
	assert.Contains(t, warnings[0], VarExtraAPIGroups, "names what it understands")

	t.Run("an Event only when the message changes", func(t *testing.T) {
		recorder := events.NewFakeRecorder(10)
		w := EventWarner(recorder)
		a := mca("cfg", nil, "")
		for _, message := range []string{"ignored x", "ignored x", "", "ignored x", "ignored y"} {
			w(a, message)
		}
		close(recorder.Events)
		var got []string
		for e := range recorder.Events {
			got = append(got, e)
		}
		assert.Equal(t, []string{
			"Warning AddOnDeploymentConfigIgnored ignored x", "Warning AddOnDeploymentConfigIgnored ignored x",
			"Warning AddOnDeploymentConfigIgnored ignored y",
		}, got, "repeats are not recorded; after it was fixed, a new occurrence is")
	})
}

// TestManifestsRenderConcurrently: the manager's deploy controller renders with several
// workers, each for its own cluster, through one agent addon. Renders of different
// clusters at once must each come out as they do alone (run under -race to also see a
// data race in the chart engine or our values).
func TestManifestsRenderConcurrently(t *testing.T) {
	a, err := New(Options{})
	require.NoError(t, err)
	addonFor := func(i int) *addonv1beta1.ManagedClusterAddOn {
		return mca("", contract.AddonSettings{Images: contract.Images{ArgoCD: fmt.Sprintf("quay.example.com/argocd:v%d", i)}}.Annotations(), "")
	}
	clusterFor := func(i int) *clusterv1.ManagedCluster {
		return []func() *clusterv1.ManagedCluster{vanilla, openshift, unknown}[i%3]()
	}
	const renders = 24
	want := make([]string, renders)
	for i := range renders {
		objects, err := a.Manifests(context.Background(), clusterFor(i), addonFor(i))
		require.NoError(t, err)
		want[i] = asJSON(t, objects)
	}
	got := make([]string, renders)
	errs := make([]error, renders)
	var wg sync.WaitGroup
	for i := range renders {
		wg.Go(func() {
			objects, err := a.Manifests(context.Background(), clusterFor(i), addonFor(i))
			got[i], errs[i] = asJSON(t, objects), err
		})
	}
	wg.Wait()
	for i := range renders {
		require.NoError(t, errs[i])
		assert.Equal(t, want[i], got[i], "render %d", i)
	}
	assert.NotEqual(t, want[0], want[3], "the renders differ between clusters, so a mix-up would show")
}

func asJSON(t *testing.T, objects []runtime.Object) string {
	data, err := json.Marshal(objects)
	assert.NoError(t, err)
	return string(data)
}

// TestStackWaitsForTheAgentsReport: no operator and no ArgoCD is shipped to a cluster
// until its agent has reported that no Argo CD of someone else runs there.
func TestStackWaitsForTheAgentsReport(t *testing.T) {
	existing := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: status, Reason: reason}
	}
	use := map[string]string{contract.ExistingArgoCDPolicy: contract.ExistingArgoCDUse}
	for _, tc := range []struct {
		name        string
		conditions  []metav1.Condition
		annotations map[string]string
		stack       string
	}{
		{"not reported yet", nil, nil, StackAgentOnly},
		{"reported none", []metav1.Condition{existing(metav1.ConditionFalse, contract.ExistingArgoCDNone)}, nil, StackFull},
		{"found one, Skip by default", []metav1.Condition{existing(metav1.ConditionTrue, contract.ExistingArgoCDOLM)}, nil, StackAgentOnly},
		{"found one, UseExisting", []metav1.Condition{existing(metav1.ConditionTrue, contract.ExistingArgoCDOLM)}, use, StackUseExisting},
		{"unknown, even with UseExisting", []metav1.Condition{existing(metav1.ConditionUnknown, contract.ExistingArgoCDUnknown)}, use, StackAgentOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mca("", tc.annotations, "")
			a.Status.Conditions = tc.conditions
			assert.Equal(t, tc.stack, StackOf(a))
			objects := render(t, Options{AgentImage: "agent:1"}, vanilla(), a)
			var argocd, operator bool
			for _, o := range objects {
				m, err := meta.Accessor(o)
				require.NoError(t, err)
				argocd = argocd || o.GetObjectKind().GroupVersionKind().Kind == "ArgoCD"
				operator = operator || m.GetName() == contract.OperatorDeployment
			}
			assert.Equal(t, tc.stack == StackFull, argocd, "ArgoCD shipped")
			assert.Equal(t, tc.stack == StackFull, operator, "operator shipped")
		})
	}
}

// TestPlatformExtensionsForAnExistingInstanceAreAnOptIn: where gitops-addon uses an
// existing Argo CD (UseExisting), argocd-platform-extensions is granted to that instance's
// application controller only when an AddOnDeploymentConfig names the instance, never
// otherwise, and never while the cluster is skipped.
func TestPlatformExtensionsForAnExistingInstanceAreAnOptIn(t *testing.T) {
	found := metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionTrue, Reason: contract.ExistingArgoCDInstance}
	use := map[string]string{contract.ExistingArgoCDPolicy: contract.ExistingArgoCDUse}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		optIn       bool
		subject     string
	}{
		{name: "UseExisting, opted in", annotations: use, optIn: true, subject: "acm-openshift-gitops-argocd-application-controller"},
		{name: "UseExisting, not opted in", annotations: use},
		{name: "Skip, opted in", optIn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var vars []addonv1beta1.CustomizedVariable
			if tc.optIn {
				vars = append(vars, addonv1beta1.CustomizedVariable{Name: VarPlatformExtensionsForExisting, Value: "acm-openshift-gitops"})
			}
			adcs := fakeADCGetter{"c1/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"},
				Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: vars}}}
			a := mca("cfg", tc.annotations, "")
			a.Status.Conditions = []metav1.Condition{found}
			var subject string
			for _, o := range render(t, Options{AgentImage: "a:1", ADCGetter: adcs}, vanilla(), a) {
				if b, ok := o.(*rbacv1.ClusterRoleBinding); ok && b.Name == contract.PlatformExtensionsClusterRole {
					subject = b.Subjects[0].Name
				}
				if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "ClusterRoleBinding" && u.GetName() == contract.PlatformExtensionsClusterRole {
					subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
					subject, _, _ = unstructured.NestedString(subjects[0].(map[string]any), "name")
				}
			}
			assert.Equal(t, tc.subject, subject)
		})
	}
}

// The agents report resource trees only where the hub's manager writes them: no agent reads
// its Argo CD's redis for nothing.
func TestAgentsReportTreesOnlyForAHubThatShowsThem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		trees    bool
		disabled bool
	}{{"the hub writes trees", true, false}, {"the hub does not", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			objects := render(t, Options{AgentImage: "a:1", ResourceTree: tc.trees}, vanilla(), mca("", nil, ""))
			ag := find[*appsv1.Deployment](objects, contract.AgentDeployment)
			require.NotNil(t, ag)
			assert.Equal(t, tc.disabled, slices.Contains(ag.Spec.Template.Spec.Containers[0].Args, "--disable-resource-tree"))
			assert.Contains(t, ag.Spec.Template.Spec.Containers[0].Args, "--zap-log-level=info", "the agent's other values stay (a deep merge)")
		})
	}
}

// TestArgoCDLeavesTheManifestWorkWhileTheAddonIsDeleted: once the ManagedClusterAddOn is
// being deleted, the ArgoCD instance is no longer in the addon's ManifestWork, so no
// resync of the work agent creates it again after the pre-delete hook deleted it (the
// work would then orphan it with no operator left); the operator and the hook's Job stay.
func TestArgoCDLeavesTheManifestWorkWhileTheAddonIsDeleted(t *testing.T) {
	addon := mca("", nil, "")
	require.NotNil(t, find[*unstructured.Unstructured](render(t, Options{AgentImage: "a:1"}, vanilla(), addon), contract.ArgoCDName),
		"the ArgoCD CR is rendered while the addon is installed")

	deleting := mca("", nil, "")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{addonv1beta1.AddonPreDeleteHookFinalizer}
	objects := render(t, Options{AgentImage: "a:1"}, vanilla(), deleting)
	assert.Nil(t, find[*unstructured.Unstructured](objects, contract.ArgoCDName), "no ArgoCD CR once the addon is being deleted")
	assert.NotNil(t, find[*appsv1.Deployment](objects, contract.OperatorDeployment), "the operator stays, to finalize the instance")
}

// TestLiveResourcesReaderIsBoundFromItsAnnotation: the reader a GitOpsCluster with
// spec.gitopsAddon.liveResources names on a cluster's ManagedClusterAddOn is bound to the
// read-only live-resources role there, and no one is without it.
func TestLiveResourcesReaderIsBoundFromItsAnnotation(t *testing.T) {
	reader := contract.AddonSettings{LiveResourcesReader: contract.ServiceAccountRef{Namespace: "open-cluster-management-agent-addon", Name: "gitops-addon-live-resources"}}
	objects := render(t, Options{AgentImage: "a:1"}, vanilla(), mca("", reader.Annotations(), ""))
	binding := find[*rbacv1.ClusterRoleBinding](objects, contract.LiveResourcesReaderBinding)
	require.NotNil(t, binding, "the reader's binding is rendered")
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gitops-addon-live-resources", Namespace: "open-cluster-management-agent-addon"}}, binding.Subjects)

	objects = render(t, Options{AgentImage: "a:1"}, vanilla(), mca("", nil, ""))
	assert.Nil(t, find[*rbacv1.ClusterRoleBinding](objects, contract.LiveResourcesReaderBinding), "no reader, no binding")
}
