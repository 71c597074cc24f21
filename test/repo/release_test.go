package repo

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// releaseCharts are the charts `make release-prep` sets to the release and `make
// release-check` checks, relative to the repository root.
var releaseCharts = []string{"charts/gitops-addon/Chart.yaml", "manifests/charts/gitops-addon-agent/Chart.yaml"}

// releaseCopy copies what the release targets read (the Makefile, both Chart.yaml,
// CHANGELOG.md) into a temporary directory, so they run there and never change the checkout.
func releaseCopy(t *testing.T) string {
	t.Helper()
	root, dir := testenv.RepoRoot(), t.TempDir()
	for _, name := range append([]string{"Makefile", "CHANGELOG.md"}, releaseCharts...) {
		raw, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), raw, 0o644))
	}
	return dir
}

// runMake runs make in dir with the environment of the test, minus what would change the
// Makefile's variables from outside (a parent make's flags, the variables it reads).
func runMake(t *testing.T, dir string, pathPrefix string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", dir}, args...)...)
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VERSION", "GIT_COMMIT", "CLI_PLATFORMS", "IMAGE", "IMAGE_REPO":
			continue
		case "PATH":
			if pathPrefix != "" {
				kv = "PATH=" + pathPrefix + string(os.PathListSeparator) + value
			}
		}
		cmd.Env = append(cmd.Env, kv)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// changelog is a CHANGELOG.md whose release sections follow the [Unreleased] one.
func changelog(releases string) string {
	return "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- something new\n\n### Upgrade notes\n\n- None yet.\n" + releases
}

// TestReleaseCheckWantsTheChangelogsUpgradeNotes: `make release-check VERSION=vX.Y.Z`,
// which the release workflow runs on the tag, fails unless CHANGELOG.md has a `## [X.Y.Z]`
// section holding an `### Upgrade notes` subsection with text, and passes with one.
func TestReleaseCheckWantsTheChangelogsUpgradeNotes(t *testing.T) {
	for _, c := range []struct {
		name, releases string
		pass           bool
	}{
		{name: "only [Unreleased]", releases: ""},
		{name: "the section without upgrade notes", releases: "\n## [1.2.3] - 2030-01-02\n\n### Added\n\n- a feature\n"},
		{name: "empty upgrade notes", releases: "\n## [1.2.3] - 2030-01-02\n\n### Upgrade notes\n\n### Added\n\n- a feature\n"},
		{name: "the notes of another release", releases: "\n## [1.2.3] - 2030-01-02\n\n### Added\n\n- a feature\n\n" +
			"## [1.2.2] - 2030-01-01\n\n### Upgrade notes\n\n- None.\n"},
		{name: "a release whose version starts alike", releases: "\n## [1.2.30] - 2030-01-02\n\n### Upgrade notes\n\n- None.\n"},
		{name: "the section with upgrade notes", releases: "\n## [1.2.3] - 2030-01-02\n\n### Added\n\n- a feature\n\n" +
			"### Upgrade notes\n\n- Pass --new-flag.\n\n## [1.2.2] - 2030-01-01\n\n### Upgrade notes\n\n- None.\n", pass: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := releaseCopy(t)
			out, err := runMake(t, dir, "", "release-prep", "VERSION=v1.2.3")
			require.NoError(t, err, out)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(changelog(c.releases)), 0o644))
			out, err = runMake(t, dir, "", "release-check", "VERSION=v1.2.3")
			assert.Contains(t, out, "both charts are at 1.2.3")
			if c.pass {
				assert.NoError(t, err, out)
				assert.Contains(t, out, "CHANGELOG.md has the upgrade notes of 1.2.3")
				return
			}
			assert.Error(t, err, "release-check passed:\n%s", out)
			assert.Contains(t, out, "CHANGELOG.md has no [1.2.3] section with a non-empty `### Upgrade notes`")
		})
	}
}

// TestReleasePrepSaysToMoveUnreleased: `make release-prep` sets both charts to the release
// and, while CHANGELOG.md has no section for it, tells the releaser to move [Unreleased]
// into one with upgrade notes; the charts alone do not pass release-check.
func TestReleasePrepSaysToMoveUnreleased(t *testing.T) {
	dir := releaseCopy(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(changelog("")), 0o644))
	out, err := runMake(t, dir, "", "release-prep", "VERSION=v2.0.0")
	require.NoError(t, err, out)
	for _, chart := range releaseCharts {
		raw, err := os.ReadFile(filepath.Join(dir, chart))
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^version: 2\.0\.0$`, string(raw), chart)
		assert.Regexp(t, `(?m)^appVersion: "2\.0\.0"$`, string(raw), chart)
	}
	assert.Contains(t, out, "move the entries of `## [Unreleased]` into a new `## [2.0.0] - YYYY-MM-DD` section")
	assert.Contains(t, out, "`### Upgrade notes`")
	out, err = runMake(t, dir, "", "release-check", "VERSION=v2.0.0")
	assert.Error(t, err, "release-check passed without the CHANGELOG section:\n%s", out)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "CHANGELOG.md"),
		[]byte(changelog("\n## [2.0.0] - 2030-01-02\n\n### Upgrade notes\n\n- None.\n")), 0o644))
	out, err = runMake(t, dir, "", "release-prep", "VERSION=v2.0.0")
	require.NoError(t, err, out)
	assert.Contains(t, out, "CHANGELOG.md has its [2.0.0] section with upgrade notes")
	out, err = runMake(t, dir, "", "release-check", "VERSION=v2.0.0")
	assert.NoError(t, err, out)
}

