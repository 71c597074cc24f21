package hubmetrics

import (
	"context"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// collectTimeout bounds what a scrape waits for a cache (one not synced yet blocks):
// below Prometheus's default scrape timeout of 10 s, so that the other metrics are served.
const collectTimeout = 5 * time.Second

// sources are what a collector reads at scrape time: one per running manager (tests run
// several in one process, which shares controller-runtime's registry), none on a replica
// that does not lead, so that only the leader reports the gauges.
type sources[T any] struct {
	mu   sync.Mutex
	next int
	byID map[int]T
}

// while adds a source until ctx is done.
func (s *sources[T]) while(ctx context.Context, v T) {
	remove := s.add(v)
	<-ctx.Done()
	remove()
}

func (s *sources[T]) add(v T) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[int]T{}
	}
	id := s.next
	s.next++
	s.byID[id] = v
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.byID, id)
	}
}

func (s *sources[T]) snapshot() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.byID))
	for _, v := range s.byID {
		out = append(out, v)
	}
	return out
}

// runnable serves a source while the manager runs it; a RunnableFunc needs leader
// election, so it runs on the leader only.
func runnable[T any](s *sources[T], v T) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		s.while(ctx, v)
		return nil
	})
}

// collectContext is the context of one scrape's reads.
func collectContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), collectTimeout)
}

// logCollectError says why a gauge is missing from a scrape: a collector that fails would
// fail the whole scrape (controller-runtime serves with HTTPErrorOnError), so it reports
// nothing instead.
func logCollectError(err error, metric string) {
	ctrl.Log.WithName("metrics").Error(err, "not serving a metric in this scrape", "metric", metric)
}
