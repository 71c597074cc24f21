package contract

import "slices"

// The pull model's names that more than the pull model reads (the chart's uninstall, the
// tests): the wire names of Red Hat ACM and argocd-pull-integration.
const (
	// LabelPull ("true") on a hub Application opts it into the pull model.
	LabelPull = "apps.open-cluster-management.io/pull-to-ocm-managed-cluster"
	// LabelPullWork marks every pull-model ManifestWork.
	LabelPullWork = "apps.open-cluster-management.io/application-pull"
)

// argoCDResourcesFinalizers are Argo CD's finalizers that prune an Application's
// resources. On a pulled Application the spoke's copy carries them and does the pruning;
// the hub copy's are released once its ManifestWork is gone, since the hub's Argo CD
// skips it.
var argoCDResourcesFinalizers = []string{
	"resources-finalizer.argocd.argoproj.io",
	"resources-finalizer.argocd.argoproj.io/foreground",
	"resources-finalizer.argocd.argoproj.io/background",
}

// WithoutArgoCDResourcesFinalizers returns finalizers without Argo CD's resource
// finalizers.
func WithoutArgoCDResourcesFinalizers(finalizers []string) []string {
	return slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool {
		return slices.Contains(argoCDResourcesFinalizers, f)
	})
}
