package addon

import (
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

const (
	// AgentHubClusterRole is what the spoke agent may do on the hub (the manager chart's
	// ClusterRole of that name): keep its lease (fallback when the spoke has no Lease API)
	// and report its conditions on its own ManagedClusterAddOn. A RoleBinding in the
	// cluster's namespace grants it there and nowhere else.
	AgentHubClusterRole = "open-cluster-management:gitops-addon:agent"
	// AgentHubBinding names that RoleBinding in each cluster namespace. Until v0.1 it
	// bound a Role of the same name in the namespace, one per cluster.
	AgentHubBinding = "gitops-addon-agent"
	// legacyAgentHubRole is the per-cluster Role the binding referred to until then.
	legacyAgentHubRole = "gitops-addon-agent"
)

// agentHubAccess grants the spoke agent its hub permissions in its cluster's namespace:
// addon-framework's registration controller calls it (PermissionConfig) on every sync of
// every cluster, one cluster at a time, so it reads from a cache and writes only what is
// missing. addon-framework's own permission builder would write a Role per cluster, read
// the Role and the RoleBinding from the apiserver on every sync and wait one more sync
// for the subject: at 1,000 clusters that one worker set the pace of the whole fleet
// (docs/benchmarks.md).
type agentHubAccess struct {
	kube kubernetes.Interface
	// bindings lists the AgentHubBinding RoleBindings; nil reads them from the apiserver.
	bindings rbaclisters.RoleBindingLister
	// configurations are the agent's registrations, as the registration controller
	// records them in the ManagedClusterAddOn's status.
	configurations agent.RegistrationConfigurationsFunc
}

// grant binds AgentHubClusterRole to the agent's subject in the cluster's namespace.
func (a agentHubAccess) grant(ctx context.Context, cluster *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn) error {
	if a.kube == nil {
		return fmt.Errorf("no hub client to grant the agent's permissions for cluster %s", cluster.Name)
	}
	subjects, err := a.subjects(ctx, cluster, addon)
	if err != nil {
		return err
	}
	if len(subjects) == 0 {
		// The token driver: the agent records its subject itself.
		return &agent.SubjectNotReadyError{}
	}
	desired := agentHubBinding(cluster.Name, subjects, addon)
	existing, err := a.current(ctx, cluster.Name)
	if err != nil {
		return err
	}
	bindings := a.kube.RbacV1().RoleBindings(cluster.Name)
	switch {
	case existing == nil:
		_, err = bindings.Create(ctx, desired, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache lags behind an earlier create; the next sync compares
		}
		return wrapGrant(err, "creating", cluster.Name)
	case existing.RoleRef != desired.RoleRef:
		// roleRef is immutable: the binding of an older release (to its own Role) goes,
		// with that Role, and the new one takes its place.
		return a.replaceLegacy(ctx, cluster.Name, desired)
	case !equality.Semantic.DeepEqual(existing.Subjects, desired.Subjects) ||
		!equality.Semantic.DeepEqual(existing.OwnerReferences, desired.OwnerReferences):
		updated := existing.DeepCopy()
		updated.Subjects, updated.OwnerReferences = desired.Subjects, desired.OwnerReferences
		_, err = bindings.Update(ctx, updated, metav1.UpdateOptions{})
		return wrapGrant(err, "updating", cluster.Name)
	}
	return nil
}

// subjects are the agent's hub identities: with the CSR driver (the default) the subject
// the addon configures, which the registration controller records as it is; with the
// token driver the subject the agent recorded, none before it did. Only the subjects of
// this cluster's agent are kept (ownCluster).
func (a agentHubAccess) subjects(ctx context.Context, cluster *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn) ([]rbacv1.Subject, error) {
	if tokenDriver(addon) {
		return ownCluster(cluster.Name, utils.BuildSubjectsFromRegistration(addon, certificatesv1.KubeAPIServerClientSignerName)), nil
	}
	configs, err := a.configurations(ctx, cluster, addon)
	if err != nil {
		return nil, fmt.Errorf("the agent's registrations on cluster %s: %w", cluster.Name, err)
	}
	configured := addon.DeepCopy()
	configured.Status.Registrations = nil
	for _, c := range configs {
		configured.Status.Registrations = append(configured.Status.Registrations, c.RegistrationAPI())
	}
	return ownCluster(cluster.Name, utils.BuildSubjectsFromRegistration(configured, certificatesv1.KubeAPIServerClientSignerName)), nil
}

// ownCluster keeps the subjects that only this cluster's agent has: its user, and the
// groups of this cluster (system:open-cluster-management:cluster:<cluster>:...).
// addon-framework's subjects also hold the group every cluster's agent of the addon is
// in (system:open-cluster-management:addon:<addon>); bound in each cluster namespace, it
// would let any cluster's agent report on every other cluster's addon.
func ownCluster(cluster string, subjects []rbacv1.Subject) []rbacv1.Subject {
	prefix := "system:open-cluster-management:cluster:" + cluster + ":"
	return slices.DeleteFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.GroupKind && !strings.HasPrefix(s.Name, prefix)
	})
}

