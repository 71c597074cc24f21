package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// described returns a string schema with a description, to be trimmed.
func described(text string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "string", Description: text}
}

func TestRemoveSchemaDescriptionsReachesEveryNestedSchema(t *testing.T) {
	nested := described("nested")
	schema := &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "root",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			// A property *named* description: the key and its schema stay, only the
			// schema's own Description goes.
			"description": described("the description property's own doc"),
			"list": {
				Type:        "array",
				Description: "array",
				Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &nested},
			},
			"tuple": {
				Type:  "array",
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{described("tuple item")}},
				AdditionalItems: &apiextensionsv1.JSONSchemaPropsOrBool{
					Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Description: "additional item"},
				},
			},
			"combined": {
				AllOf: []apiextensionsv1.JSONSchemaProps{described("allOf")},
				AnyOf: []apiextensionsv1.JSONSchemaProps{described("anyOf")},
				OneOf: []apiextensionsv1.JSONSchemaProps{described("oneOf")},
				Not:   &apiextensionsv1.JSONSchemaProps{Description: "not"},
			},
			"map": {
				Type: "object",
				AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
					Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Description: "additional property"},
				},
				PatternProperties: map[string]apiextensionsv1.JSONSchemaProps{"^x-": described("pattern")},
				Dependencies: apiextensionsv1.JSONSchemaDependencies{
					"a": {Schema: &apiextensionsv1.JSONSchemaProps{Description: "dependency"}},
					"b": {Property: []string{"a"}},
				},
				Definitions: apiextensionsv1.JSONSchemaDefinitions{"def": described("definition")},
			},
		},
	}

	removeSchemaDescriptions(schema)

	asJSON, err := json.Marshal(schema)
	require.NoError(t, err)
	assertNoDescriptionStrings(t, asJSON)

	require.Contains(t, schema.Properties, "description", "the property named description must stay")
	assert.Equal(t, "string", schema.Properties["description"].Type)
	assert.Equal(t, []string{"a"}, schema.Properties["map"].Dependencies["b"].Property)
}

// assertNoDescriptionStrings fails when any "description" key of the JSON document has
// a string value (a schema's doc); an object value is a property named description.
func assertNoDescriptionStrings(t *testing.T, document []byte) {
	t.Helper()
	var tree any
	require.NoError(t, json.Unmarshal(document, &tree))
	var walk func(node any, path string)
	walk = func(node any, path string) {
		switch typed := node.(type) {
		case map[string]any:
			for key, value := range typed {
				if _, isString := value.(string); isString && key == "description" {
					t.Errorf("description left at %s: %q", path, value)
				}
				walk(value, path+"."+key)
			}
		case []any:
			for i, value := range typed {
				walk(value, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(tree, "")
}

// crdYAML builds an upstream-like CRD file whose schema has the given properties.
func crdYAML(t *testing.T, properties map[string]apiextensionsv1.JSONSchemaProps) []byte {
	t.Helper()
	crd := apiextensionsv1.CustomResourceDefinition{}
	crd.APIVersion = "apiextensions.k8s.io/v1"
	crd.Kind = "CustomResourceDefinition"
	crd.Name = "widgets.example.com"
	crd.Labels = map[string]string{"app.kubernetes.io/name": "widgets"}
	crd.Spec = apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		Scope: apiextensionsv1.NamespaceScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Description: "Widget is a test kind.",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Description: "spec doc", Properties: properties},
				},
			}},
		}},
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	raw, err := yaml.Marshal(crd)
	require.NoError(t, err)
	return raw
}

var testSource = crdSource{
	module: "example.com/widgets", version: "v1.2.3", path: "config/crd/widgets.yaml", dest: toCRDsDir,
}

