package chart

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/version"
	"github.com/gitops-addon/gitops-addon/test/agentchart"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestReleaseImagesArePinnedToTheChartsAppVersion checks what `helm install` pulls: the
// manager's image and, through --agent-image, every spoke agent's are the release image
// of the chart's appVersion (never :latest), in the repository the release workflow pushes
// to; both charts carry the same version, which `make release-prep` sets and the release
// workflow checks against the tag.
func TestReleaseImagesArePinnedToTheChartsAppVersion(t *testing.T) {
	manager, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"))
	require.NoError(t, err)
	agent := agentchart.Load(t)
	appVersion := manager.Metadata.AppVersion
	require.NotEmpty(t, appVersion)
	assert.Equal(t, manager.Metadata.Version, appVersion, "the manager chart's version is its appVersion")
	assert.Equal(t, appVersion, agent.Metadata.AppVersion, "the agent chart (embedded in the binary) has the manager chart's appVersion")
	assert.Equal(t, appVersion, agent.Metadata.Version, "the agent chart's version is its appVersion")

	release := version.ImageRepository + ":" + appVersion
	objects, err := render(t)
	require.NoError(t, err)
	assert.Equal(t, release, containerImage(t, objects["Deployment/gitops-addon-manager"]), "the manager's image")
	assert.Contains(t, managerArgs(t, objects), "--agent-image="+release, "the spoke agent's image")

	rendered := agentchart.MustRender(t, agentchart.BuiltinValues())
	agentDeployment := agentchart.MustFind(t, rendered, "Deployment", agentchart.InstallNamespace, "gitops-addon-agent")
	assert.Equal(t, release, containerImage(t, agentDeployment),
		"the agent chart's own default, used only outside the hub")
}

// containerImage returns the image of a workload's only container.
func containerImage(t *testing.T, workload *unstructured.Unstructured) string {
	t.Helper()
	require.NotNil(t, workload)
	containers, _, err := unstructured.NestedSlice(workload.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, containers, 1)
	return containers[0].(map[string]any)["image"].(string)
}
