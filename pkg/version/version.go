// Package version holds the build's version, set at link time from the release tag:
//
//	-ldflags "-X github.com/gitops-addon/gitops-addon/pkg/version.Version=v0.1.0 -X ...GitCommit=abc123"
//
// and names the image of that version, which the charts reference by their appVersion.
package version

import (
	"fmt"
	"runtime"
	"strings"
)

// ImageRepository is where releases publish the gitops-addon image (manager and agent).
const ImageRepository = "ghcr.io/gitops-addon/gitops-addon"

var (
	// Version is the release version: the git tag (v0.1.0), or `git describe` between tags.
	Version = "v0.0.0-dev"
	// GitCommit is the commit the binary was built from.
	GitCommit = "unknown"
)

// String describes the build in one line.
func String() string {
	return fmt.Sprintf("gitops-addon %s (commit %s, %s, %s/%s)", Version, GitCommit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Image is this build's own image: the release workflow tags images with the version
// without its leading "v", as the charts' appVersion is written (v0.1.0 -> 0.1.0).
func Image() string {
	return ImageRepository + ":" + strings.TrimPrefix(Version, "v")
}
