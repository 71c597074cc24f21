package addon

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// BenchmarkManifests measures what the hub spends rendering one cluster's objects, which it
// does for every cluster whenever the cluster, its ManagedClusterAddOn or its configuration
// changes. It reports the rendered objects and their JSON size, what OCM stores in that
// cluster's ManifestWork. Every case renders (the memo is emptied before each call) but
// "kubernetes-memo-hit", which measures a sync whose inputs did not change. Run with
// `make bench`.
func BenchmarkManifests(b *testing.B) {
	cases := []struct {
		name    string
		cluster *clusterv1.ManagedCluster
		adc     fakeADCGetter
		addon   *addonv1beta1.ManagedClusterAddOn
		memoHit bool
	}{
		{name: "kubernetes", cluster: vanilla(), addon: mca("", nil, "")},
		{name: "kubernetes-memo-hit", cluster: vanilla(), addon: mca("", nil, ""), memoHit: true},
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
			memoized := a.(*gitopsAddon)
			for b.Loop() {
				if !bc.memoHit {
					memoized.memo = newRenderMemo()
				}
				if _, err := a.Manifests(ctx, bc.cluster, bc.addon); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(objects)), "objects/cluster")
			b.ReportMetric(float64(size)/1024, "KiB/cluster")
		})
	}
}
