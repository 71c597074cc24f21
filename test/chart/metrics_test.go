package chart

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
)

// TestMetricsValues: the ServiceMonitor and the dashboard's ConfigMap are opt-in; turned
// on (with the values docs/operations/metrics.md shows), the ServiceMonitor scrapes the
// metrics Service and the ConfigMap carries the dashboard with Grafana's sidecar label.
func TestMetricsValues(t *testing.T) {
	tests := []struct {
		name           string
		set            []string
		serviceMonitor map[string]string // its labels beyond the chart's, nil when none is rendered
		interval       string
		dashboardNS    string // "" when no dashboard is rendered
		annotations    map[string]string
		wantArg        string
		wantErr        string
	}{
		{name: "off by default", wantArg: "--pull-status-stale-after=10m"},
		{name: "as in docs/operations/metrics.md",
			set:            []string{"metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=kube-prometheus-stack", "metrics.dashboard.enabled=true"},
			serviceMonitor: map[string]string{"release": "kube-prometheus-stack"}, interval: "30s", dashboardNS: "open-cluster-management-addon"},
		{name: "ServiceMonitor only, every minute", set: []string{"metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.interval=1m", "metrics.serviceMonitor.scrapeTimeout=20s"},
			serviceMonitor: map[string]string{}, interval: "1m"},
		{name: "dashboard only, in Grafana's namespace and folder", set: []string{"metrics.dashboard.enabled=true", "metrics.dashboard.namespace=monitoring", "metrics.dashboard.annotations.grafana_folder=GitOps"},
			dashboardNS: "monitoring", annotations: map[string]string{"grafana_folder": "GitOps"}},
		{name: "stale bound", set: []string{"pullModel.statusStaleAfter=1h30m"}, wantArg: "--pull-status-stale-after=1h30m"},
		{name: "a stale bound that is no duration is refused", set: []string{"pullModel.statusStaleAfter=soon"}, wantErr: "statusStaleAfter"},
		{name: "an interval Prometheus cannot read is refused", set: []string{"metrics.serviceMonitor.interval=30"}, wantErr: "interval"},
		{name: "an unknown value is refused", set: []string{"metrics.serviceMonitor.enable=true"}, wantErr: "enable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := render(t, tt.set...)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.wantArg != "" {
				assert.Contains(t, managerArgs(t, objects), tt.wantArg)
			}
			sm, hasSM := objects["ServiceMonitor/gitops-addon-manager"]
			require.Equal(t, tt.serviceMonitor != nil, hasSM, "ServiceMonitor rendered")
			if hasSM {
				checkServiceMonitor(t, sm, objects["Service/gitops-addon-manager-metrics"], objects["Deployment/gitops-addon-manager"], tt.serviceMonitor, tt.interval)
			}
			cm, hasDashboard := objects["ConfigMap/gitops-addon-manager-dashboard"]
			require.Equal(t, tt.dashboardNS != "", hasDashboard, "dashboard ConfigMap rendered")
			if hasDashboard {
				assert.Equal(t, tt.dashboardNS, cm.GetNamespace())
				assert.Equal(t, "1", cm.GetLabels()["grafana_dashboard"], "Grafana's sidecar finds it")
				assert.Equal(t, tt.annotations, cm.GetAnnotations())
				raw, _, _ := unstructured.NestedString(cm.Object, "data", "gitops-addon.json")
				var dashboard map[string]any
				require.NoError(t, json.Unmarshal([]byte(raw), &dashboard), "the ConfigMap holds the dashboard's JSON whole")
				assert.Equal(t, "gitops-addon-manager", dashboard["uid"])
			}
		})
	}
}

// checkServiceMonitor: it selects the metrics Service (and no other of the chart's
// objects by its labels alone), on the Service's named port, with the labels asked for.
func checkServiceMonitor(t *testing.T, sm, service, deployment *unstructured.Unstructured, labels map[string]string, interval string) {
	t.Helper()
	require.NotNil(t, service)
	for k, v := range labels {
		assert.Equal(t, v, sm.GetLabels()[k])
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	require.NotEmpty(t, selector)
	for k, v := range selector {
		assert.Equal(t, v, service.GetLabels()[k], "the ServiceMonitor selects the metrics Service (%s)", k)
	}
	podLabels, _, _ := unstructured.NestedStringMap(deployment.Object, "spec", "template", "metadata", "labels")
	assert.NotEqual(t, podLabels, selector, "the selector is the metrics Service's, not just the pods'")
	namespaces, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	assert.Equal(t, []string{"open-cluster-management-addon"}, namespaces)
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	require.Len(t, endpoints, 1)
	endpoint := endpoints[0].(map[string]any)
	assert.Equal(t, "/metrics", endpoint["path"])
	assert.Equal(t, interval, endpoint["interval"])
	ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
	assert.Equal(t, endpoint["port"], ports[0].(map[string]any)["name"], "the endpoint names the Service's port")
}

// controllerRuntimeMetrics are the controller-runtime metrics the dashboard may query
// (docs/operations/metrics.md lists them).
var controllerRuntimeMetrics = []string{
	"workqueue_depth", "workqueue_queue_duration_seconds_bucket", "controller_runtime_reconcile_total",
	"controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_time_seconds_bucket",
	"controller_runtime_active_workers", "rest_client_requests_total",
}

// metricSelector finds the metric names of a PromQL expression: each is followed by its
// label selector.
var metricSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// TestDashboardQueriesTheServedMetrics: every query of the chart's dashboard names a
// metric the manager serves, each gitops_addon_ metric has a panel, and every panel
// reads the data source the dashboard lets the user pick.
func TestDashboardQueriesTheServedMetrics(t *testing.T) {
	objects, err := render(t, "metrics.dashboard.enabled=true")
	require.NoError(t, err)
	raw, _, _ := unstructured.NestedString(objects["ConfigMap/gitops-addon-manager-dashboard"].Object, "data", "gitops-addon.json")
	var dashboard struct {
		Panels []struct {
			ID         int            `json:"id"`
			Type       string         `json:"type"`
			Title      string         `json:"title"`
			Datasource map[string]any `json:"datasource"`
			Targets    []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &dashboard))
	served := map[string]bool{}
	for _, name := range hubmetrics.Names() {
		for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
			served[name+suffix] = true
		}
	}
	for _, name := range controllerRuntimeMetrics {
		served[name] = true
	}
	queried := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dashboard.Panels {
		assert.False(t, ids[p.ID], "panel id %d is unique", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		assert.Equal(t, "${datasource}", p.Datasource["uid"], "panel %q reads the chosen data source", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
		for _, target := range p.Targets {
			names := metricSelector.FindAllStringSubmatch(target.Expr, -1)
			require.NotEmpty(t, names, "panel %q: %s", p.Title, target.Expr)
			for _, m := range names {
				assert.True(t, served[m[1]], "panel %q queries %s, which the manager does not serve", p.Title, m[1])
				queried[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m[1], "_bucket"), "_count"), "_sum")] = true
			}
		}
	}
	for _, name := range hubmetrics.Names() {
		assert.True(t, queried[name], "no panel shows %s", name)
	}
}