func TestGenerateCRDTrimsAndMarksOwnership(t *testing.T) {
	raw := crdYAML(t, map[string]apiextensionsv1.JSONSchemaProps{
		"description": described("A property named description."),
		"count":       {Type: "integer", Description: "How many."},
	})

	generated, err := generateCRD(testSource, raw)
	require.NoError(t, err)

	assert.Equal(t, "widgets.example.com", generated.name)
	assert.Equal(t, filepath.Join("crds", "widgets.example.com.yaml"), generated.relPath)
	firstLine, body, _ := bytes.Cut(generated.content, []byte("\n"))
	assert.Equal(t, "# Code generated by hack/crdgen from example.com/widgets@v1.2.3/config/crd/widgets.yaml. DO NOT EDIT.", string(firstLine))

	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(body, crd))
	assert.Equal(t, map[string]string{
		constants.AnnotationDeletionOrphan: "",
		annotationSource:                   "example.com/widgets@v1.2.3/config/crd/widgets.yaml",
	}, crd.Annotations)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/name": "widgets",
		constants.LabelManagedBy: constants.ManagedByValue,
		labelPartOf:              constants.ManagedByValue,
	}, crd.Labels)

	asJSON, err := yaml.YAMLToJSON(body)
	require.NoError(t, err)
	assertNoDescriptionStrings(t, asJSON)
	assert.Equal(t, len(asJSON), generated.jsonSize, "the reported size is the size of the written object")
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	assert.Contains(t, spec.Properties, "description")

	var object map[string]any
	require.NoError(t, json.Unmarshal(asJSON, &object))
	assert.NotContains(t, object, "status")
	assert.NotContains(t, object["metadata"], "creationTimestamp")

	again, err := generateCRD(testSource, raw)
	require.NoError(t, err)
	assert.Equal(t, generated.content, again.content, "output must be deterministic")

	routes := testSource
	routes.dest = toFilesDir
	inFiles, err := generateCRD(routes, raw)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("files", "widgets.example.com.yaml"), inFiles.relPath)
}

func TestDecodeCRDRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{name: "unknown field", raw: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\nspec: {bogus: 1}\n", wantErr: "unknown field"},
		{name: "not a CRD", raw: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", wantErr: "expected a apiextensions.k8s.io/v1, Kind=CustomResourceDefinition"},
		{name: "old CRD version", raw: "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\n", wantErr: "expected a"},
		{name: "no name", raw: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {}\n", wantErr: "no metadata.name"},
		{name: "not YAML", raw: "{[", wantErr: "decoding CRD"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			_, err := decodeCRD([]byte(test.raw))
			require.Error(t, err)
			assert.Contains(t, err.Error(), test.wantErr)
		})
	}
}

