package gitopscluster

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// clusterWriters bounds the writes one reconcile has in flight across a Placement's
// clusters. Each cluster's write is a round trip (a ManagedClusterAddOn create also calls
// OCM's admission webhook), so one at a time makes a 1,000-cluster Placement wait on
// 1,000 sequential round trips; 16 keeps the apiserver busy without flooding it (the
// client's QPS limit still applies on top).
const clusterWriters = 16

// forEachCluster runs fn for every cluster, at most clusterWriters at once, and returns
// the results in the clusters' order, so whatever is built from them (status messages,
// problems) stays deterministic. The first error cancels the rest and is returned.
func forEachCluster[T any](ctx context.Context, clusters []string, fn func(ctx context.Context, cluster string) (T, error)) ([]T, error) {
	results := make([]T, len(clusters))
	group, ctx := errgroup.WithContext(ctx)
	group.SetLimit(clusterWriters)
	for i, cluster := range clusters {
		if ctx.Err() != nil {
			break // a cluster failed (or the reconcile was cancelled): start no more
		}
		group.Go(func() error {
			result, err := fn(ctx, cluster)
			results[i] = result
			return err
		})
	}
	return results, group.Wait()
}
