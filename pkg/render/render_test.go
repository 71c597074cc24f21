package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// find returns the rendered object of a kind and name, as unstructured.
func find(t *testing.T, objects []runtime.Object, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: m}
		if obj.GetObjectKind().GroupVersionKind().Kind == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

func operatorImage(t *testing.T, objects []runtime.Object) string {
	t.Helper()
	for _, obj := range objects {
		if d, ok := obj.(*appsv1.Deployment); ok && d.Name == "openshift-gitops-operator-controller-manager" {
			return d.Spec.Template.Spec.Containers[0].Image
		}
	}
	t.Fatal("no operator Deployment rendered")
	return ""
}

func platformExtensionGroups(t *testing.T, objects []runtime.Object) []string {
	t.Helper()
	var groups []string
	for _, obj := range objects {
		if r, ok := obj.(*rbacv1.ClusterRole); ok && r.Name == "argocd-platform-extensions" {
			for _, rule := range r.Rules {
				groups = append(groups, rule.APIGroups...)
			}
			return groups
		}
	}
	t.Fatal("no argocd-platform-extensions ClusterRole rendered")
	return nil
}

func TestObjects(t *testing.T) {
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, []byte("platformExtensions:\n  extraAPIGroups: [monitoring.coreos.com]\n"), 0o600))

	tests := []struct {
		name      string
		opts      Options
		openShift bool
		check     func(t *testing.T, objects []runtime.Object)
		wantErr   string
	}{
		{
			name: "a Kubernetes cluster's agent may install the Routes CRD", opts: Options{Cluster: "east"},
		},
		{
			name: "an OpenShift cluster's agent never installs the Routes CRD", opts: Options{Cluster: "east", OpenShift: true}, openShift: true,
		},
		{
			name: "--set overrides the operator image", opts: Options{Cluster: "east", Values: []string{"global.imageOverrides.gitopsOperator=registry.example.com/op:v1"}},
			check: func(t *testing.T, objects []runtime.Object) {
				assert.Equal(t, "registry.example.com/op:v1", operatorImage(t, objects))
			},
		},
		{
			name: "--operator-image is the manager's default", opts: Options{Cluster: "east", OperatorImage: "registry.example.com/op:v2"},
			check: func(t *testing.T, objects []runtime.Object) {
				assert.Equal(t, "registry.example.com/op:v2", operatorImage(t, objects))
			},
		},
		{
			name: "a values file adds API groups to argocd-platform-extensions", opts: Options{Cluster: "east", ValueFiles: []string{valuesFile}},
			check: func(t *testing.T, objects []runtime.Object) {
				groups := platformExtensionGroups(t, objects)
				assert.Contains(t, groups, "monitoring.coreos.com")
				assert.NotContains(t, groups, "rbac.authorization.k8s.io", "no RBAC escalation unless asked for")
			},
		},
		{name: "an invalid cluster name", opts: Options{Cluster: "East_1"}, wantErr: `--cluster "East_1" is not a valid cluster name`},
		{name: "a missing values file", opts: Options{Cluster: "east", ValueFiles: []string{filepath.Join(t.TempDir(), "nope.yaml")}}, wantErr: "reading values"},
		{name: "a malformed --set", opts: Options{Cluster: "east", Values: []string{"operatorImage"}}, wantErr: "reading values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := Objects(context.Background(), tt.opts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			for _, crd := range []string{contract.RoutesCRDName, "applications.argoproj.io", "argocds.argoproj.io"} {
				assert.Nil(t, find(t, objects, "CustomResourceDefinition", crd), "%s: the agent installs CRDs", crd)
			}
			agent := find(t, objects, "Deployment", contract.AgentDeployment)
			require.NotNil(t, agent, "the spoke agent")
			containers, _, _ := unstructured.NestedSlice(agent.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			assert.Contains(t, args, fmt.Sprintf("--openshift=%v", tt.openShift))
			argocd := find(t, objects, "ArgoCD", "openshift-gitops")
			require.NotNil(t, argocd, "the ArgoCD CR")
			assert.Equal(t, "openshift-gitops", argocd.GetNamespace())
			if tt.check != nil {
				tt.check(t, objects)
			}
		})
	}
}

// TestPrintIsAReadableStream: every rendered object comes back out of the printed YAML,
// in order, with its kind and name.
func TestPrintIsAReadableStream(t *testing.T) {
	objects, err := Objects(context.Background(), Options{Cluster: "east"})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, Print(&out, objects))

	decoder := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	var printed []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) > 0 {
			printed = append(printed, u)
		}
	}
	require.Len(t, printed, len(objects))
	for i, obj := range objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, err)
		want := &unstructured.Unstructured{Object: m}
		assert.Equal(t, obj.GetObjectKind().GroupVersionKind().Kind, printed[i].GetKind(), "object %d", i)
		assert.Equal(t, want.GetName(), printed[i].GetName(), "object %d", i)
	}
}

// TestExplainRBACSaysWhatTheSpokeArgoCDMayDo: the words follow the rendered rules, by
// default and with an extra API group.
func TestExplainRBACSaysWhatTheSpokeArgoCDMayDo(t *testing.T) {
	explain := func(t *testing.T, set ...string) string {
		objects, err := Objects(context.Background(), Options{Cluster: "c1", AgentImage: "a:1", Values: set})
		require.NoError(t, err)
		var out strings.Builder
		require.NoError(t, ExplainRBAC(&out, objects))
		return out.String()
	}
	t.Run("default", func(t *testing.T) {
		out := explain(t)
		assert.Contains(t, out, "  - apps: deployments, statefulsets, daemonsets, replicasets (get, list, watch, create, update, patch, delete")
		assert.Contains(t, out, "It may not:\n")
		assert.NotContains(t, out, "It MAY")
		for _, s := range sensitive {
			assert.Contains(t, out, "  - "+s.words, "denied by default")
		}
	})
	t.Run("the RBAC group listed in extraAPIGroups", func(t *testing.T) {
		out := explain(t, "platformExtensions.extraAPIGroups={rbac.authorization.k8s.io}")
		assert.Contains(t, out, "  - rbac.authorization.k8s.io: every resource of the group")
		assert.Contains(t, out, "It MAY (granted through extraAPIGroups):\n  - write RBAC")
		assert.Contains(t, out, "  - escalate or bind roles")
		may, mayNot, _ := strings.Cut(out, "It may not:")
		assert.Contains(t, may, "write RBAC")
		assert.Contains(t, mayNot, "impersonate a ServiceAccount", "never impersonate")
	})
}
