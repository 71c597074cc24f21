package v1beta1

// Annotations a user sets on a GitOpsCluster, and the names of what it creates that
// other tools refer to.
const (
	// AnnotationAdopt "true" on a GitOpsCluster makes it take over existing objects of the
	// names it wants that no GitOpsCluster of gitops-addon owns (Red Hat ACM's, when
	// migrating), instead of reporting them.
	AnnotationAdopt = "gitops-addon.open-cluster-management.io/adopt"

	// AnnotationSkipHubCAPropagation "true" on a GitOpsCluster is Red Hat ACM's way to keep
	// the hub's CA off the clusters; honoured like argoCDAgent.propagateHubCA: false.
	AnnotationSkipHubCAPropagation = "apps.open-cluster-management.io/skip-hub-ca-propagation"

	// PlacementConfigMapName is the ConfigMap a GitOpsCluster creates in its argoNamespace
	// for ApplicationSets' clusterDecisionResource generators to name in configMapRef (to
	// read PlacementDecisions), as Red Hat ACM names it.
	PlacementConfigMapName = "acm-placement"

	// Finalizer holds a GitOpsCluster until the objects it created in other namespaces are
	// removed: cross-namespace owner references are invalid, so garbage collection
	// cannot. The manager sets it; the chart's uninstall releases it.
	Finalizer = "gitops-addon.open-cluster-management.io/cleanup"
)
