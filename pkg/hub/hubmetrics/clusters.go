package hubmetrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// The values of gitops_addon_clusters' health label: the status of the Available
// condition OCM keeps on a cluster's ManagedClusterAddOn gitops-addon (from the agent's
// lease).
const (
	HealthAvailable   = "available"
	HealthUnavailable = "unavailable"
	// HealthUnknown: Unknown, or no Available condition yet (the agent never reported).
	HealthUnknown = "unknown"
)

// healths are the label's values, every one served (0 included) so that a dashboard's
// series do not come and go.
var healths = []string{HealthAvailable, HealthUnavailable, HealthUnknown}

// AddonHealth is the health label of a ManagedClusterAddOn.
func AddonHealth(a *addonv1beta1.ManagedClusterAddOn) string {
	c := meta.FindStatusCondition(a.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)
	switch {
	case c == nil:
		return HealthUnknown
	case c.Status == metav1.ConditionTrue:
		return HealthAvailable
	case c.Status == metav1.ConditionFalse:
		return HealthUnavailable
	default:
		return HealthUnknown
	}
}

var clusters = newClusterCollector()

// clusterCollector serves gitops_addon_clusters from the ManagedClusterAddOns its
// sources hold.
type clusterCollector struct {
	sources sources[client.Reader]
	desc    *prometheus.Desc
}

func newClusterCollector() *clusterCollector {
	return &clusterCollector{desc: prometheus.NewDesc(Clusters,
		"Managed clusters with a ManagedClusterAddOn gitops-addon, by the status of its Available condition.",
		[]string{"health"}, nil)}
}

// ReportClusters serves gitops_addon_clusters from r (the manager's cache, which holds
// the ManagedClusterAddOns gitops-addon) while the manager runs, on the leader.
func ReportClusters(r client.Reader) manager.Runnable { return runnable(&clusters.sources, r) }

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	readers := c.sources.snapshot()
	if len(readers) == 0 {
		return
	}
	counts := map[string]int{}
	for _, r := range readers {
		if err := countAddons(r, counts); err != nil {
			logCollectError(err, Clusters)
			return
		}
	}
	for _, h := range healths {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[h]), h)
	}
}

// countAddons adds the gitops-addon ManagedClusterAddOns r holds to counts, by health.
func countAddons(r client.Reader, counts map[string]int) error {
	ctx, cancel := collectContext()
	defer cancel()
	list := &addonv1beta1.ManagedClusterAddOnList{}
	// Read only, so the cache's objects are not copied at every scrape.
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing ManagedClusterAddOns: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Name == contract.AddonName {
			counts[AddonHealth(&list.Items[i])]++
		}
	}
	return nil
}
