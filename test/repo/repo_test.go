// Package repo checks what the repository tracks: source, not build outputs. A 112 MB
// binary once got in through `git add -A`; these tests keep the next one out.
package repo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/semver"

	"github.com/gitops-addon/gitops-addon/pkg/compat"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// maxFileSize is the size above which a tracked file is taken for a build output.
const maxFileSize = 2 << 20

// generatedLarge are the only files allowed past maxFileSize: the upstream CRDs that
// hack/crdgen writes whole (descriptions included) for the spoke agent to install. They
// are still text, and crdgen bounds each by etcd's request size limit.
var generatedLarge = map[string]bool{
	"pkg/spoke/crdinstall/crds/applications.argoproj.io.yaml":    true,
	"pkg/spoke/crdinstall/crds/applicationsets.argoproj.io.yaml": true,
	"pkg/spoke/crdinstall/crds/appprojects.argoproj.io.yaml":     true,
	"pkg/spoke/crdinstall/crds/argocds.argoproj.io.yaml":         true,
}

// trackedFiles lists the files git tracks, relative to the repository root.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "git ls-files in %s: the repository tests need a git checkout", root)
	return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
}

// docImages is where the docs' pictures live: a PNG there, within maxDocImage, is a page's
// illustration (a screenshot a test took), not a build output.
const (
	docImages   = "docs/images/"
	maxDocImage = 512 << 10
)

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// problem says what is wrong with a tracked file, or "" when nothing is.
func problem(path string, content []byte) string {
	switch {
	case strings.HasPrefix(path, docImages) && bytes.HasPrefix(content, pngMagic) && len(content) <= maxDocImage:
		return ""
	case len(content) > maxFileSize && !generatedLarge[path]:
		return fmt.Sprintf("%s is %d bytes, over %d: a build output? `git rm --cached` it and ignore it in .gitignore", path, len(content), maxFileSize)
	case isBinary(content):
		return fmt.Sprintf("%s is binary: build outputs do not belong in the repository; `git rm --cached` it and ignore it in .gitignore", path)
	}
	return ""
}

// isBinary tells binary from text as git does: a NUL byte in the first 8,000 bytes.
func isBinary(content []byte) bool {
	return bytes.IndexByte(content[:min(len(content), 8000)], 0) >= 0
}

func TestNoTrackedFileIsABuildOutput(t *testing.T) {
	root := testenv.RepoRoot()
	files := trackedFiles(t, root)
	require.NotEmpty(t, files)
	for _, path := range files {
		content, err := os.ReadFile(filepath.Join(root, path))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		require.NoError(t, err)
		assert.Empty(t, problem(path, content))
	}
	for path := range generatedLarge {
		_, err := os.Stat(filepath.Join(root, path))
		assert.NoError(t, err, "%s is named as a generated large file but does not exist: update generatedLarge", path)
	}
}

func TestBuildOutputsAreRecognised(t *testing.T) {
	elf := append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0}, bytes.Repeat([]byte("x"), 100)...)
	tests := []struct {
		name    string
		path    string
		content []byte
		want    string
	}{
		{"a Go binary at the root", "demo", elf, "demo is binary"},
		{"a large text file", "docs/huge.md", bytes.Repeat([]byte("a"), maxFileSize+1), "docs/huge.md is 2097153 bytes"},
		{"a generated CRD past the size", "pkg/spoke/crdinstall/crds/argocds.argoproj.io.yaml", bytes.Repeat([]byte("a"), maxFileSize+1), ""},
		{"a generated CRD that is binary", "pkg/spoke/crdinstall/crds/argocds.argoproj.io.yaml", elf, "is binary"},
		{"source", "pkg/version/version.go", []byte("package version\n"), ""},
		{"a docs screenshot", "docs/images/hub-ui.png", append([]byte("\x89PNG\r\n\x1a\n\x00"), bytes.Repeat([]byte("x"), 100)...), ""},
		{"a PNG elsewhere", "test/shot.png", append([]byte("\x89PNG\r\n\x1a\n\x00"), bytes.Repeat([]byte("x"), 100)...), "is binary"},
		{"a binary posing as a docs image", "docs/images/demo.png", elf, "is binary"},
		{"a docs image past its size", "docs/images/huge.png", append([]byte("\x89PNG\r\n\x1a\n\x00"), bytes.Repeat([]byte("x"), maxDocImage)...), "is binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problem(tt.path, tt.content)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
		})
	}
}

// TestBuildOutputsAreIgnored checks that what the Makefile and `go build` write in the
// work tree is ignored, so that `git add -A` cannot pick it up.
func TestBuildOutputsAreIgnored(t *testing.T) {
	root := testenv.RepoRoot()
	for _, path := range []string{"bin/gitops-addon", "demo", "gitops-addon", "dist/gitops-addon-0.1.0.tgz", "pkg/hub/addon/addon.test", "cover.out"} {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", path)
		cmd.Dir = root
		assert.NoError(t, cmd.Run(), "%s is not ignored by .gitignore", path)
	}
}

// TestOldestKubeVersionIsOneValue: the Makefile builds the oldest supported kube-apiserver
// and exports its version; outside make the integration tests use testenv's default.
// Both must name the same release, or a test run outside make looks for a binary make
// never built.
func TestOldestKubeVersionIsOneValue(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "Makefile"))
	require.NoError(t, err)
	assert.Contains(t, string(makefile), "\nOLDEST_KUBE_VERSION ?= "+testenv.DefaultOldestKubeVersion+"\n",
		"the Makefile's OLDEST_KUBE_VERSION must equal testenv.DefaultOldestKubeVersion")
}

