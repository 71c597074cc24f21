package addon

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// routesFacts is everything the Routes CRD decision depends on.
type routesFacts struct {
	flavour flavour
	// reported is the spoke agent's RouteAPI classification ("" before it reported).
	reported string
	// shipped: the cluster's ManifestWorks carry the Routes CRD right now.
	shipped bool
}

// routesDecision says whether to ship the routes.route.openshift.io CRD and why.
type routesDecision struct {
	install bool
	why     string
}

// decideRoutesCRD ships the Routes CRD only to a cluster known to have no Route API:
//
//   - never to a cluster whose claims or labels say OpenShift or MicroShift;
//   - never to one the spoke agent reports Native (a duplicate CRD breaks /openapi/v2);
//   - to one the agent reports Absent;
//   - once shipped, it keeps shipping unless the cluster is Native or OpenShift: dropping
//     the CRD from the ManifestWork makes the work agent delete it, and with it every
//     Route, so a transient Unknown, or the CRD report our own CRD causes, must not flip it;
//   - before the agent reports, only when the claims/labels positively name another
//     Kubernetes product; never while unknown.
func decideRoutesCRD(f routesFacts) routesDecision {
	switch {
	case f.flavour.openShift:
		return routesDecision{why: "OpenShift/MicroShift cluster (" + f.flavour.evidence + "): Routes are built in"}
	case f.reported == constants.RouteAPINative:
		return routesDecision{why: "the agent reports a native route.openshift.io APIService"}
	case f.reported == constants.RouteAPIAbsent:
		return routesDecision{install: true, why: "the agent reports no Route API"}
	case f.shipped:
		return routesDecision{install: true, why: "already shipped; kept so that the Routes CRD and its Routes are never deleted"}
	case f.reported == constants.RouteAPICRD:
		return routesDecision{why: "the cluster already has a Routes CRD it did not get from gitops-addon"}
	case f.reported == constants.RouteAPIUnknown:
		return routesDecision{why: "the agent cannot tell whether the cluster serves Routes"}
	case f.flavour.knownNonOpenShift:
		return routesDecision{install: true, why: "not OpenShift (" + f.flavour.evidence + ")"}
	default:
		return routesDecision{why: fmt.Sprintf("unknown cluster flavour (%s) and no agent report yet", f.flavour.evidence)}
	}
}

// reportedRouteAPI reads the RouteAPI classification the spoke agent wrote on its
// ManagedClusterAddOn; "" when it has not reported for the current state.
func reportedRouteAPI(addon *addonv1beta1.ManagedClusterAddOn) string {
	if addon == nil {
		return ""
	}
	c := meta.FindStatusCondition(addon.Status.Conditions, constants.ConditionRouteAPI)
	if c == nil || c.Status == metav1.ConditionUnknown && c.Reason != constants.RouteAPIUnknown {
		return ""
	}
	return c.Reason
}

// ShippedRoutesCRD tells whether a cluster's addon ManifestWorks carry the Routes CRD now.
type ShippedRoutesCRD func(cluster string) (bool, error)

// RoutesCRDValues is a values function: routes.installCRD for a cluster.
func routesFactsFor(mc *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn, shipped ShippedRoutesCRD) (routesFacts, error) {
	f := routesFacts{flavour: clusterFlavour(mc), reported: reportedRouteAPI(addon)}
	if shipped != nil && mc != nil {
		s, err := shipped(mc.Name)
		if err != nil {
			return f, fmt.Errorf("reading the ManifestWorks of cluster %s: %w", mc.Name, err)
		}
		f.shipped = s
	}
	return f, nil
}
