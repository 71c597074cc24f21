// Package image builds the repository's Dockerfile for real, with buildah and no
// registry (test/imagebuild), and checks what users get: the build context
// (.dockerignore) holds every file the builder compiles, the image runs as a non-root
// user, and it carries the version.
package image

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/test/imagebuild"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const (
	// builtImage is the name the test gives the image it builds.
	builtImage = "localhost/gitops-addon:image-check"
	// testVersion and testCommit are passed as build arguments and must come out of the image.
	testVersion = "v9.9.9-image-check"
	testCommit  = "0123abc"
)

func TestDockerfileBuildsTheImageUsersGet(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the image check needs root (buildah with chroot isolation and overlay storage); CI runs as root")
		}
		t.Skip("NOT RUN: the image check needs root (buildah with chroot isolation and overlay storage); run `sudo make verify`")
	}
	b, err := imagebuild.New(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Teardown()) })
	require.NoError(t, b.StandIns(t.TempDir()))
	require.NoError(t, b.BuildDockerfile(testenv.RepoRoot(), builtImage, testVersion, testCommit))

	inspected, err := b.Inspect(builtImage)
	require.NoError(t, err)
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
		ctr, err := b.Run("from", "--pull=never", builtImage)
		require.NoError(t, err)
		out, err := b.Run("run", "--isolation", "chroot", "--user", config.User, ctr, "--", config.Entrypoint[0], "version")
		require.NoError(t, err)
		assert.Contains(t, out, testVersion)
		assert.Contains(t, out, "commit "+testCommit)
	})
}
