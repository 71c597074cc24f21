package argocd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gitops-addon/gitops-addon/test/harness"
)

// Repo is a Git repository on disk that Argo CD's repo-server reads as file://, the way
// Argo CD's own end-to-end fixture serves its test repositories.
type Repo struct {
	bare string // what Argo CD clones
	work string // the checkout commits are made in

	mu sync.Mutex
}

// NewRepo creates an empty bare repository and its checkout under dir, on branch main.
func NewRepo(dir string) (*Repo, error) {
	r := &Repo{bare: filepath.Join(dir, "apps.git"), work: filepath.Join(dir, "apps")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := git(dir, "init", "--quiet", "--bare", "--initial-branch=main", r.bare); err != nil {
		return nil, err
	}
	if _, err := git(dir, "init", "--quiet", "--initial-branch=main", r.work); err != nil {
		return nil, err
	}
	if _, err := git(r.work, "remote", "add", "origin", r.bare); err != nil {
		return nil, err
	}
	return r, nil
}

// URL is the repository's address for an Application's spec.source.repoURL.
func (r *Repo) URL() string { return "file://" + r.bare }

// Commit writes files (path -> content; an empty content removes the file), commits them
// and pushes to the served repository; it returns the commit's SHA.
func (r *Repo) Commit(message string, files map[string]string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for path, content := range files {
		file := filepath.Join(r.work, path)
		if content == "" {
			if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{
		{"add", "--all"},
		{"-c", "user.name=gitops-addon e2e", "-c", "user.email=e2e@gitops-addon.invalid", "commit", "--quiet", "--allow-empty", "-m", message},
		{"push", "--quiet", "origin", "main"},
	} {
		if _, err := git(r.work, args...); err != nil {
			return "", err
		}
	}
	sha, err := git(r.work, "rev-parse", "HEAD")
	return strings.TrimSpace(sha), err
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// WorkDir is the checkout commits are made in (push to origin main to publish).
func (r *Repo) WorkDir() string { return r.work }

// Serve serves the repository read-only over the Git protocol (git daemon) on host, for
// repo-servers in pods, which cannot read this machine's files; it returns the repoURL to
// use. The daemon stops with the fleet.
func (r *Repo) Serve(ctx context.Context, f *harness.Fleet, host string) (string, error) {
	port := freePort()
	base := filepath.Dir(r.bare)
	p, err := f.StartProcess("git-daemon", []string{"git", "daemon", "--reuseaddr", "--export-all", "--base-path=" + base,
		"--listen=" + host, "--port=" + port, base})
	if err != nil {
		return "", err
	}
	if err := waitListening(ctx, p, net.JoinHostPort(host, port)); err != nil {
		return "", err
	}
	return "git://" + net.JoinHostPort(host, port) + "/" + filepath.Base(r.bare), nil
}
