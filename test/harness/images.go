package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// ImageFile is one file of an image built from local files.
type ImageFile struct {
	// Path in the image, absolute.
	Path string
	// Source is a file of this machine to copy; Data is used when Source is empty.
	Source string
	Data   []byte
	Mode   os.FileMode
}

// ImageSpec is an image made from local files, with no registry and no image builder:
// what a static Go binary needs, or a root filesystem tarball (mmdebstrap's) with them on
// top.
type ImageSpec struct {
	// Ref names the image, e.g. local.gitops-addon/pause:1 (pods refer to it so, with
	// imagePullPolicy Never or IfNotPresent).
	Ref string
	// RootFS is a root filesystem tarball taken as the image's first layer; Files, when
	// any, are a second layer over it.
	RootFS     string
	Files      []ImageFile
	Entrypoint []string
	// User runs the entrypoint, "uid:gid"; empty is root.
	User       string
	Env        []string
	WorkingDir string
}

// WriteDockerArchive writes the image as a docker-archive tarball (what `ctr images
// import` and `docker load` read) to file. Layers are streamed from disk: a root
// filesystem is hundreds of megabytes.
func (s ImageSpec) WriteDockerArchive(file string) error {
	var layers []string
	if s.RootFS != "" {
		layers = append(layers, s.RootFS)
	}
	if len(s.Files) > 0 || s.RootFS == "" {
		layer, err := s.layer()
		if err != nil {
			return err
		}
		layerFile := file + ".layer"
		if err := os.WriteFile(layerFile, layer, 0o600); err != nil {
			return fmt.Errorf("writing a layer of image %s: %w", s.Ref, err)
		}
		defer func() { _ = os.Remove(layerFile) }()
		layers = append(layers, layerFile)
	}
	var diffIDs, layerNames []string
	for i, layer := range layers {
		digest, err := fileDigest(layer)
		if err != nil {
			return fmt.Errorf("image %s: %w", s.Ref, err)
		}
		diffIDs = append(diffIDs, "sha256:"+digest)
		layerNames = append(layerNames, fmt.Sprintf("layer%d.tar", i))
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config":       map[string]any{"Entrypoint": s.Entrypoint, "User": s.User, "Env": s.Env, "WorkingDir": s.WorkingDir},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return err
	}
	configDigest := sha256.Sum256(config)
	configName := hex.EncodeToString(configDigest[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{s.Ref}, "Layers": layerNames}})
	if err != nil {
		return err
	}
	return writeArchive(file, s.Ref, configName, config, layerNames, layers, manifest)
}

// WriteDockerArchiveIn writes the image's docker-archive into dir, named after its Ref,
// and returns the file: for Node.Import.
func (s ImageSpec) WriteDockerArchiveIn(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(s.Ref)+".tar")
	return file, s.WriteDockerArchive(file)
}

// writeArchive writes the docker-archive: the config, each layer copied from its file,
// the manifest.
func writeArchive(file, ref, configName string, config []byte, layerNames, layerFiles []string, manifest []byte) (err error) {
	out, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing image %s: %w", ref, err)
	}
	defer func() {
		if closeErr := out.Close(); err == nil && closeErr != nil {
			err = fmt.Errorf("writing image %s: %w", ref, closeErr)
		}
	}()
	tw := tar.NewWriter(out)
	if err := writeTarFile(tw, configName, config, 0o644); err != nil {
		return err
	}
	for i, name := range layerNames {
		if err := copyTarFile(tw, name, layerFiles[i]); err != nil {
			return fmt.Errorf("writing image %s: %w", ref, err)
		}
	}
	if err := writeTarFile(tw, "manifest.json", manifest, 0o644); err != nil {
		return err
	}
	return tw.Close()
}

