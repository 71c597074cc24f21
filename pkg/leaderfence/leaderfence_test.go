package leaderfence

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const me = "replica-a_1234"

// fakeLock is a Lease lock whose writes succeed or fail as told.
type fakeLock struct {
	resourcelock.Interface
	fail error
}

func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.fail }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.fail }
func (l *fakeLock) Identity() string                                                { return me }

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newFence() (*Fence, *clock, *fakeLock, resourcelock.Interface) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	f := New(me, 10*time.Second)
	f.now = c.now
	inner := &fakeLock{}
	return f, c, inner, f.Lock(inner)
}

// TestFenceHoldsOnlyWithinTheRenewDeadline: the fence opens with this replica's acquisition
// or renewal, stays open for the renew deadline from when the renewal was sent, and closes
// on a release; a failed renewal or another replica's record teaches it nothing.
func TestFenceHoldsOnlyWithinTheRenewDeadline(t *testing.T) {
	ours := resourcelock.LeaderElectionRecord{HolderIdentity: me}
	tests := []struct {
		name string
		// steps run in order against the lock and the clock.
		steps func(t *testing.T, lock resourcelock.Interface, inner *fakeLock, c *clock)
		want  bool
	}{
		{name: "never acquired", steps: func(*testing.T, resourcelock.Interface, *fakeLock, *clock) {}, want: false},
		{name: "acquired just now", steps: func(t *testing.T, lock resourcelock.Interface, _ *fakeLock, _ *clock) {
			require.NoError(t, lock.Create(context.Background(), ours))
		}, want: true},
		{name: "renewed 9.9 s ago", steps: func(t *testing.T, lock resourcelock.Interface, _ *fakeLock, c *clock) {
			require.NoError(t, lock.Update(context.Background(), ours))
			c.t = c.t.Add(9900 * time.Millisecond)
		}, want: true},
		{name: "renewed 10 s ago: frozen past the deadline", steps: func(t *testing.T, lock resourcelock.Interface, _ *fakeLock, c *clock) {
			require.NoError(t, lock.Update(context.Background(), ours))
			c.t = c.t.Add(10 * time.Second)
		}, want: false},
		{name: "the renewal failed", steps: func(t *testing.T, lock resourcelock.Interface, inner *fakeLock, c *clock) {
			require.NoError(t, lock.Update(context.Background(), ours))
			c.t = c.t.Add(8 * time.Second)
			inner.fail = errors.New("conflict")
			require.Error(t, lock.Update(context.Background(), ours))
			c.t = c.t.Add(3 * time.Second)
		}, want: false},
		{name: "released on shutdown", steps: func(t *testing.T, lock resourcelock.Interface, _ *fakeLock, _ *clock) {
			require.NoError(t, lock.Update(context.Background(), ours))
			require.NoError(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{}))
		}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c, inner, lock := newFence()
			tt.steps(t, lock, inner, c)
			holds, _ := f.Holds()
			assert.Equal(t, tt.want, holds)
		})
	}
}

// TestGuardRefusesWritesUnlessLeading: through a real client-go clientset, reads always
// reach the apiserver and writes only while the fence holds; a refused write never leaves
// the process and says why.
func TestGuardRefusesWritesUnlessLeading(t *testing.T) {
	var served atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"}}`))
	}))
	defer server.Close()
	f, c, _, lock := newFence()
	cs, err := kubernetes.NewForConfig(f.Guard(&rest.Config{Host: server.URL}))
	require.NoError(t, err)
	ctx := context.Background()
	write := func() error {
		_, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		return err
	}
	read := func() error {
		_, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, "x", metav1.GetOptions{})
		return err
	}

	require.NoError(t, read(), "a replica that does not lead reads")
	_, err = cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
	require.NoError(t, err, "and asks the apiserver questions (reviews store nothing)")
	served.Store(1)
	err = write()
	var refused *NotLeadingError
	require.ErrorAs(t, err, &refused, "a replica that never led does not write")
	assert.Contains(t, err.Error(), "POST /api/v1/namespaces/ns/configmaps: this replica does not lead")
	assert.EqualValues(t, 1, served.Load(), "the refused write never reached the server")

	require.NoError(t, lock.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: me}))
	require.NoError(t, write(), "the leader writes")

	c.t = c.t.Add(42 * time.Second) // frozen
	err = write()
	require.ErrorAs(t, err, &refused, "a leader frozen past its renew deadline does not write")
	assert.Contains(t, err.Error(), "last renewed its leader Lease 42s ago")
	require.NoError(t, read())
	assert.EqualValues(t, 3, served.Load())
}
