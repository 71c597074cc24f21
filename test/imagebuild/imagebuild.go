// Package imagebuild builds the repository's Dockerfile for real, with buildah and no
// registry: each FROM image is a local stand-in with the exact name the Dockerfile uses
// (golang:1.26 is this machine's Go toolchain with busybox for /bin/sh,
// distroless/static:nonroot a passwd file with the nonroot user and a CA bundle), and the
// Dockerfile itself is used as it is: the file users build is the file the tests run.
// Everything lives in a storage of its own under a directory the caller owns.
package imagebuild

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	// BuilderImage and BaseImage are the FROM names of the Dockerfile, as buildah resolves them.
	BuilderImage = "docker.io/library/golang:1.26"
	BaseImage    = "gcr.io/distroless/static:nonroot"
	// caBundle is Debian's CA bundle, present on every machine with ca-certificates.
	caBundle = "/etc/ssl/certs/ca-certificates.crt"
)

// Buildah runs buildah on a storage of its own, so that nothing lands in the machine's
// /var/lib/containers and Teardown can remove everything.
type Buildah struct {
	storage string
	env     []string
}

// New prepares a buildah storage under dir. It fails, naming the fix, when buildah is
// missing or the caller is not root.
func New(dir string) (*Buildah, error) {
	if _, err := exec.LookPath("buildah"); err != nil {
		return nil, fmt.Errorf("buildah is missing: `make verify` installs it (Debian package buildah): %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("building the image needs root (buildah with chroot isolation and overlay storage)")
	}
	storage := filepath.Join(dir, "storage")
	conf := filepath.Join(dir, "storage.conf")
	content := fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n", storage, filepath.Join(dir, "run"))
	if err := os.WriteFile(conf, []byte(content), 0o600); err != nil {
		return nil, err
	}
	return &Buildah{storage: storage, env: append(os.Environ(), "CONTAINERS_STORAGE_CONF="+conf, "BUILDAH_ISOLATION=chroot")}, nil
}

// Run runs buildah with args and returns its standard output.
func (b *Buildah) Run(args ...string) (string, error) {
	cmd := exec.Command("buildah", args...)
	cmd.Env = b.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("buildah %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// Teardown removes every container and image of the storage and says what mount is left.
func (b *Buildah) Teardown() error {
	var errs []error
	for _, args := range [][]string{{"rm", "--all"}, {"rmi", "--all", "--force"}} {
		if _, err := b.Run(args...); err != nil {
			errs = append(errs, err)
		}
	}
	// containers/storage keeps its overlay directory mounted on itself (private).
	_ = exec.Command("umount", "-R", filepath.Join(b.storage, "overlay")).Run()
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && strings.HasPrefix(fields[1], b.storage) {
			errs = append(errs, fmt.Errorf("a mount is left after teardown: %s", line))
		}
	}
	return errors.Join(errs...)
}

// standIn commits a scratch image named name holding files (host path -> image path),
// with the environment env and empty directories dirs.
func (b *Buildah) standIn(name string, files map[string]string, env []string, dirs ...string) error {
	ctr, err := b.Run("from", "scratch")
	if err != nil {
		return err
	}
	root, err := b.Run("mount", ctr)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			return err
		}
	}
	for from, to := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, to)), 0o755); err != nil {
			return err
		}
		if out, err := exec.Command("cp", "-a", from, filepath.Join(root, to)).CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s into %s: %w: %s", from, name, err, out)
		}
	}
	args := []string{"config"}
	for _, e := range env {
		args = append(args, "--env", e)
	}
	for _, step := range [][]string{{"umount", ctr}, append(args, ctr), {"commit", "--quiet", ctr, name}, {"rm", ctr}} {
		if _, err := b.Run(step...); err != nil {
			return err
		}
	}
	return nil
}

// StandIns makes the stand-ins of the Dockerfile's FROM images.
func (b *Buildah) StandIns(dir string) error {
	if err := b.builderStandIn(); err != nil {
		return err
	}
	return b.baseStandIn(dir)
}

// builderStandIn is golang:1.26: this machine's Go toolchain, busybox as /bin/sh.
func (b *Buildah) builderStandIn() error {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return fmt.Errorf("busybox-static is missing: `make verify` installs it: %w", err)
	}
	err = b.standIn(BuilderImage, map[string]string{
		GoEnv("GOROOT"): "/usr/local/go",
		busybox:         "/bin/busybox",
		caBundle:        caBundle,
	}, []string{
		"PATH=/usr/local/go/bin:/go/bin:/bin",
		"GOPATH=/go",
		"GOTOOLCHAIN=local",
		"GOPROXY=" + GoEnv("GOPROXY"),
		"HOME=/root",
	}, "/tmp", "/root", "/go")
	if err != nil {
		return err
	}
	// busybox provides sh and the few commands a RUN line may use.
	ctr, err := b.Run("from", "--pull=never", BuilderImage)
	if err != nil {
		return err
	}
	for _, step := range [][]string{
		{"run", "--isolation", "chroot", ctr, "--", "/bin/busybox", "--install", "-s", "/bin"},
		{"commit", "--quiet", ctr, BuilderImage},
		{"rm", ctr},
	} {
		if _, err := b.Run(step...); err != nil {
			return err
		}
	}
	return nil
}

// baseStandIn is distroless/static:nonroot: root and nonroot (65532) users, a CA bundle.
func (b *Buildah) baseStandIn(dir string) error {
	passwd := filepath.Join(dir, "passwd")
	group := filepath.Join(dir, "group")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(group, []byte("root:x:0:\nnonroot:x:65532:\n"), 0o644); err != nil {
		return err
	}
	return b.standIn(BaseImage, map[string]string{passwd: "/etc/passwd", group: "/etc/group", caBundle: caBundle},
		[]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, "/tmp", "/home/nonroot")
}

// BuildDockerfile builds the repository's Dockerfile in root as tag, with the VERSION and
// GIT_COMMIT build arguments. The Go module and build caches are lent to the builder's
// RUN steps, so that a build the machine made already is not made again; go.sum still
// verifies every module.
func (b *Buildah) BuildDockerfile(root, tag, version, commit string) error {
	_, err := b.Run("bud", "--pull=never", "--network", "host", "--isolation", "chroot", "--layers=false",
		"--volume", GoEnv("GOMODCACHE")+":/go/pkg/mod",
		"--volume", GoEnv("GOCACHE")+":/root/.cache/go-build",
		"--build-arg", "VERSION="+version, "--build-arg", "GIT_COMMIT="+commit,
		"--file", filepath.Join(root, "Dockerfile"), "--tag", tag, root)
	return err
}

// Config is the part of `buildah inspect` the tests read.
type Config struct {
	OCIv1 struct {
		Architecture string `json:"architecture"`
		Config       struct {
			User       string            `json:"User"`
			Entrypoint []string          `json:"Entrypoint"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
	} `json:"OCIv1"`
}

// Inspect reads an image's configuration.
func (b *Buildah) Inspect(tag string) (Config, error) {
	var c Config
	out, err := b.Run("inspect", "--type", "image", tag)
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal([]byte(out), &c)
}

// Export writes an image as a docker-archive tarball named ref inside (what `ctr images
// import` reads): a node imports it without a registry.
func (b *Buildah) Export(tag, ref, file string) error {
	_, err := b.Run("push", "--quiet", tag, "docker-archive:"+file+":"+ref)
	return err
}

// GoEnv is `go env name`.
func GoEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
