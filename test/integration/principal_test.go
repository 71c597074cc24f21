package integration

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/render"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestRenderPrincipalIsAValidArgoCD: what `render principal` prints is accepted, field
// by field (strict validation, nothing pruned), by the ArgoCD CRD of the operator we
// ship, and names the auth pattern and Secrets gitops-addon keeps.
func TestRenderPrincipalIsAValidArgoCD(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(filepath.Join(testenv.RepoRoot(), "pkg", "spoke", "crdinstall", "crds", "argocds.argoproj.io.yaml")))
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hub-gitops"}}))

	var out bytes.Buffer
	require.NoError(t, render.Principal(&out, render.PrincipalOptions{Namespace: "hub-gitops", Name: "hub-argocd", Clusters: []string{"spoke-b", "spoke-a"}}))
	printed := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &printed.Object))
	require.NoError(t, env.Client.Create(ctx, printed.DeepCopy(), client.FieldValidation(metav1.FieldValidationStrict)), "accepted with strict field validation")

	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(printed.GroupVersionKind())
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "hub-gitops", Name: "hub-argocd"}, stored))
	want, _, _ := unstructured.NestedMap(printed.Object, "spec", "argoCDAgent", "principal")
	got, _, _ := unstructured.NestedMap(stored.Object, "spec", "argoCDAgent", "principal")
	assert.Equal(t, want, got, "stored as printed: nothing pruned")
	assert.Equal(t, signer.PrincipalAuth, got["auth"], "reads the agent name from the CN our signer issues")
	tls, _, _ := unstructured.NestedStringMap(got, "tls")
	assert.Equal(t, map[string]string{"secretName": pki.PrincipalSecret, "rootCASecretName": pki.CASecret}, tls)
	namespaces, _, _ := unstructured.NestedStringSlice(got, "namespace", "allowedNamespaces")
	assert.Equal(t, []string{"spoke-a", "spoke-b"}, namespaces, "the agents' cluster namespaces")
}
