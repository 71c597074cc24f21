package addon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// maxPayloadBytes is what one cluster's objects may take on the hub, as compact JSON,
// in its ManifestWork: a few KiB per cluster keeps a 3,000-cluster hub's etcd far from
// its quota. The ManifestWork around the objects adds about 1 KiB (metadata, delete
// options, manifest configs).
const maxPayloadBytes = 31 * 1024

// TestPayloadFitsTheBudget renders the largest configuration a cluster can have (every
// AddOnDeploymentConfig knob, image mirrors, extra API groups, OpenShift) and checks the
// objects' JSON stays within the budget.
func TestPayloadFitsTheBudget(t *testing.T) {
	groups := make([]string, 20)
	for i := range groups {
		groups[i] = fmt.Sprintf("group%02d.example.com", i)
	}
	limits := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("2")}
	adcs := fakeADCGetter{"c1/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "cfg"}, Spec: addonv1beta1.AddOnDeploymentConfigSpec{
		CustomizedVariables: []addonv1beta1.CustomizedVariable{
			{Name: VarExtraAPIGroups, Value: strings.Join(groups, ",")},
			{Name: VarGitOpsOperatorImage, Value: "registry.example.com/gitops/operator@sha256:" + strings.Repeat("a", 64)},
			{Name: VarArgoCDImage, Value: "registry.example.com/argoproj/argocd@sha256:" + strings.Repeat("b", 64)},
			{Name: VarRedisImage, Value: "registry.example.com/redis@sha256:" + strings.Repeat("c", 64)},
			{Name: VarAgentLogLevel, Value: "debug"},
		},
		NodePlacement: &addonv1beta1.NodePlacement{
			NodeSelector: map[string]string{"node-role.kubernetes.io/infra": "", "topology.kubernetes.io/zone": "eu-west-1a"},
			Tolerations:  []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
		ProxyConfig: addonv1beta1.ProxyConfig{HTTPProxy: "http://proxy.example.com:3128", HTTPSProxy: "http://proxy.example.com:3128", NoProxy: ".cluster.local,.svc,10.0.0.0/8"},
		Registries:  []addonv1beta1.ImageMirror{{Source: "quay.io", Mirror: "mirror.example.com/quay"}, {Source: "registry.redhat.io", Mirror: "mirror.example.com/redhat"}},
		ResourceRequirements: []addonv1beta1.ContainerResourceRequirements{
			{ContainerID: "deployments:*:*", Resources: corev1.ResourceRequirements{Requests: limits, Limits: limits}},
		},
	}}}
	for name, cluster := range map[string]func() *clusterv1.ManagedCluster{"kubernetes": vanilla, "openshift": openshift} {
		t.Run(name, func(t *testing.T) {
			objects := render(t, Options{AgentImage: "registry.example.com/gitops-addon/gitops-addon:v1.0.0", ADCGetter: adcs}, cluster(), mca("cfg", nil, ""))
			size := 0
			for _, o := range objects {
				raw, err := json.Marshal(o)
				require.NoError(t, err)
				size += len(raw)
			}
			t.Logf("%d objects, %d bytes of JSON", len(objects), size)
			assert.LessOrEqual(t, size, maxPayloadBytes, "a cluster's objects must stay a few KiB on the hub: the CRDs are the agent's to install")
		})
	}
}
