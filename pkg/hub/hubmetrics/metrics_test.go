package hubmetrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// TestLatencyBucketsResolveQuantilesWithin20Percent: from tens of milliseconds to
// minutes, no bucket is more than 1.2 times the one below, so a quantile interpolated
// inside one is off by less than 20 %.
func TestLatencyBucketsResolveQuantilesWithin20Percent(t *testing.T) {
	require.Len(t, LatencyBuckets, 64)
	assert.InDelta(t, 0.01, LatencyBuckets[0], 1e-9)
	assert.InDelta(t, 900, LatencyBuckets[len(LatencyBuckets)-1], 1e-6)
	for i := 1; i < len(LatencyBuckets); i++ {
		assert.LessOrEqual(t, LatencyBuckets[i]/LatencyBuckets[i-1], 1.2, "bucket %d", i)
	}
}

// TestEveryMetricIsOnControllerRuntimesRegistry: the manager's endpoint serves
// controller-runtime's registry; every metric of Names is registered there, under the
// one prefix.
func TestEveryMetricIsOnControllerRuntimesRegistry(t *testing.T) {
	descs := make(chan *prometheus.Desc, 16)
	for _, c := range []prometheus.Collector{pullPropagation, pullStatusReturn, clusters, pullStatus} {
		c.Describe(descs)
		assert.False(t, ctrlmetrics.Registry.Register(c) == nil, "%T is already registered, so registering it again fails", c)
	}
	close(descs)
	var described []string
	for d := range descs {
		described = append(described, strings.Split(strings.TrimPrefix(d.String(), `Desc{fqName: "`), `"`)[0])
	}
	assert.ElementsMatch(t, Names(), described)
	for _, name := range Names() {
		assert.True(t, strings.HasPrefix(name, "gitops_addon_"), name)
	}
}

func TestObserveLatencies(t *testing.T) {
	tests := []struct {
		name    string
		observe func(time.Duration)
		h       prometheus.Histogram
	}{
		{"propagation", ObservePullPropagation, pullPropagation},
		{"status return", ObservePullStatusReturn, pullStatusReturn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := histogram(t, tt.h)
			tt.observe(1500 * time.Millisecond)
			tt.observe(-time.Second) // two replicas' clocks: counted as 0
			after := histogram(t, tt.h)
			assert.Equal(t, before.GetSampleCount()+2, after.GetSampleCount())
			assert.InDelta(t, before.GetSampleSum()+1.5, after.GetSampleSum(), 1e-9)
			assert.Equal(t, before.GetBucket()[0].GetCumulativeCount()+1, after.GetBucket()[0].GetCumulativeCount(),
				"the negative one is in the lowest bucket")
		})
	}
}

func histogram(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	m := &dto.Metric{}
	require.NoError(t, h.Write(m))
	return m.GetHistogram()
}

func TestAddonHealth(t *testing.T) {
	tests := []struct {
		name   string
		status *metav1.ConditionStatus
		want   string
	}{
		{"no Available condition yet", nil, HealthUnknown},
		{"Available", ptr(metav1.ConditionTrue), HealthAvailable},
		{"not Available", ptr(metav1.ConditionFalse), HealthUnavailable},
		{"lease lost", ptr(metav1.ConditionUnknown), HealthUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AddonHealth(addon("cluster1", contract.AddonName, tt.status)))
		})
	}
}

func TestClustersByAddonHealth(t *testing.T) {
	objects := []client.Object{
		addon("c1", contract.AddonName, ptr(metav1.ConditionTrue)),
		addon("c2", contract.AddonName, ptr(metav1.ConditionTrue)),
		addon("c3", contract.AddonName, ptr(metav1.ConditionFalse)),
		addon("c4", contract.AddonName, nil),
		addon("c1", "another-addon", ptr(metav1.ConditionFalse)),
	}
	tests := []struct {
		name    string
		readers []client.Reader
		want    string
	}{
		{name: "no source (not the leader): nothing served"},
		{name: "one manager", readers: []client.Reader{fakeReader(t, objects...)}, want: `
			# HELP gitops_addon_clusters Managed clusters with a ManagedClusterAddOn gitops-addon, by the status of its Available condition.
			# TYPE gitops_addon_clusters gauge
			gitops_addon_clusters{health="available"} 2
			gitops_addon_clusters{health="unavailable"} 1
			gitops_addon_clusters{health="unknown"} 1
		`},
		{name: "no cluster yet: every health served, at 0", readers: []client.Reader{fakeReader(t)}, want: `
			# HELP gitops_addon_clusters Managed clusters with a ManagedClusterAddOn gitops-addon, by the status of its Available condition.
			# TYPE gitops_addon_clusters gauge
			gitops_addon_clusters{health="available"} 0
			gitops_addon_clusters{health="unavailable"} 0
			gitops_addon_clusters{health="unknown"} 0
		`},
		{name: "a cache that fails: nothing served, the scrape goes on", readers: []client.Reader{fakeReader(t, objects...), failingReader(t)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClusterCollector()
			for _, r := range tt.readers {
				defer c.sources.add(r)()
			}
			if tt.want == "" {
				assert.Zero(t, testutil.CollectAndCount(c))
				return
			}
			assert.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(tt.want), Clusters))
		})
	}
}

