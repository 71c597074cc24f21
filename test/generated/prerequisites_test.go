package generated

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prerequisitesMarker precedes the one table of what the local fleet and the tests need
// (docs/getting-started.md); every other page links to it.
const prerequisitesMarker = "<!-- prerequisites: checked by TestPrerequisites -->"

// TestPrerequisites: each figure of the prerequisites table equals its source, so that the
// page a newcomer reads first cannot drift from what the build does:
//   - Go: the go directive of go.mod;
//   - the Debian packages: those the Makefile's fleet-env (through argocd-env) and pods-env
//     install, package for package;
//   - the first run's times: the cold rows of docs/testing.md's "Test times", where each has
//     the command that measured it;
//
// and no other user page states a first run's time of its own.
func TestPrerequisites(t *testing.T) {
	root := repoRoot(t)
	rows := prerequisitesRows(t, root)

	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, root, "go.mod"))
	require.NotNil(t, goVersion, "go.mod has a go directive")
	assert.Contains(t, rows["Go"][0], "Go "+goVersion[1]+" or newer", "the prerequisites' Go is go.mod's go %s", goVersion[1])

	makefile := readFile(t, root, "Makefile")
	assert.Equal(t, debianPackages(t, makefile, "argocd-env"), listedPackages(rows["root"][0]),
		"the process fleet's packages (prerequisites, root, first column) are those make fleet-env installs (argocd-env)")
	assert.Equal(t, debianPackages(t, makefile, "pods-packages"), listedPackages(rows["root"][1]),
		"the real-pod packages (prerequisites, root, second column) are those make pods-env installs (its part pods-packages)")

	times := testTimes(t, root)
	assert.Contains(t, rows["first run"][0], times["`make fleet-env`, cold"],
		"the process fleet's first run is docs/testing.md's cold make fleet-env")
	assert.Contains(t, rows["first run"][1], times["`make test`, cold"],
		"make test's first run is docs/testing.md's cold make test")

	firstRunTime := regexp.MustCompile(`(?i)(first run|cold)\b[^.|]{0,60}?\b\d+\s*(to\s+\d+\s*)?(min|minutes)\b`)
	for _, page := range userPages(t, false) {
		if page == "docs/getting-started.md" || page == "docs/testing.md" {
			continue
		}
		if m := firstRunTime.FindString(readFile(t, root, page)); m != "" {
			t.Errorf("%s states a first run's time (%q): link docs/getting-started.md#prerequisites instead", page, m)
		}
	}
}

// prerequisitesRows reads the prerequisites table: its first cell names the row, the two
// others are the process fleet's and the real-pod fleet's (with make test).
func prerequisitesRows(t *testing.T, root string) map[string][]string {
	t.Helper()
	lines := readLines(t, filepath.Join(root, "docs", "getting-started.md"))
	at := slices.Index(lines, prerequisitesMarker)
	require.GreaterOrEqual(t, at, 0, "docs/getting-started.md has the prerequisites table after %q", prerequisitesMarker)
	rows := map[string][]string{}
	for _, line := range lines[at+3:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := tableCells(line)
		require.Len(t, cells, 3, "a prerequisites row has a name and two columns: %s", line)
		rows[cells[0]] = cells[1:]
	}
	for _, name := range []string{"Go", "root", "first run"} {
		require.Contains(t, rows, name, "the prerequisites table has a %q row", name)
	}
	return rows
}

// testTimes are docs/testing.md's "Test times" rows: the suite (its first cell, up to the
// first colon) and the time.
func testTimes(t *testing.T, root string) map[string]string {
	t.Helper()
	times := map[string]string{}
	section := false
	for _, line := range readLines(t, filepath.Join(root, "docs", "testing.md")) {
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Test times"
		case section && strings.HasPrefix(line, "| `make"):
			cells := tableCells(line)
			suite, _, _ := strings.Cut(cells[0], ":")
			figure, _, _ := strings.Cut(cells[1], " (")
			times[suite] = figure
		}
	}
	for _, suite := range []string{"`make fleet-env`, cold", "`make test`, cold"} {
		require.NotEmpty(t, times[suite], "docs/testing.md's Test times has a row %q", suite)
	}
	return times
}

// debianPackages are the packages a Makefile target installs with
// hack/ensure-debian-packages.sh (its COMMAND=PACKAGE arguments), sorted and unique.
func debianPackages(t *testing.T, makefile, target string) []string {
	t.Helper()
	recipe := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:.*\n\thack/ensure-debian-packages\.sh (.*)$`).FindStringSubmatch(makefile)
	require.NotNil(t, recipe, "the Makefile's %s installs Debian packages with hack/ensure-debian-packages.sh", target)
	var packages []string
	for _, pair := range strings.Fields(recipe[1]) {
		_, pkg, ok := strings.Cut(pair, "=")
		require.True(t, ok, "%s: %q is COMMAND=PACKAGE", target, pair)
		packages = append(packages, pkg)
	}
	slices.Sort(packages)
	return slices.Compact(packages)
}

// listedPackages are the packages a prerequisites cell names: the list after "Debian
// packages:" (or "Debian packages are installed:"), up to a ";" or "(".
func listedPackages(cell string) []string {
	list := regexp.MustCompile(`Debian packages(?: are installed)?: ([a-z0-9., -]+?)\s*(?:[;(]|$)`).FindStringSubmatch(cell)
	if list == nil {
		return nil
	}
	var packages []string
	for _, p := range strings.Split(list[1], ",") {
		if p = strings.TrimSpace(p); p != "" {
			packages = append(packages, p)
		}
	}
	slices.Sort(packages)
	return packages
}

func tableCells(line string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func readFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err)
	return string(b)
}
