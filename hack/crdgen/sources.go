package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

const (
	// argoCDOperatorModule at argoCDOperatorVersion is where the Argo CD CRDs come from.
	// The version is pinned on purpose and is not in go.mod (we import no code from it):
	// it must match the argocd-operator the shipped GitOps operator image (v1.18.x) is
	// built from, because that operator reads and writes these APIs. Bump both together.
	argoCDOperatorModule  = "github.com/argoproj-labs/argocd-operator"
	argoCDOperatorVersion = "v0.18.0"
	// argoCDOperatorCRDDir holds the kubebuilder-generated CRDs inside that module.
	argoCDOperatorCRDDir = "config/crd/bases"

	// openshiftAPIModule provides the Route CRD, at the version go.mod pins, so the CRD
	// matches the route/v1 Go types the agent is compiled against.
	openshiftAPIModule = "github.com/openshift/api"
	routeCRDPath       = "route/v1/zz_generated.crd-manifests/routes.crd.yaml"
)

// expectedArgoCDCRDFiles is the exact set of CRD files taken from argocd-operator:
// every argoproj.io_*.yaml plus the image updater's. Listing them makes a version bump
// that adds or drops a CRD fail loudly instead of silently changing what ships.
var expectedArgoCDCRDFiles = []string{
	"argocd-image-updater.argoproj.io_imageupdaters.yaml",
	"argoproj.io_applications.yaml",
	"argoproj.io_applicationsets.yaml",
	"argoproj.io_appprojects.yaml",
	"argoproj.io_argocdexports.yaml",
	"argoproj.io_argocds.yaml",
	"argoproj.io_namespacemanagements.yaml",
	"argoproj.io_notificationsconfigurations.yaml",
}

// imageUpdaterCRDFile is the one CRD outside the argoproj.io_ prefix that ships too.
const imageUpdaterCRDFile = "argocd-image-updater.argoproj.io_imageupdaters.yaml"

// crdSource is one upstream CRD file.
type crdSource struct {
	module  string
	version string
	// path is the file's path inside the module.
	path string
	// diskPath is where the module cache holds it.
	diskPath string
}

// origin names the upstream file in the form written into the source annotation.
func (s crdSource) origin() string {
	return fmt.Sprintf("%s@%s/%s", s.module, s.version, s.path)
}

// moduleInfo is the part of `go mod download -json` / `go list -m -json` we read.
type moduleInfo struct {
	Path    string
	Version string
	Dir     string
	Error   string
	Replace *moduleInfo
}

// resolveSources finds every upstream CRD file on disk, downloading modules as needed.
func resolveSources() ([]crdSource, error) {
	argoDir, err := downloadModule(argoCDOperatorModule, argoCDOperatorVersion)
	if err != nil {
		return nil, err
	}
	argoSources, err := argoCDSources(argoDir)
	if err != nil {
		return nil, err
	}

	openshiftAPI, err := productModuleDependency(openshiftAPIModule)
	if err != nil {
		return nil, err
	}
	routeSource := crdSource{
		module:   openshiftAPI.Path,
		version:  openshiftAPI.Version,
		path:     routeCRDPath,
		diskPath: filepath.Join(openshiftAPI.Dir, filepath.FromSlash(routeCRDPath)),
	}
	return append(argoSources, routeSource), nil
}

// argoCDSources lists the Argo CD CRD files in an argocd-operator module directory and
// checks they are exactly the expected set.
func argoCDSources(moduleDir string) ([]crdSource, error) {
	crdDir := filepath.Join(moduleDir, filepath.FromSlash(argoCDOperatorCRDDir))
	matches, err := filepath.Glob(filepath.Join(crdDir, "argoproj.io_*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing Argo CD CRDs in %s: %w", crdDir, err)
	}
	var names []string
	for _, match := range matches {
		names = append(names, filepath.Base(match))
	}
	if _, err := os.Stat(filepath.Join(crdDir, imageUpdaterCRDFile)); err == nil {
		names = append(names, imageUpdaterCRDFile)
	}
	slices.Sort(names)
	if !slices.Equal(names, expectedArgoCDCRDFiles) {
		return nil, fmt.Errorf("%s@%s/%s holds CRD files %v, expected %v: review the list in hack/crdgen when bumping the version",
			argoCDOperatorModule, argoCDOperatorVersion, argoCDOperatorCRDDir, names, expectedArgoCDCRDFiles)
	}

	sources := make([]crdSource, 0, len(names))
	for _, name := range names {
		sources = append(sources, crdSource{
			module:   argoCDOperatorModule,
			version:  argoCDOperatorVersion,
			path:     path.Join(argoCDOperatorCRDDir, name),
			diskPath: filepath.Join(crdDir, name),
		})
	}
	return sources, nil
}

// downloadModule fetches module@version into the module cache, verifying its checksum,
// and returns its directory. It runs in an empty directory outside any module so that it
// can never touch the product's go.mod or go.sum.
func downloadModule(module, version string) (string, error) {
	scratch, err := moduleFreeDir()
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)

	out, err := runGo(scratch, "mod", "download", "-json", module+"@"+version)
	// go mod download -json reports failures in the JSON and exits non-zero: prefer the
	// JSON's message, which names the actual problem.
	var info moduleInfo
	if jsonErr := json.Unmarshal(out, &info); jsonErr == nil && info.Error != "" {
		return "", fmt.Errorf("downloading %s@%s: %s", module, version, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("downloading %s@%s: %w", module, version, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("downloading %s@%s: go mod download reported no directory", module, version)
	}
	return info.Dir, nil
}

// moduleFreeDir creates an empty temporary directory and checks that the go command sees
// no module there (a stray go.mod in a parent directory would otherwise be edited).
func moduleFreeDir() (string, error) {
	dir, err := os.MkdirTemp("", "crdgen-")
	if err != nil {
		return "", fmt.Errorf("creating a scratch directory: %w", err)
	}
	out, err := runGo(dir, "env", "GOMOD")
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
		os.RemoveAll(dir)
		return "", fmt.Errorf("scratch directory %s is inside the module %s; set TMPDIR to a directory outside any module", dir, gomod)
	}
	return dir, nil
}

// productModuleDependency returns the version of module that the product's go.mod
// selects, with the directory holding it.
func productModuleDependency(module string) (moduleInfo, error) {
	out, err := runGo("", "list", "-m", "-json", module)
	if err != nil {
		return moduleInfo{}, fmt.Errorf("finding %s in the product module: %w", module, err)
	}
	var info moduleInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return moduleInfo{}, fmt.Errorf("decoding go list output for %s: %w", module, err)
	}
	if info.Replace != nil {
		// A replaced module has no honest <module>@<version> to record as the source.
		return moduleInfo{}, fmt.Errorf("%s is replaced in go.mod; crdgen records upstream versions and cannot use a replacement", module)
	}
	if info.Version == "" {
		return moduleInfo{}, fmt.Errorf("%s has no version in the product module", module)
	}
	if info.Dir == "" {
		dir, err := downloadModule(info.Path, info.Version)
		if err != nil {
			return moduleInfo{}, err
		}
		info.Dir = dir
	}
	return info, nil
}

// runGo runs the go command in dir (the current directory when empty) and returns its
// standard output; a failure carries the command's standard error.
func runGo(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return out, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}
