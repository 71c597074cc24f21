package addon

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// countingAddon renders one ConfigMap carrying the cluster's label "env" and counts renders.
type countingAddon struct {
	agent.AgentAddon
	renders int
}

func (c *countingAddon) Manifests(_ context.Context, cluster *clusterv1.ManagedCluster, _ *addonv1beta1.ManagedClusterAddOn) ([]runtime.Object, error) {
	c.renders++
	return []runtime.Object{&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"},
		Data:       map[string]string{"env": cluster.Labels["env"]},
	}}, nil
}

func TestManifestsAreRenderedAgainOnlyWhenTheirInputsChange(t *testing.T) {
	inner := &countingAddon{}
	a := &gitopsAddon{AgentAddon: inner, memo: newRenderMemo()}
	ctx := context.Background()
	cluster := vanilla()
	cluster.Labels = map[string]string{"env": "prod"}
	addon := mca("", nil, "")

	render := func() *corev1.ConfigMap {
		objects, err := a.Manifests(ctx, cluster, addon)
		require.NoError(t, err)
		require.Len(t, objects, 1)
		return objects[0].(*corev1.ConfigMap)
	}
	first := render()
	first.Data["env"] = "changed by the caller"
	assert.Equal(t, "prod", render().Data["env"], "a caller's change never reaches the next render")
	assert.Equal(t, 1, inner.renders, "same inputs: served from the memo")

	changes := []struct {
		name   string
		change func()
	}{
		{"a cluster label", func() { cluster.Labels["env"] = "staging" }},
		{"a cluster annotation (image registries)", func() { cluster.Annotations = map[string]string{"open-cluster-management.io/image-registries": "{}"} }},
		{"a cluster claim (flavour)", func() {
			cluster.Status.ClusterClaims = append(cluster.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: "product.open-cluster-management.io", Value: "OpenShift"})
		}},
		{"an addon annotation (images)", func() {
			addon.Annotations = map[string]string{"gitops-addon.open-cluster-management.io/argocd-image": "x"}
		}},
		{"the AddOnDeploymentConfig's spec hash", func() {
			addon.Status.ConfigReferences = []addonv1beta1.ConfigReference{{ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
				DesiredConfig: &addonv1beta1.ConfigSpecHash{ConfigReferent: addonv1beta1.ConfigReferent{Namespace: "c1", Name: "cfg"}, SpecHash: "abc"}}}
		}},
		{"the install namespace", func() { addon.Status.Namespace = "elsewhere" }},
	}
	for i, c := range changes {
		c.change()
		render()
		assert.Equal(t, i+2, inner.renders, "%s changed: rendered again", c.name)
		render()
		assert.Equal(t, i+2, inner.renders, "%s unchanged since: served from the memo", c.name)
	}
}

func TestRenderMemoStaysBounded(t *testing.T) {
	inner := &countingAddon{}
	a := &gitopsAddon{AgentAddon: inner, memo: newRenderMemo()}
	for i := range maxRememberedRenders + 10 {
		addon := mca("", nil, "")
		addon.Namespace = "cluster-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		_, err := a.Manifests(context.Background(), vanilla(), addon)
		require.NoError(t, err)
	}
	assert.Equal(t, maxRememberedRenders, a.memo.entries.Len())
}

func TestRenderMemoKeepsTheMostRecentlyUsed(t *testing.T) {
	inner := &countingAddon{}
	a := &gitopsAddon{AgentAddon: inner, memo: newRenderMemo()}
	renderCluster := func(i int) {
		addon := mca("", nil, "")
		addon.Namespace = fmt.Sprintf("cluster-%d", i)
		_, err := a.Manifests(context.Background(), vanilla(), addon)
		require.NoError(t, err)
	}
	renderCluster(0)
	for i := 1; i <= maxRememberedRenders; i++ {
		renderCluster(0) // used again and again: never the one evicted
		renderCluster(i)
	}
	before := inner.renders
	renderCluster(0)
	assert.Equal(t, before, inner.renders, "the most recently used render is still remembered")
	renderCluster(1)
	assert.Equal(t, before+1, inner.renders, "the least recently used one was evicted")
}