// TestCompatibilityIsOneStatement: the versions pkg/compat declares are the ones the
// Makefile builds and tests (its newest and oldest Kubernetes, the releases between them
// for make test-compat, the Argo CD it builds), the manager chart's kubeVersion, the agent
// chart's check for ValidatingAdmissionPolicy v1, testenv's default oldest release and
// the rows of docs/operations/compatibility.md.
func TestCompatibilityIsOneStatement(t *testing.T) {
	root := testenv.RepoRoot()
	read := func(path ...string) string {
		raw, err := os.ReadFile(filepath.Join(append([]string{root}, path...)...))
		require.NoError(t, err)
		return string(raw)
	}
	makefile := read("Makefile")
	makeVar := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(.+)$`).FindStringSubmatch(makefile)
		require.NotNil(t, m, "the Makefile sets %s", name)
		return strings.TrimSpace(m[1])
	}
	minor := func(version string) string {
		parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
		require.Len(t, parts, 3, version)
		return parts[0] + "." + parts[1]
	}
	newest, oldest := makeVar("KUBE_VERSION"), makeVar("OLDEST_KUBE_VERSION")
	assert.Equal(t, compat.KubernetesNewest, minor(newest), "the Makefile's KUBE_VERSION is the newest supported Kubernetes")
	assert.Equal(t, compat.KubernetesOldest, minor(oldest), "the Makefile's OLDEST_KUBE_VERSION is the oldest supported Kubernetes")
	assert.Equal(t, testenv.DefaultOldestKubeVersion, oldest, "testenv's default oldest release")
	between := strings.Fields(makeVar("COMPAT_KUBE_VERSIONS"))
	for _, v := range between {
		assert.True(t, semver.Compare("v"+compat.KubernetesOldest, "v"+minor(v)) < 0 && semver.Compare("v"+minor(v), "v"+compat.KubernetesNewest) < 0,
			"COMPAT_KUBE_VERSIONS' %s lies between the oldest and the newest", v)
	}
	assert.Equal(t, compat.HubArgoCD[len(compat.HubArgoCD)-1], makeVar("ARGOCD_VERSION"), "the last hub Argo CD of pkg/compat is the one the fleet builds")
	assert.Equal(t, compat.OCMOldest, minor(makeVar("OCM_VERSION")), "the end-to-end fleet runs the oldest supported OCM")
	assert.Equal(t, compat.OCMOldest, minor(makeVar("OLDEST_OCM_API_VERSION")), "make test-oldest gives the tests the oldest supported OCM's CRDs")

	assert.Contains(t, read("charts", "gitops-addon", "Chart.yaml"), "\nkubeVersion: \">="+compat.KubernetesOldest+".0-0\"\n",
		"the manager chart's kubeVersion refuses what is older than the oldest supported Kubernetes")
	assert.Contains(t, read("manifests", "charts", "gitops-addon-agent", "templates", "_helpers.tpl"),
		`semverCompare ">=`+compat.ValidatingAdmissionPolicyV1+`.0-0"`, "the agent chart renders its admission policies from compat.ValidatingAdmissionPolicyV1")

	page := read("docs", "operations", "compatibility.md")
	for _, row := range []string{
		"| Kubernetes, hub (manager, its chart and CRDs) | " + compat.KubernetesOldest + " (`" + oldest + "`) | " + compat.KubernetesNewest + " (`" + newest + "`) |",
		"| Kubernetes, spoke (agent, GitOps operator, Argo CD) | " + compat.KubernetesOldest + " (`" + oldest + "`) | " + compat.KubernetesNewest + " (`" + newest + "`) |",
		"| Kubernetes between | `" + strings.Join(between, "`, `") + "` |",
		"| OpenShift | " + compat.OpenShiftOldest + " |",
		"| hub Argo CD: the Application, ApplicationSet and AppProject CRDs | " + minor(compat.HubArgoCD[0]) + " (`" + compat.HubArgoCD[0] + "`) | " +
			minor(compat.HubArgoCD[len(compat.HubArgoCD)-1]) + " (`" + compat.HubArgoCD[len(compat.HubArgoCD)-1] + "`) |",
		"`TestPullModelOnEachHubArgoCD` on `" + strings.Join(compat.HubArgoCD[:len(compat.HubArgoCD)-1], "`, `") + "` and `" + compat.HubArgoCD[len(compat.HubArgoCD)-1] + "`",
		"| OCM hub | " + compat.OCMOldest + " (`" + makeVar("OCM_VERSION") + "`, API `" + makeVar("OLDEST_OCM_API_VERSION") + "`) |",
		"| cluster-proxy `" + makeVar("CLUSTER_PROXY_VERSION") + "`, managed-serviceaccount `" + makeVar("MANAGED_SERVICEACCOUNT_VERSION") + "` |",
	} {
		assert.True(t, strings.Contains(page, row), "docs/operations/compatibility.md has no line with %q", row)
	}
	install := read("docs", "operations", "install.md")
	assert.True(t, strings.Contains(install, "Kubernetes "+compat.KubernetesOldest+" to "+compat.KubernetesNewest),
		"docs/operations/install.md states the range %s to %s", compat.KubernetesOldest, compat.KubernetesNewest)
	assert.True(t, strings.Contains(install, "(compatibility.md)"), "docs/operations/install.md links the compatibility page")
}
