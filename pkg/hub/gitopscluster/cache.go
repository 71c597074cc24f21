package gitopscluster

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// CacheByObject narrows the manager's cache for the kinds this controller writes: a hub
// holds thousands of Secrets and ConfigMaps, of which only ours matter, and only the
// gitops-addon ManagedClusterAddOns. An object outside these selectors reads as NotFound,
// which the controller relies on to never touch what it did not create.
func CacheByObject() map[client.Object]cache.ByObject {
	ours := labels.SelectorFromSet(labels.Set{constants.LabelManagedBy: constants.ManagedByValue})
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}:      {Label: ours},
		&corev1.ConfigMap{}:   {Label: ours},
		&rbacv1.Role{}:        {Label: ours},
		&rbacv1.RoleBinding{}: {Label: ours},
		&addonv1beta1.ManagedClusterAddOn{}: {
			Field: fields.OneTermEqualSelector("metadata.name", constants.AddonName),
		},
	}
}
