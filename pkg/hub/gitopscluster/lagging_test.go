package gitopscluster

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// TestALaggingCacheDoesNotMakeCreatesRepeat: while the cache does not show the
// ManagedClusterAddOns and Secrets created by the previous reconcile, the next reconcile
// does not send their creates again.
func TestALaggingCacheDoesNotMakeCreatesRepeat(t *testing.T) {
	gc := gitOpsCluster("gc", "p", true)
	var creates atomic.Int32
	lagging := interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*addonv1beta1.ManagedClusterAddOn); ok {
				return apierrors.NewNotFound(schema.GroupResource{Group: "addon.open-cluster-management.io", Resource: "managedclusteraddons"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*addonv1beta1.ManagedClusterAddOn); ok {
				creates.Add(1)
			}
			return c.Create(ctx, obj, opts...)
		},
	}
	c := fixtures.FakeHub(t, append(placementObjects("p", "c1", "c2"), gc)...).WithInterceptorFuncs(lagging).Build()
	r := &Reconciler{Client: c, APIReader: c}
	for range 3 {
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
		require.NoError(t, err)
	}
	assert.Equal(t, int32(2), creates.Load(), "one create per cluster, however often the reconcile runs before the cache catches up")
}
