package argocd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/manifests"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestChartDefaultsAreTheShippedOperators: the hub sets the ArgoCD CR's images to the
// chart's argoCD.defaultImage and defaultRedisImage, mirrored, when an image mirror
// applies; they must be what the shipped operator runs by default, or a disconnected
// cluster would run another Argo CD than a connected one.
func TestChartDefaultsAreTheShippedOperators(t *testing.T) {
	raw, err := fs.ReadFile(manifests.ChartFS, manifests.AgentChartDir+"/values.yaml")
	require.NoError(t, err)
	var values struct {
		GitOpsOperator struct {
			Images struct{ Kubernetes string } `json:"images"`
		} `json:"gitopsOperator"`
		ArgoCD struct{ DefaultImage, DefaultRedisImage string } `json:"argoCD"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &values))
	_, version, found := strings.Cut(values.GitOpsOperator.Images.Kubernetes, ":")
	require.True(t, found, "the default operator image has a tag: %s", values.GitOpsOperator.Images.Kubernetes)

	dir, err := testenv.ModuleDir("github.com/argoproj-labs/argocd-operator@" + version)
	require.NoError(t, err)
	constants := stringConstants(t, filepath.Join(dir, "common", "defaults.go"))
	assert.Equal(t, constants["ArgoCDDefaultArgoImage"]+"@"+constants["ArgoCDDefaultArgoVersion"], values.ArgoCD.DefaultImage,
		"argoCD.defaultImage is argocd-operator %s's default", version)
	assert.Equal(t, constants["ArgoCDDefaultRedisImage"]+"@"+constants["ArgoCDDefaultRedisVersion"], values.ArgoCD.DefaultRedisImage,
		"argoCD.defaultRedisImage is argocd-operator %s's default", version)
}

// stringConstants reads the string constants a Go file declares.
func stringConstants(t *testing.T, path string) map[string]string {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	require.NoError(t, err)
	out := map[string]string{}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}
