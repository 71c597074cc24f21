package gitopscluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

func labelled(labels map[string]string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: labels}}
}

func TestClusterSecretCarriesTheClusterLabelsButOCMsAddonHealth(t *testing.T) {
	mc := labelled(map[string]string{
		"env": "prod", "cloud": "AWS",
		"feature.open-cluster-management.io/addon-gitops-addon": "available",
		"feature.open-cluster-management.io/addon-work-manager": "unhealthy",
		"cluster.open-cluster-management.io/clusterset":         "default",
	})
	gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: "gc"}}
	gc.Spec.ArgoServer.ArgoNamespace = "openshift-gitops"
	labels := desiredClusterSecret(gc, mc).Labels
	assert.Equal(t, "prod", labels["env"])
	assert.Equal(t, "default", labels["cluster.open-cluster-management.io/clusterset"])
	assert.NotContains(t, labels, "feature.open-cluster-management.io/addon-gitops-addon")
	assert.NotContains(t, labels, "feature.open-cluster-management.io/addon-work-manager")
}

func TestOnlyCopiedLabelChangesWakeTheController(t *testing.T) {
	base := map[string]string{"env": "prod", "feature.open-cluster-management.io/addon-gitops-addon": "available"}
	tests := []struct {
		name    string
		updated map[string]string
		want    bool
	}{
		{"OCM flips an addon's health", map[string]string{"env": "prod", "feature.open-cluster-management.io/addon-gitops-addon": "unreachable"}, false},
		{"nothing changed (a status or lease update)", base, false},
		{"a user label changed", map[string]string{"env": "staging", "feature.open-cluster-management.io/addon-gitops-addon": "available"}, true},
		{"a user label added", map[string]string{"env": "prod", "team": "a", "feature.open-cluster-management.io/addon-gitops-addon": "available"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := copiedLabelsChanged().Update(event.UpdateEvent{ObjectOld: labelled(base), ObjectNew: labelled(tt.updated)})
			assert.Equal(t, tt.want, got)
		})
	}
}
