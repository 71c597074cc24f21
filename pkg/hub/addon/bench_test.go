package addon

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/gitops-addon/gitops-addon/manifests"
)

// BenchmarkManifests measures what the hub spends rendering one cluster's objects, which it
// does for every cluster whenever the cluster, its ManagedClusterAddOn or its configuration
// changes. It reports the rendered objects and their JSON size, the bulk of what OCM
// stores in that cluster's ManifestWorks. "framework-whole-chart" is the baseline: the
// addon framework's Helm addon over the whole chart, decoding the CRDs on every render,
// as New did before it decoded them once. Run with `make bench`.
func BenchmarkManifests(b *testing.B) {
	cases := []struct {
		name       string
		cluster    *clusterv1.ManagedCluster
		adc        fakeADCGetter
		addon      *addonv1beta1.ManagedClusterAddOn
		wholeChart bool
	}{
		{name: "kubernetes-framework-whole-chart", cluster: vanilla(), addon: mca("", nil, ""), wholeChart: true},
		{name: "kubernetes", cluster: vanilla(), addon: mca("", nil, "")},
		{name: "openshift", cluster: openshift(), addon: mca("", nil, "")},
		{name: "kubernetes-with-deployment-config", cluster: vanilla(), addon: mca("cfg", nil, ""), adc: fakeADCGetter{
			"c1/cfg": {Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1beta1.CustomizedVariable{
				{Name: "extraAPIGroups", Value: "cert-manager.io,monitoring.coreos.com"},
			}}},
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			o := Options{AgentImage: "example.com/agent:v1"}
			if bc.adc != nil {
				o.ADCGetter = bc.adc
			}
			a, err := New(o)
			if bc.wholeChart {
				a, err = buildHelmAddon(o, manifests.ChartFS)
			}
			require.NoError(b, err)
			ctx := context.Background()
			objects, err := a.Manifests(ctx, bc.cluster, bc.addon)
			require.NoError(b, err)
			size := 0
			for _, obj := range objects {
				raw, err := json.Marshal(obj)
				require.NoError(b, err)
				size += len(raw)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := a.Manifests(ctx, bc.cluster, bc.addon); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(objects)), "objects/cluster")
			b.ReportMetric(float64(size)/1024, "KiB/cluster")
		})
	}
}