func TestCheckSizesRejectsAHugeCRD(t *testing.T) {
	// Large only because of descriptions: trimming brings it under the budget.
	wordy := map[string]apiextensionsv1.JSONSchemaProps{}
	for i := range 100 {
		wordy[fmt.Sprintf("field%d", i)] = described(strings.Repeat("documentation ", 1000))
	}
	wordyRaw := crdYAML(t, wordy)
	require.Greater(t, len(wordyRaw), maxCRDJSONBytes)
	trimmed, err := generateCRD(testSource, wordyRaw)
	require.NoError(t, err)
	require.NoError(t, checkSizes([]generatedCRD{trimmed}, maxCRDJSONBytes))

	// Large in its schema itself: nothing can save it.
	huge := map[string]apiextensionsv1.JSONSchemaProps{}
	for i := range 2000 {
		huge[fmt.Sprintf("field%04d", i)] = apiextensionsv1.JSONSchemaProps{
			Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"` + strings.Repeat("v", 200) + `"`)}},
		}
	}
	generated, err := generateCRD(testSource, crdYAML(t, huge))
	require.NoError(t, err)
	require.Greater(t, generated.jsonSize, maxCRDJSONBytes)

	small := generatedCRD{name: "small.example.com", jsonSize: 10}
	err = checkSizes([]generatedCRD{small, generated}, maxCRDJSONBytes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("widgets.example.com is %d bytes", generated.jsonSize))
	assert.NotContains(t, err.Error(), "small.example.com")

	atLimit := generatedCRD{name: "edge.example.com", jsonSize: maxCRDJSONBytes}
	assert.NoError(t, checkSizes([]generatedCRD{atLimit}, maxCRDJSONBytes), "the limit itself is allowed")
}

func TestArgoCDSourcesRequireTheExpectedFiles(t *testing.T) {
	writeFiles := func(t *testing.T, names ...string) string {
		moduleDir := t.TempDir()
		crdDir := filepath.Join(moduleDir, filepath.FromSlash(argoCDOperatorCRDDir))
		require.NoError(t, os.MkdirAll(crdDir, 0o755))
		for _, name := range names {
			require.NoError(t, os.WriteFile(filepath.Join(crdDir, name), []byte("x"), 0o644))
		}
		return moduleDir
	}

	t.Run("exact set", func(t *testing.T) {
		sources, err := argoCDSources(writeFiles(t, slices.Concat(expectedArgoCDCRDFiles, []string{"kustomization.yaml"})...))
		require.NoError(t, err)
		require.Len(t, sources, len(expectedArgoCDCRDFiles))
		for _, source := range sources {
			assert.Equal(t, toCRDsDir, source.dest)
			assert.True(t, strings.HasPrefix(source.origin(), "github.com/argoproj-labs/argocd-operator@v0.18.0/config/crd/bases/"), source.origin())
			assert.FileExists(t, source.diskPath)
		}
	})
	t.Run("a new upstream CRD", func(t *testing.T) {
		_, err := argoCDSources(writeFiles(t, slices.Concat(expectedArgoCDCRDFiles, []string{"argoproj.io_newthings.yaml"})...))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "argoproj.io_newthings.yaml")
	})
	for _, missing := range []string{imageUpdaterCRDFile, "argoproj.io_argocds.yaml"} {
		t.Run("upstream dropped "+missing, func(t *testing.T) {
			remaining := slices.DeleteFunc(slices.Clone(expectedArgoCDCRDFiles), func(name string) bool { return name == missing })
			_, err := argoCDSources(writeFiles(t, remaining...))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "review the list")
		})
	}
}

func TestWriteChartFilesRemovesOnlyStaleGeneratedFiles(t *testing.T) {
	chartDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(chartDir, "crds"), 0o755))
	stale := filepath.Join(chartDir, "crds", "gone.example.com.yaml")
	handWritten := filepath.Join(chartDir, "crds", "hand-written.yaml")
	require.NoError(t, os.WriteFile(stale, []byte(generatedHeaderPrefix+"somewhere. DO NOT EDIT.\n"), 0o644))
	require.NoError(t, os.WriteFile(handWritten, []byte("kind: Something\n"), 0o644))

	generated, err := generateCRD(testSource, crdYAML(t, nil))
	require.NoError(t, err)
	require.NoError(t, writeChartFiles(chartDir, []generatedCRD{generated}))

	assert.NoFileExists(t, stale)
	assert.FileExists(t, handWritten)
	written, err := os.ReadFile(filepath.Join(chartDir, generated.relPath))
	require.NoError(t, err)
	assert.Equal(t, generated.content, written)
}

// committedChartDir is the chart in this repository, relative to this package.
var committedChartDir = filepath.Join("..", "..", "manifests", "charts", "gitops-addon-agent")

func TestCommittedFilesAreCurrent(t *testing.T) {
	// Downloads the pinned argocd-operator module through the module proxy when the
	// cache lacks it. An offline failure here is a real failure, not a skip.
	outDir := t.TempDir()
	var report bytes.Buffer
	require.NoError(t, run(outDir, &report), "running the generator")

	for _, dir := range []string{crdsDir, filesDir} {
		fresh, err := generatedFilesIn(filepath.Join(outDir, dir))
		require.NoError(t, err)
		committed, err := generatedFilesIn(filepath.Join(committedChartDir, dir))
		require.NoError(t, err)
		require.Equal(t, baseNames(fresh), baseNames(committed),
			"generated files in %s differ from the committed ones: run `make generate`", dir)

		for _, file := range fresh {
			want, err := os.ReadFile(file)
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(committedChartDir, dir, filepath.Base(file)))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "%s/%s is stale: run `make generate`", dir, filepath.Base(file))
		}
	}

	for _, name := range []string{"argocds.argoproj.io", "applicationsets.argoproj.io", constants.RoutesCRDName} {
		assert.Contains(t, report.String(), name, "the size report names every CRD")
	}
	_, err := os.Stat(filepath.Join(outDir, filesDir, constants.RoutesCRDName+".yaml"))
	assert.NoError(t, err, "the Routes CRD goes to files/, where routes-crd.yaml includes it")
}

func baseNames(paths []string) []string {
	names := make([]string, 0, len(paths))
	for _, path := range paths {
		names = append(names, filepath.Base(path))
	}
	return names
}
