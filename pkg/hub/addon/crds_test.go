package addon

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/gitops-addon/gitops-addon/manifests"
	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// TestManifestsEqualTheFrameworksWholeChartRendering proves that decoding the CRDs once
// changes nothing: for every kind of cluster, the addon returns exactly the objects, in
// the same order, that addon-framework's Helm addon returns for the whole chart.
func TestManifestsEqualTheFrameworksWholeChartRendering(t *testing.T) {
	adc := fakeADCGetter{"c1/cfg": {Spec: addonv1beta1.AddOnDeploymentConfigSpec{
		CustomizedVariables: []addonv1beta1.CustomizedVariable{{Name: "extraAPIGroups", Value: "cert-manager.io"}},
	}}}
	cases := []struct {
		name    string
		cluster *clusterv1.ManagedCluster
		addon   *addonv1beta1.ManagedClusterAddOn
	}{
		{name: "kubernetes", cluster: vanilla(), addon: mca("", nil, "")},
		{name: "openshift", cluster: openshift(), addon: mca("", nil, "")},
		{name: "unknown flavour", cluster: unknown(), addon: mca("", nil, "")},
		{name: "agent reports no Route API", cluster: unknown(), addon: mca("", nil, "Absent")},
		{name: "with an AddOnDeploymentConfig", cluster: vanilla(), addon: mca("cfg", nil, "")},
	}
	o := Options{AgentImage: "example.com/agent:v1", ADCGetter: adc}
	ours, err := New(o)
	require.NoError(t, err)
	wholeChart, err := buildHelmAddon(o, manifests.ChartFS)
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := wholeChart.Manifests(context.Background(), tc.cluster, tc.addon)
			require.NoError(t, err)
			got, err := ours.Manifests(context.Background(), tc.cluster, tc.addon)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			assert.Equal(t, kindsAndCRDs(want), kindsAndCRDs(got), "the same kinds in the same order, the same CRDs in the same order")
			// Objects of one kind from different templates come in Go map order, which the
			// framework's stable sort by kind keeps: compare them as a set.
			assert.ElementsMatch(t, want, got)
		})
	}
}

// kindsAndCRDs lists each object's kind, and a CRD's name too.
func kindsAndCRDs(objects []runtime.Object) []string {
	var out []string
	for _, o := range objects {
		entry := o.GetObjectKind().GroupVersionKind().Kind
		if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
			entry += "/" + crd.Name
		}
		out = append(out, entry)
	}
	return out
}

// TestManifestsHandOutCopies guards the shared decoded CRDs: changing what one render
// returned must not change the next render.
func TestManifestsHandOutCopies(t *testing.T) {
	a, err := New(Options{AgentImage: "a:1"})
	require.NoError(t, err)
	first, err := a.Manifests(context.Background(), vanilla(), mca("", nil, ""))
	require.NoError(t, err)
	at := slices.IndexFunc(first, func(o runtime.Object) bool { _, ok := o.(*apiextensionsv1.CustomResourceDefinition); return ok })
	require.GreaterOrEqual(t, at, 0, "a CRD is rendered")
	crd := first[at].(*apiextensionsv1.CustomResourceDefinition)
	name := crd.Name
	crd.Name = "changed"
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties = nil

	second, err := a.Manifests(context.Background(), vanilla(), mca("", nil, ""))
	require.NoError(t, err)
	again := second[at].(*apiextensionsv1.CustomResourceDefinition)
	assert.Equal(t, name, again.Name)
	assert.NotEmpty(t, again.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties)
}

func TestDecodeCRDsRejectsBadFiles(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n"
	cases := []struct {
		name    string
		files   fstest.MapFS
		wantErr string
	}{
		{name: "no CRDs", files: fstest.MapFS{"crds/.keep": {}, "crds/README.md": {}}, wantErr: "has no CRDs"},
		{name: "missing directory", files: fstest.MapFS{}, wantErr: "reading the agent chart's CRDs"},
		{name: "not YAML", files: fstest.MapFS{"crds/a.yaml": {Data: []byte("{")}}, wantErr: "decoding crds/a.yaml"},
		{name: "not a CRD", files: fstest.MapFS{"crds/a.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}}, wantErr: "crds/a.yaml"},
		{name: "sorted by file name", files: fstest.MapFS{
			"crds/b.yaml": {Data: []byte(crd)},
			"crds/a.yml":  {Data: []byte(crd)},
			"crds/notes":  {Data: []byte("not a manifest: skipped, as Helm does")},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects, err := decodeCRDs(tc.files, "crds")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, objects, 2)
		})
	}
}

// TestManifestsOrderIsStable: the same inputs give the same objects in the same order (the
// framework alone gives objects of one kind in Go map order), in Helm's install order.
func TestManifestsOrderIsStable(t *testing.T) {
	a, err := New(Options{AgentImage: "a:1"})
	require.NoError(t, err)
	order := func() []string {
		objects, err := a.Manifests(context.Background(), vanilla(), mca("", nil, ""))
		require.NoError(t, err)
		var out []string
		for _, o := range objects {
			m, err := meta.Accessor(o)
			require.NoError(t, err)
			out = append(out, o.GetObjectKind().GroupVersionKind().Kind+"/"+m.GetNamespace()+"/"+m.GetName())
		}
		return out
	}
	first := order()
	assert.Equal(t, "Namespace//"+constants.GitOpsNamespace, first[0])
	for range 10 {
		require.Equal(t, first, order())
	}
}

func TestSortInInstallOrder(t *testing.T) {
	obj := func(kind, namespace, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetKind(kind)
		u.SetNamespace(namespace)
		u.SetName(name)
		return u
	}
	objects := []runtime.Object{
		obj("Widget", "", "w"), obj("Deployment", "b", "x"), obj("Deployment", "a", "y"),
		obj("Gadget", "", "g"), obj("CustomResourceDefinition", "", "b.example.com"),
		obj("Namespace", "", "z"), obj("CustomResourceDefinition", "", "a.example.com"),
	}
	require.NoError(t, sortInInstallOrder(objects))
	var got []string
	for _, o := range objects {
		u := o.(*unstructured.Unstructured)
		got = append(got, u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName())
	}
	assert.Equal(t, []string{
		"Namespace//z",
		"CustomResourceDefinition//a.example.com", "CustomResourceDefinition//b.example.com",
		"Deployment/a/y", "Deployment/b/x",
		"Gadget//g", "Widget//w", // kinds Helm does not know: last, by kind
	}, got)
}
