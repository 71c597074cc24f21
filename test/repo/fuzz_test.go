package repo

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

var (
	fuzzFunc    = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	fuzzTargets = regexp.MustCompile(`(?ms)^FUZZ_TARGETS = (.*?[^\\])$`)
)

// TestFuzzTargetsAreListed: every Fuzz function of the module is in the Makefile's
// FUZZ_TARGETS with a number of executions, so `make test` runs it (a fuzz target nothing
// runs finds nothing), and every listed one exists.
func TestFuzzTargetsAreListed(t *testing.T) {
	root := testenv.RepoRoot()
	var found []string
	for _, file := range trackedFiles(t, root) {
		if !strings.HasSuffix(file, "_test.go") {
			continue
		}
		content, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(content), -1) {
			found = append(found, "./"+filepath.Dir(file)+":"+m[1])
		}
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := fuzzTargets.FindStringSubmatch(string(makefile))
	require.NotNil(t, m, "FUZZ_TARGETS in the Makefile")
	var listed []string
	for _, target := range strings.Fields(strings.ReplaceAll(m[1], "\\\n", " ")) {
		parts := strings.Split(target, ":") // package:Function:executions
		require.Len(t, parts, 3, "%s: a fuzz target is package:Function:executions", target)
		assert.Regexp(t, `^[1-9][0-9]*$`, parts[2], "%s: the executions `make test` runs it for", target)
		listed = append(listed, parts[0]+":"+parts[1])
	}
	sort.Strings(found)
	sort.Strings(listed)
	assert.Equal(t, found, listed, "the Makefile's FUZZ_TARGETS and the module's Fuzz functions")
}
