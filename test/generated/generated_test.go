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

// TestAPIGeneratedFilesAreCurrent regenerates, into a temporary directory, the deepcopy
// functions of every API package and every CRD of the manager chart (the GitOpsCluster
// and the MulticlusterApplicationSetReport), and compares them with the committed files:
// each generated file must be committed, and no committed CRD may lack a generator.
func TestAPIGeneratedFilesAreCurrent(t *testing.T) {
	root := repoRoot(t)
	controllerGen := filepath.Join(root, "bin", "controller-gen")
	if _, err := os.Stat(controllerGen); err != nil {
		t.Fatalf("%s is missing: run `make controller-gen` (make verify does)", controllerGen)
	}
	out := t.TempDir()
	apiPackages, err := filepath.Glob(filepath.Join(root, "pkg", "api", "v*"))
	require.NoError(t, err)
	require.NotEmpty(t, apiPackages)

	// One controller-gen run per package: with several packages, output:object:dir
	// would write every package's zz_generated.deepcopy.go to the same file.
	compared := map[string]string{}
	for _, dir := range apiPackages {
		version := filepath.Base(dir)
		runControllerGen(t, root, controllerGen, "object:headerFile=hack/boilerplate.go.txt",
			"paths=./pkg/api/"+version, "output:object:dir="+filepath.Join(out, version))
		compared[filepath.Join(dir, "zz_generated.deepcopy.go")] = filepath.Join(out, version, "zz_generated.deepcopy.go")
	}
	runControllerGen(t, root, controllerGen, "crd", "paths=./pkg/api/...", "output:crd:dir="+filepath.Join(out, "crd"))

	crdDir := filepath.Join(root, "charts", "gitops-addon", "crds")
	generatedCRDs, err := filepath.Glob(filepath.Join(out, "crd", "*.yaml"))
	require.NoError(t, err)
	committedCRDs, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, generatedCRDs, 2, "the GitOpsCluster and MulticlusterApplicationSetReport CRDs")
	require.Len(t, committedCRDs, len(generatedCRDs), "%s holds exactly the generated CRDs", crdDir)
	for _, generated := range generatedCRDs {
		compared[filepath.Join(crdDir, filepath.Base(generated))] = generated
	}

	for committed, generated := range compared {
		want, err := os.ReadFile(generated)
		require.NoError(t, err)
		got, err := os.ReadFile(committed)
		require.NoError(t, err, "%s is not committed: run `make generate manifests` and commit the result", committed)
		require.Equal(t, string(want), string(got), "%s is stale: run `make generate manifests` and commit the result", committed)
	}
}

// runControllerGen runs controller-gen in the repository root with args.
func runControllerGen(t *testing.T, root, controllerGen string, args ...string) {
	t.Helper()
	cmd := exec.Command(controllerGen, args...)
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "controller-gen %v: %s", args, output)
}
