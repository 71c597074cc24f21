package addon

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// TestAgentHubAccess: the agent's hub permissions are one RoleBinding to the chart's
// ClusterRole in its cluster namespace, for the subject its registration configures,
// written only when it is missing or differs, read from the cache.
func TestAgentHubAccess(t *testing.T) {
	const cluster = "cluster1"
	addon := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: contract.AddonName, UID: "addon-uid"}}
	csrSubjects := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:cluster:cluster1:addon:gitops-addon:agent:gitops-addon-agent"},
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:cluster:cluster1:addon:gitops-addon"},
		// Not system:open-cluster-management:addon:gitops-addon, which addon-framework
		// configures too: every cluster's agent is in it.
	}
	tokenAddon := func(user string, groups ...string) *addonv1beta1.ManagedClusterAddOn {
		a := addon.DeepCopy()
		reg := addonv1beta1.RegistrationConfig{Type: addonv1beta1.KubeClient, KubeClient: &addonv1beta1.KubeClientConfig{Driver: "token"}}
		reg.KubeClient.Subject.User = user
		reg.KubeClient.Subject.Groups = groups
		a.Status.Registrations = []addonv1beta1.RegistrationConfig{reg}
		return a
	}
	current := agentHubBinding(cluster, csrSubjects, addon)
	legacy := current.DeepCopy()
	legacy.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: legacyAgentHubRole}
	legacyRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: legacyAgentHubRole}}
	stale := current.DeepCopy()
	stale.Subjects = csrSubjects[:1]
	// What releases before bound: addon-framework's subjects as they were, the group that
	// every cluster's agent is in among them.
	shared := current.DeepCopy()
	shared.Subjects = append(slices.Clone(csrSubjects), rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:addon:gitops-addon"})

	tests := []struct {
		name string
		// cached is in the lister; objects are on the apiserver (the cache may lag).
		cached, objects []runtime.Object
		addon           *addonv1beta1.ManagedClusterAddOn
		wantActions     []string
		wantSubjects    []rbacv1.Subject
		wantNotReady    bool
	}{
		{name: "a new cluster: one create, the configured subject at once", addon: addon,
			wantActions: []string{"create rolebindings"}, wantSubjects: csrSubjects},
		{name: "in place: no write", cached: []runtime.Object{current}, objects: []runtime.Object{current}, addon: addon},
		{name: "the cache lags behind a create: nothing more", objects: []runtime.Object{current}, addon: addon,
			wantActions: []string{"create rolebindings"}, wantSubjects: csrSubjects},
		{name: "another subject: updated", cached: []runtime.Object{stale}, objects: []runtime.Object{stale}, addon: addon,
			wantActions: []string{"update rolebindings"}, wantSubjects: csrSubjects},
		{name: "an older release's binding of the group every cluster's agent is in: updated", cached: []runtime.Object{shared}, objects: []runtime.Object{shared}, addon: addon,
			wantActions: []string{"update rolebindings"}, wantSubjects: csrSubjects},
		{name: "an older release's binding to its own Role: replaced, the Role deleted",
			cached: []runtime.Object{legacy}, objects: []runtime.Object{legacy, legacyRole}, addon: addon,
			wantActions: []string{"delete rolebindings", "create rolebindings", "delete roles"}, wantSubjects: csrSubjects},
		{name: "token driver before the agent recorded its subject: pending", addon: tokenAddon(""), wantNotReady: true},
		{name: "token driver: the recorded subject, not its groups shared with other clusters' agents",
			addon:        tokenAddon("system:serviceaccount:open-cluster-management-agent-addon:gitops-addon-agent", "system:serviceaccounts", "system:open-cluster-management:addon:gitops-addon"),
			wantActions:  []string{"create rolebindings"},
			wantSubjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccount:open-cluster-management-agent-addon:gitops-addon-agent"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := fake.NewClientset(tt.objects...)
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			for _, o := range tt.cached {
				require.NoError(t, indexer.Add(o))
			}
			access := agentHubAccess{kube: kube, bindings: rbaclisters.NewRoleBindingLister(indexer),
				configurations: agent.KubeClientSignerConfigurations(contract.AddonName, contract.AgentName)}
			mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}

			err := access.grant(context.Background(), mc, tt.addon)
			if tt.wantNotReady {
				var notReady *agent.SubjectNotReadyError
				require.ErrorAs(t, err, &notReady)
				assert.Empty(t, writes(kube.Actions()))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantActions, writes(kube.Actions()))
			if tt.wantSubjects == nil {
				return
			}
			got, err := kube.RbacV1().RoleBindings(cluster).Get(context.Background(), AgentHubBinding, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentHubClusterRole}, got.RoleRef)
			assert.Equal(t, tt.wantSubjects, got.Subjects)
			require.Len(t, got.OwnerReferences, 1, "goes with the ManagedClusterAddOn")
			assert.Equal(t, addon.UID, got.OwnerReferences[0].UID)
		})
	}
}

// writes are the fake client's writes, "verb resource", in order.
func writes(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}
