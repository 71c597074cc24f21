package chart

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestChartsPassHelmLint runs `helm lint --strict` (Helm's own lint action, the code the
// CLI runs) on both charts: the manager chart users install, and the agent chart the hub
// renders for every cluster, with the values addon-framework always sets.
func TestChartsPassHelmLint(t *testing.T) {
	root := testenv.RepoRoot()
	tests := []struct {
		name   string
		dir    string
		values map[string]any
	}{
		{name: "manager chart", dir: filepath.Join(root, "charts", "gitops-addon")},
		{name: "agent chart", dir: filepath.Join(root, "manifests", "charts", "gitops-addon-agent"), values: map[string]any{
			"clusterName": "cluster1", "addonInstallNamespace": "open-cluster-management-agent-addon",
			"hubKubeConfigSecret": "gitops-addon-hub-kubeconfig",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
			result := lint.Run([]string{tt.dir}, tt.values)
			require.Equal(t, 1, result.TotalChartsLinted)
			var messages []string
			for _, m := range result.Messages {
				if m.Severity > support.InfoSev {
					messages = append(messages, m.Error())
				}
			}
			assert.Empty(t, result.Errors, "helm lint --strict %s", tt.dir)
			assert.Empty(t, messages, "helm lint --strict %s:\n%s", tt.dir, strings.Join(messages, "\n"))
		})
	}
}
