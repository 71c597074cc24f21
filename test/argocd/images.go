package argocd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gitops-addon/gitops-addon/test/harness"
)

// OperatorImageRef is the GitOps operator image of a real-pod fleet, imported into each
// spoke's node; the chart's gitopsOperator.image points at it.
const OperatorImageRef = "local.gitops-addon/argocd-operator:e2e"

// OperatorImage is the GitOps operator's image made from the operator `make e2e-env`
// built from source, laid out as argocd-operator's own image is: the static binary as
// /manager and entrypoint, its redis configuration templates in /var/lib/redis (the
// operator's default REDIS_CONFIG_PATH), run as the non-root user 65532.
func OperatorImage(binDir string) (harness.ImageSpec, error) {
	spec := harness.StaticBinaryImage(OperatorImageRef, filepath.Join(binDir, "argocd-operator"), "/manager", "65532:65532")
	redisConfig, err := operatorRedisConfig(binDir)
	if err != nil {
		return spec, err
	}
	entries, err := os.ReadDir(redisConfig)
	if err != nil {
		return spec, fmt.Errorf("reading the operator's redis configuration: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			spec.Files = append(spec.Files, harness.ImageFile{Path: "/var/lib/redis/" + e.Name(), Source: filepath.Join(redisConfig, e.Name())})
		}
	}
	return spec, nil
}

// Image references of Argo CD's components on a real-pod fleet, for the ArgoCD CR
// (AddOnDeploymentConfig customizedVariables argoCDImage and redisImage).
const (
	ArgoCDImageRef = "local.gitops-addon/argocd:e2e"
	RedisImageRef  = "local.gitops-addon/redis:e2e"
)

// ArgoCDImages are Argo CD's image and the redis image, both on the root filesystem
// `make e2e-env` builds (hack/build-argocd-rootfs.sh: Debian with git, gpg and
// redis-server, Argo CD's binary and its component names). Argo CD's runs as argocd
// (999), as Argo CD's own image does; the operator gives each component its command.
// Redis's entrypoint is redis-server, to which the operator passes only arguments.
func ArgoCDImages(binDir string) ([]harness.ImageSpec, error) {
	rootfs := filepath.Join(binDir, "argocd-rootfs.tar")
	if _, err := os.Stat(rootfs); err != nil {
		return nil, fmt.Errorf("the Argo CD root filesystem (run `make e2e-env`): %w", err)
	}
	path := "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	return []harness.ImageSpec{
		{Ref: ArgoCDImageRef, RootFS: rootfs, User: "999:999", WorkingDir: "/home/argocd",
			Env: []string{path, "HOME=/home/argocd", "USER=argocd"}},
		{Ref: RedisImageRef, RootFS: rootfs, User: "999:999", WorkingDir: "/tmp",
			Entrypoint: []string{"redis-server"}, Env: []string{path}},
	}, nil
}
