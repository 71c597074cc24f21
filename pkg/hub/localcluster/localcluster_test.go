package localcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const hubID = "9f3c1a2e-0000-4000-8000-000000000001"

func cluster(name string, labels map[string]string, claims ...clusterv1.ManagedClusterClaim) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status:     clusterv1.ManagedClusterStatus{ClusterClaims: claims},
	}
}

func idClaim(id string) clusterv1.ManagedClusterClaim {
	return clusterv1.ManagedClusterClaim{Name: ClaimClusterID, Value: id}
}

func TestOf(t *testing.T) {
	hub := Hub{ID: hubID}
	tests := []struct {
		name    string
		hub     Hub
		cluster *clusterv1.ManagedCluster
		// rules are words each phrase of the evidence has, in order; none: not the hub.
		rules []string
	}{
		{name: "by name", hub: hub, cluster: cluster("local-cluster", nil), rules: []string{"name is local-cluster"}},
		{name: "by label", hub: hub, cluster: cluster("hub-a", map[string]string{"local-cluster": "true"}), rules: []string{"label local-cluster=true"}},
		{name: "by cluster ID under another name", hub: hub, cluster: cluster("hub-a", nil, idClaim(hubID)), rules: []string{"ClusterClaim id.k8s.io is " + hubID}},
		{name: "every rule at once, in order", hub: hub,
			cluster: cluster("local-cluster", map[string]string{"local-cluster": "true"}, idClaim(hubID)),
			rules:   []string{"name is", "label", "ClusterClaim"}},
		{name: "another cluster's ID", hub: hub, cluster: cluster("spoke-1", nil, idClaim("another-uid"))},
		{name: "the label with another value", hub: hub, cluster: cluster("spoke-1", map[string]string{"local-cluster": "false"})},
		{name: "a plain spoke", hub: hub, cluster: cluster("spoke-1", map[string]string{"env": "prod"})},
		{name: "an unknown hub ID matches no claim, even an empty one", hub: Hub{},
			cluster: cluster("spoke-1", nil, idClaim(""))},
		{name: "an unknown hub ID leaves the name rule", hub: Hub{}, cluster: cluster("local-cluster", nil), rules: []string{"name is"}},
		{name: "other claims are not the ID", hub: hub,
			cluster: cluster("spoke-1", nil, clusterv1.ManagedClusterClaim{Name: "id.openshift.io", Value: hubID})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evidence := tt.hub.Of(tt.cluster)
			assert.Equal(t, len(tt.rules) > 0, evidence.IsHub())
			require.Len(t, evidence, len(tt.rules), evidence.String())
			for i, words := range tt.rules {
				assert.Contains(t, evidence[i], words)
			}
		})
	}
}

func TestReadHub(t *testing.T) {
	kubeSystem := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: hubID}}
	failing := func(err error, times int) interceptor.Funcs {
		calls := 0
		return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			calls++
			if calls <= times {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		}}
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "kube-system", errors.New("no RBAC"))
	unavailable := apierrors.NewServiceUnavailable("restarting")
	tests := []struct {
		name        string
		funcs       interceptor.Funcs
		wantID      string
		wantProblem string
	}{
		{name: "the UID of kube-system", wantID: hubID},
		{name: "an apiserver that comes back is retried", funcs: failing(unavailable, 2), wantID: hubID},
		{name: "one that does not: the problem names the fix", funcs: failing(unavailable, 100), wantProblem: "restart the manager"},
		{name: "forbidden: not retried, the problem names the RBAC", funcs: failing(forbidden, 1), wantProblem: "get namespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(kubeSystem).WithInterceptorFuncs(tt.funcs).Build()
			hub := ReadHub(context.Background(), c, wait.Backoff{Duration: time.Millisecond, Steps: 3})
			assert.Equal(t, tt.wantID, hub.ID)
			if tt.wantProblem == "" {
				assert.Empty(t, hub.IDProblem)
				return
			}
			assert.Contains(t, hub.IDProblem, tt.wantProblem)
			assert.Contains(t, hub.IDProblem, "local-cluster=true", "the other way to be recognised")
		})
	}
}
