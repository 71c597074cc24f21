// Package agentchart renders the embedded gitops-addon-agent chart the way the addon
// framework does, for the tests that read what a managed cluster receives: the unit
// tests beside the chart (manifests) and the integration tests that apply it to a real
// kube-apiserver.
package agentchart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/manifests"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// InstallNamespace is the addon framework's default agent install namespace.
const InstallNamespace = "open-cluster-management-agent-addon"

// Load loads the chart the way the addon framework does: every file of
// ChartFS under AgentChartDir, named relative to the chart.
func Load(t *testing.T) *chart.Chart {
	t.Helper()
	var files []*loader.BufferedFile
	err := fs.WalkDir(manifests.ChartFS, manifests.AgentChartDir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		data, err := fs.ReadFile(manifests.ChartFS, path)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: strings.TrimPrefix(path, manifests.AgentChartDir+"/"), Data: data})
		return nil
	})
	require.NoError(t, err)
	loaded, err := loader.LoadFiles(files)
	require.NoError(t, err)
	return loaded
}

// BuiltinValues are the values the addon framework always sets.
func BuiltinValues() map[string]any {
	return map[string]any{
		"clusterName":           "cluster1",
		"addonInstallNamespace": InstallNamespace,
		"hubKubeConfigSecret":   contract.HubKubeconfigSecret,
	}
}

// WithValues returns the built-in values with overrides merged in (maps deeply).
func WithValues(overrides map[string]any) map[string]any {
	values := BuiltinValues()
	mergeInto(values, overrides)
	return values
}

func mergeInto(dst, src map[string]any) {
	for key, value := range src {
		srcMap, srcIsMap := value.(map[string]any)
		dstMap, dstIsMap := dst[key].(map[string]any)
		if srcIsMap && dstIsMap {
			mergeInto(dstMap, srcMap)
			continue
		}
		dst[key] = value
	}
}

// Render renders the chart with the Helm engine in strict mode (a reference to a
// missing value is an error) and returns every object: the crds/ files first, as the
// addon framework emits them, then the templates in name order.
func Render(t *testing.T, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return RenderInNamespace(t, InstallNamespace, values)
}

// RenderInNamespace renders with releaseNamespace as the agent install namespace.
func RenderInNamespace(t *testing.T, releaseNamespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return RenderFor(t, releaseNamespace, DefaultKubeVersion, values)
}

// DefaultKubeVersion is the managed cluster's Kubernetes version Render assumes.
const DefaultKubeVersion = "v1.35.4"

// RenderFor renders as the addon framework does for a managed cluster that reports
// kubeVersion (empty: not reported yet).
func RenderFor(t *testing.T, releaseNamespace, kubeVersion string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	agentChart := Load(t)
	renderValues, err := chartutil.ToRenderValues(agentChart, values,
		chartutil.ReleaseOptions{Name: contract.AddonName, Namespace: releaseNamespace},
		&chartutil.Capabilities{KubeVersion: chartutil.KubeVersion{Version: kubeVersion}})
	if err != nil {
		return nil, fmt.Errorf("computing render values: %w", err)
	}

	var objects []*unstructured.Unstructured
	for _, crd := range agentChart.CRDObjects() {
		decoded, err := Decode(crd.Filename, string(crd.File.Data))
		if err != nil {
			return nil, err
		}
		objects = append(objects, decoded...)
	}

	rendered, err := engine.Engine{Strict: true}.Render(agentChart, renderValues)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		decoded, err := Decode(name, rendered[name])
		if err != nil {
			return nil, err
		}
		objects = append(objects, decoded...)
	}
	return objects, nil
}

// MustRender renders and fails the test on error.
func MustRender(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objects, err := Render(t, values)
	require.NoError(t, err)
	return objects
}

// Decode splits a rendered file into objects. A document that is only
// whitespace or comments is skipped, as the addon framework skips empty documents.
func Decode(name, data string) ([]*unstructured.Unstructured, error) {
	var objects []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(data)))
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading YAML: %w", name, err)
		}
		asJSON, err := yaml.YAMLToJSON(document)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid YAML: %w\n%s", name, err, document)
		}
		if bytes.Equal(bytes.TrimSpace(asJSON), []byte("null")) {
			continue
		}
		object := &unstructured.Unstructured{}
		if err := object.UnmarshalJSON(asJSON); err != nil {
			return nil, fmt.Errorf("%s: not a Kubernetes object: %w\n%s", name, err, document)
		}
		objects = append(objects, object)
	}
}

// Find returns the object of that kind, namespace and name, or nil.
func Find(objects []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, object := range objects {
		if object.GetKind() == kind && object.GetNamespace() == namespace && object.GetName() == name {
			return object
		}
	}
	return nil
}

// MustFind returns the object or fails the test.
func MustFind(t *testing.T, objects []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	object := Find(objects, kind, namespace, name)
	require.NotNil(t, object, "%s %s/%s not rendered", kind, namespace, name)
	return object
}

// PolicyRule is the part of an RBAC rule the tests look at.
type PolicyRule struct {
	APIGroups       []string `json:"apiGroups"`
	Resources       []string `json:"resources"`
	ResourceNames   []string `json:"resourceNames"`
	NonResourceURLs []string `json:"nonResourceURLs"`
	Verbs           []string `json:"verbs"`
}

// RulesOf decodes the rules of a rendered Role or ClusterRole.
func RulesOf(t *testing.T, role *unstructured.Unstructured) []PolicyRule {
	t.Helper()
	raw, found, err := unstructured.NestedSlice(role.Object, "rules")
	require.NoError(t, err)
	require.True(t, found, "%s %s has no rules", role.GetKind(), role.GetName())
	asJSON, err := yaml.Marshal(raw)
	require.NoError(t, err)
	var rules []PolicyRule
	require.NoError(t, yaml.UnmarshalStrict(asJSON, &rules))
	return rules
}
