package gitopscluster

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
)

// CacheByObject narrows the manager's cache for the kinds this controller writes: a hub
// holds thousands of Secrets and ConfigMaps, of which only ours matter, and only the
// gitops-addon ManagedClusterAddOns. An object outside these selectors reads as NotFound,
// which the controller relies on to never touch what it did not create. argoNamespaces,
// when not empty, are the only namespaces whose Secrets and ConfigMaps the manager may
// read (the chart grants them there only): the cache watches them there only.
func CacheByObject(argoNamespaces []string) map[client.Object]cache.ByObject {
	ours := labels.SelectorFromSet(labels.Set{contract.LabelManagedBy: contract.ManagedByValue})
	namespaces := NamespaceConfigs(argoNamespaces)
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}:    {Label: ours, Namespaces: namespaces},
		&corev1.ConfigMap{}: {Label: ours, Namespaces: namespaces},
		// The Argo CD Agent principal's Services, where agents connect (principal.go).
		&corev1.Service{}:     {Label: argocdagent.PrincipalServiceSelector(), Namespaces: namespaces},
		&rbacv1.Role{}:        {Label: ours},
		&rbacv1.RoleBinding{}: {Label: ours},
		&addonv1beta1.ManagedClusterAddOn{}: {
			Field: fields.OneTermEqualSelector("metadata.name", contract.AddonName),
		},
		&addonv1beta1.ClusterManagementAddOn{}: {
			Field: fields.OneTermEqualSelector("metadata.name", contract.AddonName),
		},
		&clusterv1.ManagedCluster{}: {Transform: slimManagedCluster},
	}
}

// NamespaceConfigs restricts a cached kind to argoNamespaces; nil (every namespace) when
// there are none.
func NamespaceConfigs(argoNamespaces []string) map[string]cache.Config {
	if len(argoNamespaces) == 0 {
		return nil
	}
	namespaces := make(map[string]cache.Config, len(argoNamespaces))
	for _, ns := range argoNamespaces {
		namespaces[ns] = cache.Config{}
	}
	return namespaces
}

// slimManagedCluster keeps of a ManagedCluster what the manager decides on: its metadata
// (labels go into the Argo CD cluster Secret), its API server URLs, whether the hub
// accepts it, its Available condition (the pull model names them when a cluster does
// not apply a ManifestWork) and its cluster ID claim (which tells the hub itself). The
// rest of the status (other claims, capacity, version) and the CA bundles are most of a
// joined cluster's bytes, and the hub holds one per cluster.
func slimManagedCluster(obj any) (any, error) {
	mc, ok := obj.(*clusterv1.ManagedCluster)
	if !ok {
		return obj, nil
	}
	mc.ManagedFields = nil
	urls := make([]clusterv1.ClientConfig, 0, len(mc.Spec.ManagedClusterClientConfigs))
	for _, cfg := range mc.Spec.ManagedClusterClientConfigs {
		urls = append(urls, clusterv1.ClientConfig{URL: cfg.URL})
	}
	mc.Spec = clusterv1.ManagedClusterSpec{ManagedClusterClientConfigs: urls, HubAcceptsClient: mc.Spec.HubAcceptsClient}
	var kept []metav1.Condition
	if c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); c != nil {
		kept = []metav1.Condition{*c}
	}
	var claims []clusterv1.ManagedClusterClaim
	if id := localcluster.ClusterID(mc); id != "" {
		claims = []clusterv1.ManagedClusterClaim{{Name: localcluster.ClaimClusterID, Value: id}}
	}
	mc.Status = clusterv1.ManagedClusterStatus{Conditions: kept, ClusterClaims: claims}
	return mc, nil
}
