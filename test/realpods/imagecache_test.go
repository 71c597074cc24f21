package realpods

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImageKeyFollowsTheInputs: the cached image is used only while nothing it is built
// from changed: any file of the build context, the Dockerfile, the stand-ins.
func TestImageKeyFollowsTheInputs(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, path), []byte(content), 0o644))
	}
	for _, file := range []string{"Dockerfile", ".dockerignore", "go.mod", "go.sum"} {
		write(file, file)
	}
	for _, dir := range []string{"cmd", "pkg", "manifests", "charts", "test/imagebuild"} {
		write(filepath.Join(dir, "f"), dir)
	}
	write("README.md", "docs")
	key := func() string {
		t.Helper()
		k, err := imageKey(root)
		require.NoError(t, err)
		return k
	}
	first := key()
	assert.Equal(t, first, key(), "the same inputs, the same key")
	write("README.md", "other docs")
	assert.Equal(t, first, key(), "a file outside the image's inputs changes nothing")
	write("pkg/hub/x.go", "package hub")
	second := key()
	assert.NotEqual(t, first, second, "a new source file")
	write("pkg/hub/x.go", "package hub // changed")
	assert.NotEqual(t, second, key(), "a changed source file")
	third := key()
	require.NoError(t, os.Rename(filepath.Join(root, "pkg/hub/x.go"), filepath.Join(root, "pkg/hub/y.go")))
	assert.NotEqual(t, third, key(), "a renamed source file")
	write("Dockerfile", "FROM scratch AS other")
	assert.NotEqual(t, third, key(), "a changed Dockerfile")
}
