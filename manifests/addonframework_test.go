package manifests_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonapiv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/gitops-addon/gitops-addon/manifests"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// frameworkManifests renders the chart exactly as the hub does, through the addon
// framework's Helm agent addon, with values merged over the chart defaults.
func frameworkManifests(t *testing.T, scheme *runtime.Scheme, values addonfactory.Values) ([]runtime.Object, error) {
	t.Helper()
	return frameworkManifestsFor(t, scheme, "v1.35.4", values)
}

// frameworkManifestsFor renders for a managed cluster that reports kubeVersion in its status.
func frameworkManifestsFor(t *testing.T, scheme *runtime.Scheme, kubeVersion string, values addonfactory.Values) ([]runtime.Object, error) {
	t.Helper()
	factory := addonfactory.NewAgentAddonFactory(contract.AddonName, manifests.ChartFS, manifests.AgentChartDir).
		WithAgentRegistrationOption(&agent.RegistrationOption{}).
		WithGetValuesFuncs(func(*clusterv1.ManagedCluster, *addonapiv1beta1.ManagedClusterAddOn) (addonfactory.Values, error) {
			return values, nil
		})
	if scheme != nil {
		factory = factory.WithScheme(scheme)
	}
	agentAddon, err := factory.BuildHelmAgentAddon()
	require.NoError(t, err)

	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	cluster.Status.Version.Kubernetes = kubeVersion
	addon := &addonapiv1beta1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: contract.AddonName, Namespace: "cluster1"},
	}
	return agentAddon.Manifests(context.Background(), cluster, addon)
}

func kindsAndNames(t *testing.T, objects []runtime.Object) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, object := range objects {
		accessor, err := meta.Accessor(object)
		require.NoError(t, err)
		kind := object.GetObjectKind().GroupVersionKind().Kind
		seen[kind+"/"+accessor.GetName()] = true
	}
	return seen
}

func TestRendersThroughTheAddonFramework(t *testing.T) {
	// The framework decodes every object with its scheme, so the hub must register the
	// ArgoCD kind; as unstructured is enough.
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(contract.ArgoCDGVK, &unstructured.Unstructured{})

	for _, openshift := range []bool{false, true} {
		t.Run(fmt.Sprintf("openshift=%v", openshift), func(t *testing.T) {
			objects, err := frameworkManifests(t, scheme, addonfactory.Values{"openshift": openshift})
			require.NoError(t, err)
			seen := kindsAndNames(t, objects)

			assert.True(t, seen["ArgoCD/"+contract.ArgoCDName], "ArgoCD CR missing from the framework's manifests")
			assert.True(t, seen["Deployment/"+contract.AgentDeployment])
			assert.True(t, seen["Deployment/"+contract.OperatorDeployment])

			for _, object := range objects {
				switch typed := object.(type) {
				case *apiextensionsv1.CustomResourceDefinition:
					t.Errorf("CRD %s in the framework's manifests: the agent installs CRDs", typed.Name)
				case *appsv1.Deployment:
					if typed.Name == contract.AgentDeployment {
						assert.Equal(t, addonfactory.AddonDefaultInstallNamespace, typed.Namespace)
						assert.Contains(t, typed.Spec.Template.Spec.Containers[0].Args, "--cluster-name=cluster1")
					}
				}
			}
		})
	}
}

func TestFrameworkNeedsTheArgoCDKindInItsScheme(t *testing.T) {
	// Documents what the hub must do: with the framework's default scheme the ArgoCD CR
	// cannot be decoded and rendering fails.
	_, err := frameworkManifests(t, nil, addonfactory.Values{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no kind "ArgoCD" is registered`)
}

// TestAdmissionPolicyFollowsTheClustersKubernetesVersion: ValidatingAdmissionPolicy v1 is
// GA in Kubernetes 1.30; on an older spoke a manifest of that kind would fail the whole
// ManifestWork, so the chart leaves the agent's policy out there (the agent says so on its
// ArgoCDCRDsInstalled condition). The addon framework gives the chart the version the
// ManagedCluster reports.
func TestAdmissionPolicyFollowsTheClustersKubernetesVersion(t *testing.T) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(contract.ArgoCDGVK, &unstructured.Unstructured{})
	for _, tc := range []struct {
		kubeVersion string
		want        bool
	}{
		{"v1.35.4", true},
		{"v1.30.0", true},
		{"v1.30.0-rc.1", true},
		{"v1.30.14+e5b6f0a", true}, // OpenShift 4.17 reports a build suffix
		{"v1.29.6", false},
		{"v1.29.10+67d3387", false}, // OpenShift 4.16
		{"v1.27.16", false},
		{"", true}, // not reported yet: a current cluster
	} {
		t.Run(tc.kubeVersion, func(t *testing.T) {
			objects, err := frameworkManifestsFor(t, scheme, tc.kubeVersion, addonfactory.Values{})
			require.NoError(t, err)
			seen := kindsAndNames(t, objects)
			assert.Equal(t, tc.want, seen["ValidatingAdmissionPolicy/gitops-addon-agent-crds"], "the policy")
			assert.Equal(t, tc.want, seen["ValidatingAdmissionPolicyBinding/gitops-addon-agent-crds"], "its binding")
			assert.Equal(t, tc.want, seen["ValidatingAdmissionPolicy/gitops-addon-agent-applications"], "the Applications policy")
			assert.Equal(t, tc.want, seen["Role/gitops-addon:agent:resource-summary"], "the Applications patch right comes only with its policy")
			assert.Equal(t, tc.want, seen["ValidatingAdmissionPolicy/gitops-addon-agent-secrets"], "the Secrets policy")
			assert.True(t, seen["Deployment/"+contract.AgentDeployment], "the rest is rendered alike")
		})
	}
}
