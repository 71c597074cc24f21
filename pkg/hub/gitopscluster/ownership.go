package gitopscluster

// Finalizer holds a GitOpsCluster until the objects it created in other namespaces are
// removed: cross-namespace owner references are invalid, so garbage collection cannot.
const Finalizer = "gitops-addon.open-cluster-management.io/cleanup"
