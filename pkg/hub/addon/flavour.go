package addon

import (
	"strings"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// Cluster claims and labels OCM and Red Hat Advanced Cluster Management derive for a
// managed cluster, which tell what kind of Kubernetes it is.
const (
	claimProduct        = "product.open-cluster-management.io"
	claimOpenShiftVer   = "version.openshift.io"
	labelVendor         = "vendor"
	labelOpenShiftVer   = "openshiftVersion"
	productMicroShift   = "microshift"
	productUnknownValue = "other"
)

// openShiftProducts are product claim/vendor values of clusters whose Route API is built
// in (OpenShift and its managed flavours, and MicroShift, which ships its own Routes CRD).
var openShiftProducts = map[string]bool{
	"openshift": true, "rosa": true, "aro": true, "roks": true, "osd": true, productMicroShift: true,
}

// flavour is what the hub knows about a cluster's kind from its ManagedCluster.
type flavour struct {
	// openShift: claims or labels say OpenShift or MicroShift: the Route API is built in.
	openShift bool
	// knownNonOpenShift: claims or labels positively name another Kubernetes product.
	knownNonOpenShift bool
	// evidence says which claim or label decided it, for messages.
	evidence string
}

func clusterFlavour(mc *clusterv1.ManagedCluster) flavour {
	if mc == nil {
		return flavour{evidence: "no ManagedCluster"}
	}
	for _, c := range mc.Status.ClusterClaims {
		if c.Name == claimOpenShiftVer && c.Value != "" {
			return flavour{openShift: true, evidence: "claim " + claimOpenShiftVer + "=" + c.Value}
		}
	}
	if v := mc.Labels[labelOpenShiftVer]; v != "" {
		return flavour{openShift: true, evidence: "label " + labelOpenShiftVer + "=" + v}
	}
	for _, c := range mc.Status.ClusterClaims {
		if c.Name == claimProduct {
			return productFlavour(c.Value, "claim "+claimProduct)
		}
	}
	if v, ok := mc.Labels[labelVendor]; ok {
		return productFlavour(v, "label "+labelVendor)
	}
	return flavour{evidence: "no product claim or vendor label"}
}

// productFlavour reads a product name. "Other" and empty values are not knowledge: an
// unrecognised cluster might still run openshift-apiserver.
func productFlavour(value, source string) flavour {
	v := strings.ToLower(strings.TrimSpace(value))
	evidence := source + "=" + value
	switch {
	case openShiftProducts[v]:
		return flavour{openShift: true, evidence: evidence}
	case v == "" || v == productUnknownValue || v == "auto-detect":
		return flavour{evidence: evidence}
	default:
		return flavour{knownNonOpenShift: true, evidence: evidence}
	}
}
