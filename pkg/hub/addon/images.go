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

// chartDefaults are the default images of the embedded agent chart. They are read from
// its values.yaml, the single place they are written, because image mirrors must apply
// to the final image the hub chooses, defaults included.
var chartDefaults = sync.OnceValues(func() (defaultImages, error) {
	raw, err := fs.ReadFile(manifests.ChartFS, manifests.AgentChartDir+"/values.yaml")
	if err != nil {
		return defaultImages{}, fmt.Errorf("reading the agent chart's values.yaml: %w", err)
	}
	var v defaultImages
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return defaultImages{}, fmt.Errorf("parsing the agent chart's values.yaml: %w", err)
	}
	return v, nil
})

// defaultImages is the part of the agent chart's values.yaml that names default images.
type defaultImages struct {
	GitOpsOperator struct {
		Images struct {
			OpenShift  string `json:"openshift"`
			Kubernetes string `json:"kubernetes"`
		} `json:"images"`
	} `json:"gitopsOperator"`
	ArgoCD struct {
		DefaultImage      string `json:"defaultImage"`
		DefaultRedisImage string `json:"defaultRedisImage"`
	} `json:"argoCD"`
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
		return images.GitOpsOperator.Images.OpenShift
	}
	return images.GitOpsOperator.Images.Kubernetes
}

// mirroredDefault is the image to set when none was chosen: empty (the operator runs
// its own default, which follows the operator's version) unless an image mirror rewrites
// that default, which must then be set, mirrored, for the cluster to pull it at all.
func mirroredDefault(defaultImage string, mirror func(string) string) string {
	if defaultImage == "" {
		return ""
	}
	if mirrored := mirror(defaultImage); mirrored != defaultImage {
		return mirrored
	}
	return ""
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
