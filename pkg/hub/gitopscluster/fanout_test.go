package gitopscluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func clusterNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cluster-%03d", i)
	}
	return names
}

func TestForEachCluster(t *testing.T) {
	t.Run("results in the clusters' order, concurrently but bounded", func(t *testing.T) {
		var inFlight, peak atomic.Int32
		// Each write holds until clusterWriters are under way at once (then none holds):
		// a fan-out that ran fewer at a time would leave them holding, and fail below.
		full, fullOnce := make(chan struct{}), sync.Once{}
		clusters := clusterNames(100)
		results, err := forEachCluster(context.Background(), clusters, func(_ context.Context, cluster string) (string, error) {
			now := inFlight.Add(1)
			defer inFlight.Add(-1)
			for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
			}
			if now == clusterWriters {
				fullOnce.Do(func() { close(full) })
			}
			select {
			case <-full:
			case <-time.After(10 * time.Second): // not a pause: the bound on a fan-out that never fills
				fullOnce.Do(func() { close(full) })
			}
			return "done " + cluster, nil
		})
		require.NoError(t, err)
		for i, cluster := range clusters {
			assert.Equal(t, "done "+cluster, results[i])
		}
		assert.Equal(t, int32(clusterWriters), peak.Load(), "clusterWriters clusters are written at once, never more")
	})
	t.Run("the first error is returned and cancels the clusters not started", func(t *testing.T) {
		var started atomic.Int32
		boom := errors.New("apiserver said no")
		_, err := forEachCluster(context.Background(), clusterNames(1000), func(ctx context.Context, cluster string) (int, error) {
			started.Add(1)
			if cluster == "cluster-000" {
				return 0, boom
			}
			<-ctx.Done()
			return 0, ctx.Err()
		})
		require.ErrorIs(t, err, boom)
		assert.Less(t, started.Load(), int32(1000), "once one cluster failed, the rest were not all attempted")
	})
	t.Run("no clusters", func(t *testing.T) {
		results, err := forEachCluster(context.Background(), nil, func(context.Context, string) (int, error) { return 1, nil })
		require.NoError(t, err)
		assert.Empty(t, results)
	})
}
