package repo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const module = "github.com/gitops-addon/gitops-addon/"

// TestLayoutTableIsTheImportOrder: the README's Layout table lists every package of
// cmd/ and pkg/, each above the packages it imports, so the table is the layering a
// reader sees and no package imports one above it.
func TestLayoutTableIsTheImportOrder(t *testing.T) {
	rows := layoutRows(t)
	require.NotEmpty(t, rows, "README.md has a Layout table")
	position := map[string]int{}
	for i, path := range rows {
		position[path] = i
	}
	for pkg, imports := range modulePackages(t) {
		at, listed := position[pkg]
		if !assert.True(t, listed, "%s has no row in README.md's Layout table: add one where it belongs (above what it imports)", pkg) {
			continue
		}
		for _, imported := range imports {
			below, ok := position[imported]
			if ok && below <= at {
				t.Errorf("%s imports %s, which README.md's Layout table lists above it: move a row, or the code", pkg, imported)
			}
		}
	}
}

// TestOfflineCommandsLinkNoControllers: `render` and `doctor` run without a cluster's
// controllers; they must not link them (render once linked the GitOpsCluster reconciler
// for one function, doctor the agent's whole wiring for a scheme).
func TestOfflineCommandsLinkNoControllers(t *testing.T) {
	for pkg, forbidden := range map[string][]string{
		"pkg/render": {"pkg/hub/gitopscluster", "pkg/hub/manager", "pkg/hub/pullmodel", "pkg/hub/pullmodel/reports"},
		"pkg/doctor": {"pkg/spoke/agent", "pkg/spoke/crdinstall", "pkg/spoke/resourcesummary"},
	} {
		deps := goList(t, "-deps", "-f", "{{.ImportPath}}", "./"+pkg)
		for _, f := range forbidden {
			assert.NotContains(t, strings.Fields(deps), module+f, "%s links %s", pkg, f)
		}
	}
}

// layoutRows are the cmd/ and pkg/ paths of the README's Layout table, top to bottom.
func layoutRows(t *testing.T) []string {
	readme, err := os.Open(filepath.Join(testenv.RepoRoot(), "README.md"))
	require.NoError(t, err)
	defer readme.Close()
	var rows []string
	inLayout := false
	scanner := bufio.NewScanner(readme)
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inLayout = line == "## Layout"
		case inLayout && strings.HasPrefix(line, "| `"):
			path := strings.TrimSuffix(strings.SplitN(line, "`", 3)[1], "/")
			if strings.HasPrefix(path, "pkg/") || strings.HasPrefix(path, "cmd/") {
				rows = append(rows, path)
			}
		}
	}
	require.NoError(t, scanner.Err())
	return rows
}

// modulePackages maps each package of cmd/ and pkg/ to the cmd/ and pkg/ packages it
// imports (tests' imports left out: a test may use any package).
func modulePackages(t *testing.T) map[string][]string {
	out := goList(t, "-json", "./cmd/...", "./pkg/...")
	packages := map[string][]string{}
	decoder := json.NewDecoder(strings.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := decoder.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		var imports []string
		for _, imported := range p.Imports {
			if rel, ok := strings.CutPrefix(imported, module); ok {
				imports = append(imports, rel)
			}
		}
		packages[strings.TrimPrefix(p.ImportPath, module)] = imports
	}
	return packages
}

func goList(t *testing.T, args ...string) string {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = testenv.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	return string(out)
}