// copyTarFile adds a file of this machine to tw as name, streamed.
func copyTarFile(tw *tar.Writer, name, source string) error {
	f, err := os.Open(source)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: info.Size(), Mode: 0o644, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// fileDigest is the hex sha256 of a file's content.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// layer is the image's layer of Files, with their parent directories.
func (s ImageSpec) layer() ([]byte, error) {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	dirs := map[string]bool{}
	files := append([]ImageFile(nil), s.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		for d := filepath.Dir(f.Path); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	sortedDirs := make([]string, 0, len(dirs))
	for d := range dirs {
		sortedDirs = append(sortedDirs, d)
	}
	sort.Strings(sortedDirs)
	for _, d := range sortedDirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		data := f.Data
		if f.Source != "" {
			var err error
			if data, err = os.ReadFile(f.Source); err != nil {
				return nil, fmt.Errorf("image %s: %w", s.Ref, err)
			}
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := writeTarFile(tw, f.Path[1:], data, mode); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func writeTarFile(tw *tar.Writer, name string, data []byte, mode os.FileMode) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: int64(mode), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	_, err := io.Copy(tw, bytes.NewReader(data))
	return err
}

// passwd is an /etc/passwd with root and the non-root user images conventionally run as
// (distroless's nonroot, 65532), and nobody (65534).
const passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" +
	"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"

// StaticBinaryImage is an image with one static binary at path, run as entrypoint by
// user, with /etc/passwd and the machine's CA bundle (for TLS clients).
func StaticBinaryImage(ref, binary, path, user string, args ...string) ImageSpec {
	spec := StaticBinariesImage(ref, user, map[string]string{path: binary})
	spec.Entrypoint = append([]string{path}, args...)
	return spec
}

// StaticBinariesImage is an image of static binaries (path in the image: file of this
// machine) with no entrypoint, for manifests that name the command, run by user, with
// /etc/passwd and the machine's CA bundle.
func StaticBinariesImage(ref, user string, binaries map[string]string) ImageSpec {
	files := []ImageFile{{Path: "/etc/passwd", Data: []byte(passwd)}}
	for path, binary := range binaries {
		files = append(files, ImageFile{Path: path, Source: binary, Mode: 0o755})
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		files = append(files, ImageFile{Path: "/etc/ssl/certs/ca-certificates.crt", Source: "/etc/ssl/certs/ca-certificates.crt"})
	}
	return ImageSpec{Ref: ref, Files: files, User: user}
}

// PodcheckImage runs test/harness/podcheck as the non-root user 65532: `serve ADDR` logs
// one line naming its pod and answers /healthz, for tests that need a pod that runs.
const PodcheckImage = "local.gitops-addon/podcheck:1"

// PodcheckDeployment is the YAML of a one-replica Deployment named name whose container,
// web, runs PodcheckImage (`serve :8080`) as its non-root user on a read-only root,
// tolerating the NoSchedule taints of the keys tolerate.
func PodcheckDeployment(name string, tolerate ...string) string {
	tolerations := ""
	if len(tolerate) > 0 {
		tolerations = "      tolerations:\n"
		for _, key := range tolerate {
			tolerations += fmt.Sprintf("      - {key: %s, operator: Exists, effect: NoSchedule}\n", key)
		}
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
%[2]s      containers:
      - name: web
        image: %[3]s
        imagePullPolicy: Never
        args: [serve, ":8080"]
        securityContext: {runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`, name, tolerations, PodcheckImage)
}

// BuildPodcheckImage builds test/harness/podcheck into dir and returns its image, for
// Node.ImportImage.
func BuildPodcheckImage(ctx context.Context, dir string) (ImageSpec, error) {
	binary, err := BuildStatic(ctx, dir, "./test/harness/podcheck")
	if err != nil {
		return ImageSpec{}, err
	}
	return StaticBinaryImage(PodcheckImage, binary, "/podcheck", "65532:65532"), nil
}

// BuildStatic builds a main package of this repository (e.g. ./test/harness/pause) as a
// static binary into dir, for an image of StaticBinaryImage.
func BuildStatic(ctx context.Context, dir, pkg string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w: %s", pkg, err, b)
	}
	return out, nil
}
