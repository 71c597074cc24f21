package repocreds

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// stagedPrefix starts every staged copy's name; the hash after it is 16 hex characters.
const stagedPrefix = "gitops-addon-repocred-"

// StagedName is the name of the staged copy of the hub Secret secret for the hub
// Application appNamespace/appName: one per Application and Secret, so that two
// Applications that share a credential on one cluster never write the same object
// (each ManifestWork removes its own copy when it goes).
func StagedName(appNamespace, appName, secret string) string {
	sum := sha256.Sum256([]byte(appNamespace + "/" + appName + "/" + secret))
	return stagedPrefix + hex.EncodeToString(sum[:])[:16]
}

// Staged is the copy of a hub credential Secret an Application's ManifestWork carries:
// in namespace (the spoke's Argo CD namespace), under StagedName, with the data and the
// type of the hub Secret, without Argo CD's secret-type label (the spoke's Argo CD must
// not read it: the agent materialises it under the hub Secret's name, see
// pkg/spoke/repocreds) and without the hub Secret's other labels and annotations.
func Staged(s *corev1.Secret, namespace, appNamespace, appName string) *unstructured.Unstructured {
	data := make(map[string]any, len(s.Data))
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		data[k] = base64.StdEncoding.EncodeToString(s.Data[k])
	}
	for k, v := range s.StringData {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":      StagedName(appNamespace, appName, s.Name),
			"namespace": namespace,
			"labels": map[string]any{
				contract.LabelRepositoryCredential: contract.RepositoryCredentialStaged,
				contract.LabelManagedBy:            contract.ManagedByValue,
			},
			"annotations": map[string]any{
				contract.AnnotationCredentialTarget:  s.Name,
				contract.AnnotationCredentialType:    typeOf(s),
				contract.AnnotationCredentialVersion: s.ResourceVersion,
			},
		},
		"data": data,
	}}
	if s.Type != "" {
		u.Object["type"] = string(s.Type)
	}
	return u
}

// RepoURLs are the repository URLs of an Application's sources: spec.source and every
// spec.sources[] entry.
func RepoURLs(app *unstructured.Unstructured) []string {
	var out []string
	if u, _, _ := unstructured.NestedString(app.Object, "spec", "source", "repoURL"); u != "" {
		out = append(out, u)
	}
	sources, _, _ := unstructured.NestedSlice(app.Object, "spec", "sources")
	for _, s := range sources {
		if m, ok := s.(map[string]any); ok {
			if u, _ := m["repoURL"].(string); u != "" && !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}
