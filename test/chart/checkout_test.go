package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// checkoutTag stands for the tag the docs compute with a command ($(git rev-parse ...)).
const checkoutTag = "dev-0123abc"

var (
	shellVariable = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	realPodsSet   = regexp.MustCompile(`"--set", "([A-Za-z0-9_.]+)=`)
)

// TestInstallFromACheckoutPointsTheChartAtTheBuiltImage: the commands of "From a checkout"
// in docs/operations/install.md build, push and install one image: `make image IMAGE=X`,
// a push of X, and a helm install whose --set values make X the manager's image and,
// through --agent-image, every spoke agent's. The values it sets are ones TestRealPods
// sets when it installs the chart with the helm CLI (test/realpods), which the block's
// marker names.
func TestInstallFromACheckoutPointsTheChartAtTheBuiltImage(t *testing.T) {
	root := testenv.RepoRoot()
	marker, block := docsShellBlock(t, filepath.Join(root, "docs", "operations", "install.md"), "## From a checkout")
	assert.Contains(t, marker, "TestRealPods", "the block's marker names the test that installs the chart as it says")

	vars := map[string]string{}
	var commands []string
	for _, line := range joinContinuations(block) {
		line = strings.TrimSpace(strings.SplitN(line, " #", 2)[0])
		if m := regexp.MustCompile(`^([A-Z_]+)=(.+)$`).FindStringSubmatch(line); m != nil {
			vars[m[1]] = expand(m[2], vars)
			if strings.Contains(m[2], "$(") {
				vars[m[1]] = checkoutTag
			}
			continue
		}
		commands = append(commands, expand(line, vars))
	}

	var built, pushed, helmInstall string
	for _, c := range commands {
		fields := strings.Fields(c)
		switch {
		case strings.HasPrefix(c, "make image "):
			for _, f := range fields {
				if v, ok := strings.CutPrefix(f, "IMAGE="); ok {
					built = v
				}
			}
		case len(fields) == 3 && fields[1] == "push":
			pushed = fields[2]
		case strings.HasPrefix(c, "helm install "):
			helmInstall = c
		}
	}
	require.NotEmpty(t, built, "the block builds the image with make image IMAGE=...:\n%s", block)
	assert.Equal(t, built, pushed, "the block pushes the image it built")
	require.NotEmpty(t, helmInstall, "the block installs the chart with helm install")

	sets := regexp.MustCompile(`--set (\S+)`).FindAllStringSubmatch(helmInstall, -1)
	require.NotEmpty(t, sets, "the helm install sets the image")
	realPods, err := os.ReadFile(filepath.Join(root, "test", "realpods", "realpods.go"))
	require.NoError(t, err)
	setByRealPods := map[string]bool{}
	for _, m := range realPodsSet.FindAllStringSubmatch(string(realPods), -1) {
		setByRealPods[m[1]] = true
	}
	require.True(t, setByRealPods["image.repository"] && setByRealPods["image.tag"], "TestRealPods' helm install sets the image: %v", setByRealPods)
	var values []string
	for _, s := range sets {
		for _, kv := range strings.Split(s[1], ",") {
			key, _, _ := strings.Cut(kv, "=")
			assert.True(t, setByRealPods[key], "the docs set %s, which TestRealPods' helm install does not: it would run untested", key)
			values = append(values, kv)
		}
	}

	objects, err := render(t, values...)
	require.NoError(t, err)
	assert.Equal(t, built, containerImage(t, objects["Deployment/gitops-addon-manager"]), "the manager runs the image built and pushed")
	assert.Contains(t, managerArgs(t, objects), "--agent-image="+built, "every spoke's agent runs it too")
}

// docsShellBlock returns the first shell block under heading in a Markdown page, without
// its quotes, and the marker line above it.
func docsShellBlock(t *testing.T, page, heading string) (marker string, block string) {
	t.Helper()
	raw, err := os.ReadFile(page)
	require.NoError(t, err)
	_, section, found := strings.Cut(string(raw), "\n"+heading+"\n")
	require.True(t, found, "%s has no heading %q", page, heading)
	section, _, _ = strings.Cut(section, "\n## ")
	before, rest, found := strings.Cut(section, "```sh\n")
	require.True(t, found, "%s: no shell block under %q", page, heading)
	block, _, found = strings.Cut(rest, "\n```")
	require.True(t, found)
	lines := strings.Split(strings.TrimSpace(before), "\n")
	return lines[len(lines)-1], block
}

// joinContinuations joins the lines a trailing backslash continues.
func joinContinuations(block string) []string {
	var lines []string
	current := ""
	for _, line := range strings.Split(block, "\n") {
		if strings.HasSuffix(line, "\\") {
			current += strings.TrimSuffix(line, "\\")
			continue
		}
		lines = append(lines, current+line)
		current = ""
	}
	return lines
}

// expand replaces $NAME and ${NAME} with their values and drops double quotes.
func expand(s string, vars map[string]string) string {
	s = shellVariable.ReplaceAllStringFunc(s, func(v string) string {
		name := shellVariable.FindStringSubmatch(v)[1]
		if value, ok := vars[name]; ok {
			return value
		}
		return v
	})
	return strings.ReplaceAll(s, `"`, "")
}
