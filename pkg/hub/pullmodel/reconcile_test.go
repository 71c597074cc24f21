package pullmodel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readerCache serves the reconciler's cache reads from a client.
type readerCache struct {
	cache.Cache
	reader client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c readerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}

// TestCreateSchedulesTheApplyTimeoutCheck: the reconcile that creates a ManifestWork
// remembers the create (its watch echo wakes nothing) and so schedules, itself, the check
// of the apply timeout that the echo's reconcile scheduled before; the next reconcile,
// which sees the work pending, schedules it for what is left.
func TestCreateSchedulesTheApplyTimeoutCheck(t *testing.T) {
	r, c, app := fakeHubReconciler(t)
	now := r.Now().Time
	r.Now = func() metav1.Time { return metav1.NewTime(now) }
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)}

	res, err := r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, res.RequeueAfter, "the create schedules the apply-timeout check")
	works := &workv1.ManifestWorkList{}
	require.NoError(t, c.List(context.Background(), works))
	require.Len(t, works.Items, 1)
	assert.Equal(t, "cluster1", works.Items[0].Namespace)

	// A minute later another reconcile (a status report, say) sees the work pending since
	// it was shipped and schedules what is left.
	now = now.Add(time.Minute)
	res, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 4*time.Minute, res.RequeueAfter)
	assert.Empty(t, r.creates.versions, "a reconcile that read the work forgets its create")
}
