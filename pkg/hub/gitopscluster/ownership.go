package gitopscluster

import appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"

// Finalizer holds a GitOpsCluster until the objects it created in other namespaces are
// removed (declared in the API, where the uninstall reads it too).
const Finalizer = appsv1beta1.Finalizer
