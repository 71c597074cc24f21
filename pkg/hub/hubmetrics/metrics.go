// Package hubmetrics defines the hub manager's own Prometheus metrics, every one named
// gitops_addon_*, and registers them on controller-runtime's registry: the manager's
// metrics endpoint serves them beside controller-runtime's workqueue, reconcile and
// client metrics, which are not duplicated here. The latency histograms are observed by
// the controller that sees a latency end; the gauges are computed at scrape time from the
// caches of the leader, through the sources it adds while it runs (ReportClusters,
// ReportPullStatus), so that nothing polls the apiserver for them. No metric has a label
// per Application or per cluster: their number of series does not grow with the fleet.
package hubmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The names of the metrics, as served.
const (
	PullPropagation   = "gitops_addon_pull_propagation_seconds"
	PullStatusReturn  = "gitops_addon_pull_status_return_seconds"
	PullApplications  = "gitops_addon_pull_applications"
	PullStatusMaxAge  = "gitops_addon_pull_status_max_age_seconds"
	PullStaleStatuses = "gitops_addon_pull_stale_statuses"
	Clusters          = "gitops_addon_clusters"
)

// Names are the names of every metric of this package, for the tests that check the
// documentation and the dashboard name them all.
func Names() []string {
	return []string{PullPropagation, PullStatusReturn, PullApplications, PullStatusMaxAge, PullStaleStatuses, Clusters}
}

// LatencyBuckets are the upper bounds of the latency histograms: 64 buckets from 10 ms to
// 15 min, each about 1.2 times the one below. histogram_quantile interpolates linearly
// inside a bucket, so a p50 or p99 it reports is within 20 % of the true one anywhere in
// that range; 64 series per histogram, whatever the fleet.
var LatencyBuckets = prometheus.ExponentialBucketsRange(0.01, 900, 64)

var (
	pullPropagation = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: PullPropagation,
		Help: "Seconds from the manager seeing a change of a pulled hub Application (or shipping its ManifestWork, when it saw " +
			"none) to the work agent reporting that ManifestWork Applied; one observation per ManifestWork spec applied.",
		Buckets: LatencyBuckets,
	})
	pullStatusReturn = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: PullStatusReturn,
		Help: "Seconds from the same start as " + PullPropagation + " to the hub Application holding the first spoke status " +
			"reported after that apply; one observation per applied change whose new status reaches the hub.",
		Buckets: LatencyBuckets,
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(pullPropagation, pullStatusReturn, clusters, pullStatus)
}

// ObservePullPropagation records the propagation of one change of a pulled Application
// (a negative duration, from clocks of two replicas, counts as 0).
func ObservePullPropagation(d time.Duration) { pullPropagation.Observe(max(d, 0).Seconds()) }

// ObservePullStatusReturn records the round trip of one change of a pulled Application
// until the spoke's status after it is on the hub.
func ObservePullStatusReturn(d time.Duration) { pullStatusReturn.Observe(max(d, 0).Seconds()) }
