package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// shippedRoutesCRD reads, from the cached ManifestWorks of our addon, whether a cluster
// is carrying the Routes CRD right now. The decision to ship it is sticky (see
// addon.decideRoutesCRD) and this is where the hub remembers it.
func shippedRoutesCRD(reader client.Reader) func(cluster string) (bool, error) {
	needle := []byte(`"` + constants.RoutesCRDName + `"`)
	return func(cluster string) (bool, error) {
		works := &workv1.ManifestWorkList{}
		// addon-framework's values functions carry no context; this read is served from
		// the informer cache.
		if err := reader.List(context.Background(), works, client.InNamespace(cluster),
			client.MatchingLabels{addonv1beta1.AddonLabelKey: constants.AddonName}); err != nil {
			return false, fmt.Errorf("listing ManifestWorks: %w", err)
		}
		for _, w := range works.Items {
			for _, m := range w.Spec.Workload.Manifests {
				if bytes.Contains(m.Raw, needle) && isRoutesCRD(m.Raw) {
					return true, nil
				}
			}
		}
		return false, nil
	}
}

func isRoutesCRD(raw []byte) bool {
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	return json.Unmarshal(raw, &obj) == nil && obj.Kind == "CustomResourceDefinition" && obj.Metadata.Name == constants.RoutesCRDName
}
