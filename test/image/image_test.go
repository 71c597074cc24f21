// Package image builds the repository's Dockerfile for real, with buildah and no
// registry, and checks what users get: the build context (.dockerignore) holds every file
// the builder compiles, the image runs as a non-root user, and it carries the version.
//
// No registry is reachable here, so each FROM image is a local stand-in with the exact
// name the Dockerfile uses: golang:1.26 is this machine's Go toolchain with busybox for
// /bin/sh, distroless/static:nonroot a passwd file with the nonroot user and a CA bundle.
// The Dockerfile itself is used as it is: the file users build is the file we test.
package image

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const (
	// builderImage and baseImage are the FROM names of the Dockerfile, as buildah resolves them.
	builderImage = "docker.io/library/golang:1.26"
	baseImage    = "gcr.io/distroless/static:nonroot"
	// builtImage is the name the test gives the image it builds.
	builtImage = "localhost/gitops-addon:image-check"
	// testVersion and testCommit are passed as build arguments and must come out of the image.
	testVersion = "v9.9.9-image-check"
	testCommit  = "0123abc"
	// caBundle is Debian's CA bundle, present on every machine with ca-certificates.
	caBundle = "/etc/ssl/certs/ca-certificates.crt"
)

// buildah runs buildah on the test's own storage, so that nothing lands in the
// machine's /var/lib/containers and teardown can remove everything.
type buildah struct {
	t       *testing.T
	storage string
	env     []string
}

func newBuildah(t *testing.T) *buildah {
	t.Helper()
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Fatalf("buildah is missing: `make verify` installs it (Debian package buildah); %v", err)
	}
	dir := t.TempDir()
	storage := filepath.Join(dir, "storage")
	conf := filepath.Join(dir, "storage.conf")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil,
		"[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n", storage, filepath.Join(dir, "run")), 0o600))
	b := &buildah{t: t, storage: storage, env: append(os.Environ(),
		"CONTAINERS_STORAGE_CONF="+conf,
		// The containers' registries.conf is not read for anything: every image is local.
		"BUILDAH_ISOLATION=chroot")}
	t.Cleanup(b.teardown)
	return b
}

// run runs buildah with args and returns its standard output.
func (b *buildah) run(args ...string) string {
	b.t.Helper()
	cmd := exec.Command("buildah", args...)
	cmd.Env = b.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(b.t, err, "buildah %s: %s", strings.Join(args, " "), stderr.String())
	return strings.TrimSpace(string(out))
}

