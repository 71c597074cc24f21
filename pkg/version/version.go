// Package version holds the build's version, set at link time:
//
//	-ldflags "-X github.com/gitops-addon/gitops-addon/pkg/version.Version=v0.1.0 -X ...GitCommit=abc123"
package version

import (
	"fmt"
	"runtime"
)

var (
	// Version is the release version.
	Version = "v0.0.0-dev"
	// GitCommit is the commit the binary was built from.
	GitCommit = "unknown"
)

// String describes the build in one line.
func String() string {
	return fmt.Sprintf("gitops-addon %s (commit %s, %s, %s/%s)", Version, GitCommit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
