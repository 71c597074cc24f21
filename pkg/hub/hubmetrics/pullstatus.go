package hubmetrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// PullStatusAges returns, for every pulled Application, how old the status the hub holds
// for it is at now; the pull model computes them from its caches.
type PullStatusAges func(ctx context.Context, now time.Time) ([]time.Duration, error)

type pullStatusSource struct {
	ages       PullStatusAges
	staleAfter time.Duration
}

var pullStatus = newPullStatusCollector(time.Now)

// pullStatusCollector serves the gauges of the pulled Applications' status from the
// ages its sources compute at scrape time.
type pullStatusCollector struct {
	sources                     sources[pullStatusSource]
	now                         func() time.Time
	applications, maxAge, stale *prometheus.Desc
}

func newPullStatusCollector(now func() time.Time) *pullStatusCollector {
	return &pullStatusCollector{
		now: now,
		applications: prometheus.NewDesc(PullApplications,
			"Pulled hub Applications: the pull ManifestWorks on the hub, not being deleted.", nil, nil),
		maxAge: prometheus.NewDesc(PullStatusMaxAge,
			"Age of the stalest status the hub holds for a pulled Application: how long ago the work agent was last known "+
				"to report it (0 while its cluster is Available and its ManifestWork's current spec is applied).", nil, nil),
		stale: prometheus.NewDesc(PullStaleStatuses,
			"Pulled Applications whose status on the hub is older than --pull-status-stale-after.", nil, nil),
	}
}

// ReportPullStatus serves the pull status gauges from ages while the manager runs (the
// pull model adds it once it starts, on the leader); staleAfter is the bound of
// gitops_addon_pull_stale_statuses.
func ReportPullStatus(ages PullStatusAges, staleAfter time.Duration) manager.Runnable {
	return runnable(&pullStatus.sources, pullStatusSource{ages: ages, staleAfter: staleAfter})
}

func (c *pullStatusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.applications
	ch <- c.maxAge
	ch <- c.stale
}

func (c *pullStatusCollector) Collect(ch chan<- prometheus.Metric) {
	srcs := c.sources.snapshot()
	if len(srcs) == 0 {
		return
	}
	var s statusSummary
	now := c.now()
	for _, src := range srcs {
		if err := s.add(src, now); err != nil {
			logCollectError(err, PullStatusMaxAge)
			return
		}
	}
	ch <- prometheus.MustNewConstMetric(c.applications, prometheus.GaugeValue, float64(s.applications))
	ch <- prometheus.MustNewConstMetric(c.maxAge, prometheus.GaugeValue, s.maxAge.Seconds())
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, float64(s.stale))
}

// statusSummary is what the gauges say of the ages of every source.
type statusSummary struct {
	applications, stale int
	maxAge              time.Duration
}

func (s *statusSummary) add(src pullStatusSource, now time.Time) error {
	ctx, cancel := collectContext()
	defer cancel()
	ages, err := src.ages(ctx, now)
	if err != nil {
		return fmt.Errorf("computing the age of the pulled Applications' status: %w", err)
	}
	for _, age := range ages {
		s.applications++
		s.maxAge = max(s.maxAge, age)
		if age > src.staleAfter {
			s.stale++
		}
	}
	return nil
}