func TestPullStatusGauges(t *testing.T) {
	ages := func(ds ...time.Duration) PullStatusAges {
		return func(context.Context, time.Time) ([]time.Duration, error) { return ds, nil }
	}
	failing := func(context.Context, time.Time) ([]time.Duration, error) { return nil, errors.New("cache not started") }
	tests := []struct {
		name    string
		sources []pullStatusSource
		want    string
	}{
		{name: "no source (the pull model not running here): nothing served"},
		{name: "current, recent and stale statuses", sources: []pullStatusSource{{ages: ages(0, 30*time.Second, 11*time.Minute, time.Hour), staleAfter: 10 * time.Minute}},
			want: gauges(4, 3600, 2)},
		{name: "exactly at the bound is not stale", sources: []pullStatusSource{{ages: ages(10 * time.Minute), staleAfter: 10 * time.Minute}},
			want: gauges(1, 600, 0)},
		{name: "no pulled Application", sources: []pullStatusSource{{ages: ages(), staleAfter: time.Minute}}, want: gauges(0, 0, 0)},
		{name: "two managers in one process add up", sources: []pullStatusSource{
			{ages: ages(2 * time.Minute), staleAfter: time.Minute}, {ages: ages(0, 90*time.Second), staleAfter: 5 * time.Minute}},
			want: gauges(3, 120, 1)},
		{name: "a source that fails: nothing served", sources: []pullStatusSource{{ages: ages(time.Hour)}, {ages: failing}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newPullStatusCollector(time.Now)
			for _, s := range tt.sources {
				defer c.sources.add(s)()
			}
			if tt.want == "" {
				assert.Zero(t, testutil.CollectAndCount(c))
				return
			}
			assert.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(tt.want), PullApplications, PullStatusMaxAge, PullStaleStatuses))
		})
	}
}

// TestSourcesFollowTheRunnable: a source serves while its runnable runs, and no longer.
func TestSourcesFollowTheRunnable(t *testing.T) {
	s := &sources[int]{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, runnable(s, 7).Start(ctx))
	}()
	require.Eventually(t, func() bool { return len(s.snapshot()) == 1 }, 5*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	assert.Empty(t, s.snapshot())
}

func gauges(applications int, maxAgeSeconds float64, stale int) string {
	return strings.NewReplacer("APPS", fmt.Sprint(applications), "AGE", fmt.Sprint(maxAgeSeconds), "STALE", fmt.Sprint(stale)).Replace(`
		# HELP gitops_addon_pull_applications Pulled hub Applications: the pull ManifestWorks on the hub, not being deleted.
		# TYPE gitops_addon_pull_applications gauge
		gitops_addon_pull_applications APPS
		# HELP gitops_addon_pull_stale_statuses Pulled Applications whose status on the hub is older than --pull-status-stale-after.
		# TYPE gitops_addon_pull_stale_statuses gauge
		gitops_addon_pull_stale_statuses STALE
		# HELP gitops_addon_pull_status_max_age_seconds Age of the stalest status the hub holds for a pulled Application: how long ago the work agent was last known to report it (0 while its cluster is Available and its ManifestWork's current spec is applied).
		# TYPE gitops_addon_pull_status_max_age_seconds gauge
		gitops_addon_pull_status_max_age_seconds AGE
	`)
}

func addon(cluster, name string, available *metav1.ConditionStatus) *addonv1beta1.ManagedClusterAddOn {
	a := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
	if available != nil {
		a.Status.Conditions = []metav1.Condition{{Type: addonv1beta1.ManagedClusterAddOnConditionAvailable, Status: *available, Reason: "Test"}}
	}
	return a
}

func fakeReader(t *testing.T, objects ...client.Object) client.Reader {
	return fakeBuilder(t).WithObjects(objects...).Build()
}

func failingReader(t *testing.T) client.Reader {
	return fakeBuilder(t).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("the cache is not synced")
		},
	}).Build()
}

func fakeBuilder(t *testing.T) *fake.ClientBuilder { return fixtures.FakeHub(t) }

func ptr[T any](v T) *T { return &v }
