package gitopscluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

func TestCachedManagedClustersKeepOnlyWhatTheManagerReads(t *testing.T) {
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Generation: 3, Labels: map[string]string{"env": "prod"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "registration"}}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60,
			ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: "https://c1.example.com:6443", CABundle: make([]byte, 2048)}}},
		Status: clusterv1.ManagedClusterStatus{
			ClusterClaims: []clusterv1.ManagedClusterClaim{{Name: "product.open-cluster-management.io", Value: "OpenShift"},
				{Name: "id.k8s.io", Value: "5d1e0c2a"}},
			Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue},
				{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue}},
		},
	}
	slimmed, err := slimManagedCluster(mc)
	require.NoError(t, err)
	got := slimmed.(*clusterv1.ManagedCluster)
	assert.Equal(t, map[string]string{"env": "prod"}, got.Labels, "labels go into the Argo CD cluster Secret")
	assert.Equal(t, int64(3), got.Generation, "generation drives the controller's predicate")
	assert.Equal(t, "https://c1.example.com:6443", clusterServer(got), "the Secret's server URL")
	assert.Empty(t, got.Spec.ManagedClusterClientConfigs[0].CABundle)
	assert.Equal(t, []clusterv1.ManagedClusterClaim{{Name: "id.k8s.io", Value: "5d1e0c2a"}}, got.Status.ClusterClaims,
		"the cluster ID alone: it tells the hub itself")
	assert.True(t, got.Spec.HubAcceptsClient, "the pull model says when the hub does not accept a cluster")
	require.Len(t, got.Status.Conditions, 1, "the Available condition alone: the pull model names an unavailable cluster")
	assert.Equal(t, clusterv1.ManagedClusterConditionAvailable, got.Status.Conditions[0].Type)
	assert.Empty(t, got.ManagedFields)
}
