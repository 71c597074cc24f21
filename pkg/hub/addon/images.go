package addon

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"sync"

	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/manifests"
)

// chartDefaults are the default operator images of the embedded agent chart. They are
// read from its values.yaml, the single place they are written, because image mirrors
// must apply to the final image the hub chooses.
var chartDefaults = sync.OnceValues(func() (operatorImages, error) {
	raw, err := fs.ReadFile(manifests.ChartFS, manifests.AgentChartDir+"/values.yaml")
	if err != nil {
		return operatorImages{}, fmt.Errorf("reading the agent chart's values.yaml: %w", err)
	}
	var v struct {
		GitOpsOperator struct {
			Images operatorImages `json:"images"`
		} `json:"gitopsOperator"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return operatorImages{}, fmt.Errorf("parsing the agent chart's values.yaml: %w", err)
	}
	return v.GitOpsOperator.Images, nil
})

type operatorImages struct {
	OpenShift  string `json:"openshift"`
	Kubernetes string `json:"kubernetes"`
}

// defaultOperatorImage is the chart's default operator image for a cluster flavour.
func defaultOperatorImage(f flavour) string {
	images, err := chartDefaults()
	if err != nil {
		// The chart is embedded and tested; leaving the override empty lets the chart
		// pick its own default, so rendering still works.
		return ""
	}
	if f.openShift {
		return images.OpenShift
	}
	return images.Kubernetes
}

// clusterAnnotationRegistries reads the image mirrors a ManagedCluster's
// open-cluster-management.io/image-registries annotation lists; a malformed annotation
// is ignored here (OCM itself reports it).
func clusterAnnotationRegistries(mc *clusterv1.ManagedCluster) []addonv1beta1.ImageMirror {
	raw := mc.Annotations[clusterv1.ClusterImageRegistriesAnnotationKey]
	if raw == "" {
		return nil
	}
	var v struct {
		Registries []addonv1beta1.ImageMirror `json:"registries"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil
	}
	return v.Registries
}