var changelogRelease = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+[^\]]*)\]`)

// TestChangelogHasUpgradeNotesForEveryRelease: CHANGELOG.md keeps an [Unreleased] section,
// and `make release-check` passes the notes of every release it lists (with the charts set
// to that release in a temporary copy), so no release section lacks its upgrade notes.
func TestChangelogHasUpgradeNotesForEveryRelease(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "CHANGELOG.md"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^## \[Unreleased\]$`, string(raw), "CHANGELOG.md keeps an [Unreleased] section for what the next release brings")
	for _, m := range changelogRelease.FindAllStringSubmatch(string(raw), -1) {
		dir := releaseCopy(t)
		out, err := runMake(t, dir, "", "release-prep", "VERSION=v"+m[1])
		require.NoError(t, err, out)
		out, err = runMake(t, dir, "", "release-check", "VERSION=v"+m[1])
		assert.NoError(t, err, "CHANGELOG.md's [%s]: %s", m[1], out)
	}
}

// fakeGo is a `go` command that writes, instead of a binary, the environment and the
// arguments it was called with into the file named by -o.
const fakeGo = `#!/usr/bin/env bash
out=""; prev=""
for a in "$@"; do [[ $prev == -o ]] && out=$a; prev=$a; done
[[ -n $out ]] || { echo "fake go: no -o in: $*" >&2; exit 1; }
printf 'CGO_ENABLED=%s GOOS=%s GOARCH=%s go %s\n' "$CGO_ENABLED" "$GOOS" "$GOARCH" "$*" > "$out"
`

// TestCLIDistBuildsEveryPlatformAsMakeBuildDoes: `make cli-dist VERSION=vX.Y.Z`, which the
// release workflow runs, builds the CLI for linux and darwin, amd64 and arm64, each as
// `make build` does (CGO_ENABLED=0, -trimpath, the same -ldflags: version and commit) into
// dist/gitops-addon-X.Y.Z-<os>-<arch>, and writes dist/SHA256SUMS of exactly those files. A
// `go` that records its calls stands in for the compiler.
func TestCLIDistBuildsEveryPlatformAsMakeBuildDoes(t *testing.T) {
	dir, stub := releaseCopy(t), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(stub, "go"), []byte(fakeGo), 0o755))

	out, err := runMake(t, dir, stub, "-n", "build", "VERSION=v1.2.3", "GIT_COMMIT=abc1234")
	require.NoError(t, err, out)
	ldflags := regexp.MustCompile(`-ldflags "([^"]*)"`).FindStringSubmatch(out)
	require.NotNil(t, ldflags, "make build's command: %s", out)
	assert.Contains(t, ldflags[1], "pkg/version.Version=v1.2.3")
	assert.Contains(t, ldflags[1], "pkg/version.GitCommit=abc1234")

	out, err = runMake(t, dir, stub, "cli-dist", "VERSION=v1.2.3", "GIT_COMMIT=abc1234")
	require.NoError(t, err, out)
	var sums []string
	for _, platform := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"} {
		goos, goarch, _ := strings.Cut(platform, "/")
		name := "gitops-addon-1.2.3-" + goos + "-" + goarch
		built, err := os.ReadFile(filepath.Join(dir, "dist", name))
		if !assert.NoError(t, err, "make cli-dist built no %s", name) {
			continue
		}
		assert.Equal(t, "CGO_ENABLED=0 GOOS="+goos+" GOARCH="+goarch+" go build -trimpath -ldflags "+ldflags[1]+
			" -o dist/"+name+" ./cmd/gitops-addon\n", string(built), name)
		sum := sha256.Sum256(built)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+name)
	}
	written, err := os.ReadFile(filepath.Join(dir, "dist", "SHA256SUMS"))
	require.NoError(t, err)
	assert.Equal(t, strings.Join(sums, "\n")+"\n", string(written), "dist/SHA256SUMS")
}

// TestReleaseWorkflowPublishesTheCLI: the release workflow builds the CLI with `make
// cli-dist` (no build logic of its own), signs every file it attaches with `cosign
// sign-blob` into a Sigstore bundle, runs release-check on the tag, and attaches the CLI,
// the bundles and SHA256SUMS to the GitHub release.
func TestReleaseWorkflowPublishesTheCLI(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), ".github", "workflows", "release.yaml"))
	require.NoError(t, err)
	workflow := string(raw)
	assert.Contains(t, workflow, `make release-check VERSION="${GITHUB_REF_NAME}"`)
	assert.Contains(t, workflow, `make cli-dist VERSION="${GITHUB_REF_NAME}"`)
	assert.NotRegexp(t, `\bgo (build|install)\b`, workflow, "the workflow builds through make targets only")
	assert.Contains(t, workflow, `for file in gitops-addon-"${VERSION}"-*-* SHA256SUMS; do`)
	assert.Contains(t, workflow, `cosign sign-blob --yes --new-bundle-format --bundle "${file}.sigstore.json" "${file}"`)
	_, create, found := strings.Cut(workflow, "gh release create ")
	require.True(t, found, "the workflow creates the GitHub release with gh release create")
	var command []string
	for _, line := range strings.Split(create, "\n") {
		command = append(command, strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), "\\"))...)
		if !strings.HasSuffix(strings.TrimSpace(line), "\\") {
			break
		}
	}
	for _, asset := range []string{`dist/gitops-addon-"${VERSION}"-linux-*`, `dist/gitops-addon-"${VERSION}"-darwin-*`,
		"dist/SHA256SUMS", "dist/SHA256SUMS.sigstore.json"} {
		assert.Contains(t, command, asset, "gh release create attaches %s", asset)
	}
}