// tokenDriver: the cluster's registration agent authenticates the addon agent with a
// ServiceAccount token, whose subject it writes into the status.
func tokenDriver(addon *addonv1beta1.ManagedClusterAddOn) bool {
	return slices.ContainsFunc(addon.Status.Registrations, func(r addonv1beta1.RegistrationConfig) bool {
		return r.Type == addonv1beta1.KubeClient && r.KubeClient != nil && r.KubeClient.Driver == "token"
	})
}

// current is the cluster's AgentHubBinding, nil when there is none.
func (a agentHubAccess) current(ctx context.Context, namespace string) (*rbacv1.RoleBinding, error) {
	var binding *rbacv1.RoleBinding
	var err error
	if a.bindings != nil {
		binding, err = a.bindings.RoleBindings(namespace).Get(AgentHubBinding)
	} else {
		binding, err = a.kube.RbacV1().RoleBindings(namespace).Get(ctx, AgentHubBinding, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading RoleBinding %s/%s: %w", namespace, AgentHubBinding, err)
	}
	return binding, nil
}

// replaceLegacy deletes an older release's binding and Role and creates desired.
func (a agentHubAccess) replaceLegacy(ctx context.Context, namespace string, desired *rbacv1.RoleBinding) error {
	rbac := a.kube.RbacV1()
	if err := rbac.RoleBindings(namespace).Delete(ctx, AgentHubBinding, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return wrapGrant(err, "replacing the older", namespace)
	}
	if _, err := rbac.RoleBindings(namespace).Create(ctx, desired, metav1.CreateOptions{}); err != nil {
		return wrapGrant(err, "creating", namespace)
	}
	if err := rbac.Roles(namespace).Delete(ctx, legacyAgentHubRole, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the agent's former hub Role %s/%s: %w", namespace, legacyAgentHubRole, err)
	}
	return nil
}

func wrapGrant(err error, doing, namespace string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s RoleBinding %s/%s (the agent's hub permissions): %w", doing, namespace, AgentHubBinding, err)
}

// agentHubBinding binds AgentHubClusterRole to subjects in the cluster's namespace,
// owned by the ManagedClusterAddOn so that it goes with it.
func agentHubBinding(namespace string, subjects []rbacv1.Subject, addon *addonv1beta1.ManagedClusterAddOn) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:      AgentHubBinding,
			Namespace: namespace,
			Labels:    map[string]string{addonv1beta1.AddonLabelKey: addon.Name},
			// As addon-framework's permission builder sets it.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ManagedClusterAddOn",
				Name: addon.Name, UID: addon.UID, BlockOwnerDeletion: ptr.To(true),
			}},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentHubClusterRole},
		Subjects: subjects,
	}
}
