package argocd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const fieldOwner = client.FieldOwner("gitops-addon-e2e")

// applyFiles applies every object of YAML files by server-side apply (Argo CD's
// Application CRD is too large for a client-side apply's annotation).
func applyFiles(ctx context.Context, c client.Client, files []string) error {
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("decoding %s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if err := c.Patch(ctx, obj, client.Apply, fieldOwner, client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
				return fmt.Errorf("applying %s %s from %s: %w", obj.GetKind(), obj.GetName(), file, err)
			}
		}
	}
	return nil
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

// goModDir is the module cache folder of module@version, downloaded through the Go module
// proxy when missing; run in dir, a module that requires it.
func goModDir(dir, moduleAtVersion string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", moduleAtVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s", moduleAtVersion, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s", moduleAtVersion, err, info.Error)
	}
	return info.Dir, nil
}
