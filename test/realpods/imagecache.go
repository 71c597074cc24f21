package realpods

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// imageInputs are what our image is built from: the Dockerfile, its build context (the
// allow-list in .dockerignore) and the stand-ins of its FROM images (test/imagebuild).
// Test files inside them count too: over-inclusive, never stale.
var imageInputs = []string{"Dockerfile", ".dockerignore", "go.mod", "go.sum", "cmd", "pkg", "manifests", "charts", "test/imagebuild"}

// imageCacheDir keeps the last image built, in ./bin like every other build output.
func imageCacheDir() string { return filepath.Join(testenv.BinDir(), "images") }

// ProductImageArchive returns an archive of our image built from the checkout as it is: the
// one built before when none of imageInputs changed since (keyed by their content), else a
// new build, which replaces it in the cache. A build takes about a minute on 2 cores.
func ProductImageArchive(ctx context.Context, workDir string) (string, error) {
	key, err := imageKey(testenv.RepoRoot())
	if err != nil {
		return "", err
	}
	cached := filepath.Join(imageCacheDir(), "gitops-addon-"+key[:16]+".tar")
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	}
	built, err := BuildProductImage(ctx, workDir)
	if err != nil {
		return "", err
	}
	if err := replaceCached(built, cached); err != nil {
		return "", err
	}
	return cached, nil
}

// imageKey hashes every file of imageInputs under root: its path and its content.
func imageKey(root string) (string, error) {
	var files []string
	for _, input := range imageInputs {
		err := filepath.WalkDir(filepath.Join(root, input), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("reading the image's inputs: %w", err)
		}
	}
	sort.Strings(files)
	h := sha256.New()
	for _, file := range files {
		rel, err := filepath.Rel(root, file)
		if err != nil {
			return "", err
		}
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, f)
		_ = f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// replaceCached copies the archive built into the cache as cached, through a temporary
// file so that an interrupted copy is never taken for an image, and removes the images of
// earlier inputs.
func replaceCached(built, cached string) error {
	dir := filepath.Dir(cached)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	in, err := os.Open(built)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	tmp, err := os.CreateTemp(dir, ".gitops-addon-*.tar")
	if err != nil {
		return err
	}
	if _, err := io.Copy(tmp, in); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "gitops-addon-") && strings.HasSuffix(e.Name(), ".tar") {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return os.Rename(tmp.Name(), cached)
}
