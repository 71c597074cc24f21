// Package generated checks that the files `make generate manifests` writes are current.
package generated

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		require.NotEqual(t, dir, filepath.Dir(dir), "no go.mod above the test")
	}
}

// TestAPIGeneratedFilesAreCurrent regenerates the deepcopy functions and the GitOpsCluster
// CRD into a temporary directory and compares them with the committed files.
func TestAPIGeneratedFilesAreCurrent(t *testing.T) {
	root := repoRoot(t)
	controllerGen := filepath.Join(root, "bin", "controller-gen")
	if _, err := os.Stat(controllerGen); err != nil {
		t.Fatalf("%s is missing: run `make controller-gen` (make test does)", controllerGen)
	}
	out := t.TempDir()
	cmd := exec.Command(controllerGen,
		"object:headerFile=hack/boilerplate.go.txt", "paths=./pkg/api/...", "output:object:dir="+out,
		"crd", "paths=./pkg/api/...", "output:crd:dir="+filepath.Join(out, "crd"))
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "controller-gen: %s", output)

	for generated, committed := range map[string]string{
		filepath.Join(out, "zz_generated.deepcopy.go"):                                   filepath.Join(root, "pkg", "api", "v1beta1", "zz_generated.deepcopy.go"),
		filepath.Join(out, "crd", "apps.open-cluster-management.io_gitopsclusters.yaml"): filepath.Join(root, "charts", "gitops-addon", "crds", "apps.open-cluster-management.io_gitopsclusters.yaml"),
	} {
		want, err := os.ReadFile(generated)
		require.NoError(t, err)
		got, err := os.ReadFile(committed)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s is stale: run `make generate manifests` and commit the result", committed)
	}
}
