package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/test/fixtures"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// acmFixturesDir is where Red Hat ACM's own YAML is kept as data.
func acmFixturesDir(t *testing.T) string { return fixtures.Dir(t, "acm") }

// acmGitOpsClusters reads every GitOpsCluster document of apps.open-cluster-management.io/v1beta1
// in ACM's fixtures (not its CRDs), by file and position.
func acmGitOpsClusters(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	found := map[string]*unstructured.Unstructured{}
	dir := acmFixturesDir(t)
	err := filepath.WalkDir(dir, func(path string, entry os.DirEntry, err error) error {
		if err != nil || entry.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.Contains(path, "/crds/") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(string(data))))
		for i := 0; ; i++ {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			u := &unstructured.Unstructured{}
			if err := utilyaml.Unmarshal(doc, &u.Object); err != nil || u.GetKind() != "GitOpsCluster" ||
				u.GetAPIVersion() != "apps.open-cluster-management.io/v1beta1" {
				continue
			}
			rel, _ := filepath.Rel(dir, path)
			found[rel+"#"+string(rune('0'+i))] = u
		}
	})
	require.NoError(t, err)
	return found
}

// TestACMGitOpsClusterYAMLIsAccepted server-side applies, to a real kube-apiserver with
// our CRD, every GitOpsCluster ACM ships in its examples, docs and tests, then each with
// the empty strings ACM gives a meaning to (argoNamespace "": the GitOpsCluster's own
// namespace; an empty image: no override). All must be accepted. The validation that
// protects users stays: the last subtest shows values no cluster could use still refused.
func TestACMGitOpsClusterYAMLIsAccepted(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon", "crds")))
	checkACMGitOpsClusterYAML(t, env)
}

// checkACMGitOpsClusterYAML is TestACMGitOpsClusterYAMLIsAccepted's body, on an apiserver
// with our GitOpsCluster CRD installed: TestOnTheOldestSupportedKubernetes runs it too.
func checkACMGitOpsClusterYAML(t *testing.T, env *testenv.Env) {
	ctx := context.Background()
	docs := acmGitOpsClusters(t)
	require.GreaterOrEqual(t, len(docs), 13, "ACM's GitOpsCluster documents in the fixtures")

	apply := func(t *testing.T, u *unstructured.Unstructured, namespace string) error {
		t.Helper()
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		obj := u.DeepCopy()
		obj.SetNamespace(namespace)
		obj.SetResourceVersion("")
		return env.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("acm-yaml-test"), client.ForceOwnership) //nolint:staticcheck // SA1019: the typed Apply needs ApplyConfigurations
	}
	emptied := map[string][]string{
		"argoNamespace":       {"spec", "argoServer", "argoNamespace"},
		"gitOpsOperatorImage": {"spec", "gitopsAddon", "gitOpsOperatorImage"},
		"gitOpsImage":         {"spec", "gitopsAddon", "gitOpsImage"},
		"redisImage":          {"spec", "gitopsAddon", "redisImage"},
		"argoCDAgent.image":   {"spec", "gitopsAddon", "argoCDAgent", "image"},
	}
	i := 0
	for name, doc := range docs {
		i++
		namespace := "acm-yaml-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		t.Run(name, func(t *testing.T) {
			require.NoError(t, apply(t, doc, namespace), "ACM's own document")
			for field, path := range emptied {
				variant := doc.DeepCopy()
				if len(path) > 3 {
					if _, found, _ := unstructured.NestedMap(variant.Object, path[:len(path)-1]...); !found {
						continue
					}
				}
				require.NoError(t, unstructured.SetNestedField(variant.Object, "", path...))
				variant.SetName(doc.GetName() + "-empty-" + strings.ToLower(strings.ReplaceAll(field, ".", "-")))
				assert.NoError(t, apply(t, variant, namespace), "with %s: \"\"", field)
			}
		})
	}

	t.Run("the principal's serverAddress: a DNS name, an IPv4 or an IPv6 address", func(t *testing.T) {
		var base *unstructured.Unstructured
		for _, doc := range docs {
			base = doc
			break
		}
		for i, address := range []string{"principal.example.com", "argocd-agent-principal", "10.0.0.12", "2001:db8::12", "::ffff:10.0.0.12", "FE80::1"} {
			variant := base.DeepCopy()
			require.NoError(t, unstructured.SetNestedField(variant.Object, address, "spec", "gitopsAddon", "argoCDAgent", "serverAddress"))
			variant.SetName(fmt.Sprintf("server-address-%d", i))
			assert.NoError(t, apply(t, variant, "acm-yaml-addresses"), "serverAddress %q", address)
		}
	})

	t.Run("values no cluster could use are still refused", func(t *testing.T) {
		var base *unstructured.Unstructured
		for _, doc := range docs {
			base = doc
			break
		}
		for field, bad := range map[string]struct {
			path  []string
			value string
		}{
			"argoNamespace not a namespace name": {[]string{"spec", "argoServer", "argoNamespace"}, "Not_A_Namespace"},
			"image with a space":                 {[]string{"spec", "gitopsAddon", "gitOpsImage"}, "quay.io/argoproj/argocd v3"},
			"serverAddress with a scheme":        {[]string{"spec", "gitopsAddon", "argoCDAgent", "serverAddress"}, "https://principal.example.com"},
			"serverAddress with a port":          {[]string{"spec", "gitopsAddon", "argoCDAgent", "serverAddress"}, "principal.example.com:443"},
			"serverAddress upper case":           {[]string{"spec", "gitopsAddon", "argoCDAgent", "serverAddress"}, "Principal.Example.com"},
		} {
			variant := base.DeepCopy()
			require.NoError(t, unstructured.SetNestedField(variant.Object, bad.value, bad.path...))
			variant.SetName("refused")
			err := apply(t, variant, "acm-yaml-refused")
			assert.True(t, apierrors.IsInvalid(err), "%s: want Invalid, got %v", field, err)
		}
	})
}
