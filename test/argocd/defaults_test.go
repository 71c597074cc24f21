package argocd

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/manifests"
	"github.com/gitops-addon/gitops-addon/test/gosource"
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
	out, err := gosource.StringConstants(path)
	require.NoError(t, err)
	return out
}