// teardown removes every container and image of the test's storage and checks that no
// mount is left under it.
func (b *buildah) teardown() {
	for _, args := range [][]string{{"rm", "--all"}, {"rmi", "--all", "--force"}} {
		cmd := exec.Command("buildah", args...)
		cmd.Env = b.env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.t.Errorf("buildah %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// containers/storage keeps its overlay directory mounted on itself (private).
	_ = exec.Command("umount", "-R", filepath.Join(b.storage, "overlay")).Run()
	mounts, err := os.ReadFile("/proc/self/mounts")
	require.NoError(b.t, err)
	for _, line := range strings.Split(string(mounts), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && strings.HasPrefix(fields[1], b.storage) {
			b.t.Errorf("a mount is left after teardown: %s", line)
		}
	}
}

// standIn commits a scratch image named name holding files (host path -> image path),
// with the environment env.
func (b *buildah) standIn(name string, files map[string]string, env []string, dirs ...string) {
	b.t.Helper()
	ctr := b.run("from", "scratch")
	root := b.run("mount", ctr)
	for _, dir := range dirs {
		require.NoError(b.t, os.MkdirAll(filepath.Join(root, dir), 0o755))
	}
	for from, to := range files {
		require.NoError(b.t, os.MkdirAll(filepath.Dir(filepath.Join(root, to)), 0o755))
		out, err := exec.Command("cp", "-a", from, filepath.Join(root, to)).CombinedOutput()
		require.NoError(b.t, err, "copying %s into %s: %s", from, name, out)
	}
	b.run("umount", ctr)
	args := []string{"config"}
	for _, e := range env {
		args = append(args, "--env", e)
	}
	b.run(append(args, ctr)...)
	b.run("commit", "--quiet", ctr, name)
	b.run("rm", ctr)
}

// builderStandIn is golang:1.26: this machine's Go toolchain, busybox as /bin/sh.
func (b *buildah) builderStandIn() {
	b.t.Helper()
	goroot := strings.TrimSpace(goEnv(b.t, "GOROOT"))
	busybox, err := exec.LookPath("busybox")
	require.NoError(b.t, err, "busybox-static is missing: `make verify` installs it")
	b.standIn(builderImage, map[string]string{
		goroot:   "/usr/local/go",
		busybox:  "/bin/busybox",
		caBundle: caBundle,
	}, []string{
		"PATH=/usr/local/go/bin:/go/bin:/bin",
		"GOPATH=/go",
		"GOTOOLCHAIN=local",
		"GOPROXY=" + goEnv(b.t, "GOPROXY"),
		"HOME=/root",
	}, "/tmp", "/root", "/go")
	// busybox provides sh and the few commands a RUN line may use.
	ctr := b.run("from", "--pull=never", builderImage)
	b.run("run", "--isolation", "chroot", ctr, "--", "/bin/busybox", "--install", "-s", "/bin")
	b.run("commit", "--quiet", ctr, builderImage)
	b.run("rm", ctr)
}

// baseStandIn is distroless/static:nonroot: root and nonroot (65532) users, a CA bundle.
func (b *buildah) baseStandIn(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	group := filepath.Join(dir, "group")
	require.NoError(t, os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), 0o644))
	require.NoError(t, os.WriteFile(group, []byte("root:x:0:\nnonroot:x:65532:\n"), 0o644))
	b.standIn(baseImage, map[string]string{passwd: "/etc/passwd", group: "/etc/group", caBundle: caBundle},
		[]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, "/tmp", "/home/nonroot")
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// imageConfig is the part of `buildah inspect` the test reads.
type imageConfig struct {
	OCIv1 struct {
		Architecture string `json:"architecture"`
		Config       struct {
			User       string            `json:"User"`
			Entrypoint []string          `json:"Entrypoint"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
	} `json:"OCIv1"`
}

func TestDockerfileBuildsTheImageUsersGet(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the image check needs root (buildah with chroot isolation and overlay storage); CI runs as root")
		}
		t.Skip("NOT RUN: the image check needs root (buildah with chroot isolation and overlay storage); run `sudo make verify`")
	}
	root := testenv.RepoRoot()
	b := newBuildah(t)
	b.builderStandIn()
	b.baseStandIn(t)

	// The Go module and build caches are lent to the builder's RUN steps, so that a build
	// the machine made already is not made again; go.sum still verifies every module.
	b.run("bud", "--pull=never", "--network", "host", "--isolation", "chroot", "--layers=false",
		"--volume", goEnv(t, "GOMODCACHE")+":/go/pkg/mod",
		"--volume", goEnv(t, "GOCACHE")+":/root/.cache/go-build",
		"--build-arg", "VERSION="+testVersion, "--build-arg", "GIT_COMMIT="+testCommit,
		"--file", filepath.Join(root, "Dockerfile"), "--tag", builtImage, root)

	var inspected imageConfig
	require.NoError(t, json.Unmarshal([]byte(b.run("inspect", "--type", "image", builtImage)), &inspected))
	config := inspected.OCIv1.Config
	t.Run("runs as the non-root user of distroless", func(t *testing.T) {
		assert.Equal(t, "65532:65532", config.User)
	})
	t.Run("carries its version and commit", func(t *testing.T) {
		assert.Equal(t, testVersion, config.Labels["org.opencontainers.image.version"])
		assert.Equal(t, testCommit, config.Labels["org.opencontainers.image.revision"])
		assert.Equal(t, runtime.GOARCH, inspected.OCIv1.Architecture)
	})
	t.Run("the entrypoint runs as that user and reports the version", func(t *testing.T) {
		require.Equal(t, []string{"/gitops-addon"}, config.Entrypoint)
		ctr := b.run("from", "--pull=never", builtImage)
		out := b.run("run", "--isolation", "chroot", "--user", config.User, ctr, "--", config.Entrypoint[0], "version")
		assert.Contains(t, out, testVersion)
		assert.Contains(t, out, "commit "+testCommit)
	})
}
