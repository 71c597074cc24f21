package appsetaccess

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// PlacementReaderName names the Role and RoleBinding that let the ApplicationSet
// controller read PlacementDecisions.
const PlacementReaderName = "gitops-addon-applicationset-placement"

// applicationSetControllerAccounts are the ServiceAccounts of the ApplicationSet
// controller of an OpenShift GitOps instance and of an upstream Argo CD install.
var applicationSetControllerAccounts = []string{
	"openshift-gitops-applicationset-controller",
	"argocd-applicationset-controller",
}

// objectKey names one shared object: its kind (for messages and for telling a ConfigMap
// from a Role of the same name) and where it is.
type objectKey struct {
	kind      string
	namespace string
	name      string
}

func keyOf(obj client.Object) objectKey {
	return objectKey{kind: ownership.KindOf(obj), namespace: obj.GetNamespace(), name: obj.GetName()}
}

func (k objectKey) objectKey() client.ObjectKey {
	return client.ObjectKey{Namespace: k.namespace, Name: k.name}
}

// String reads as the messages name objects: "ConfigMap openshift-gitops/acm-placement".
func (k objectKey) String() string { return k.kind + " " + k.namespace + "/" + k.name }

// sharedObject is one shared object as ApplicationSets need it, with how to bring an
// existing one to that state.
type sharedObject struct {
	key     objectKey
	desired client.Object
	// empty is a new object of its kind, to read into.
	empty func() client.Object
	// update brings current to desired where ApplicationSets need it and tells whether
	// anything changed; labels and annotations other tools set stay.
	update func(current, desired client.Object) bool
}

// needs are the shared objects a GitOpsCluster's ApplicationSets need: the placement
// ConfigMap in its Argo CD namespace, and in its own namespace the Role that reads
// Placements and the RoleBinding that grants it to that Argo CD's ApplicationSet
// controller.
func needs(gc *appsv1beta1.GitOpsCluster) []sharedObject {
	argoNS := gc.ArgoNamespace()
	return []sharedObject{
		placementConfigMap(argoNS),
		placementReaderRole(gc.Namespace),
		placementReaderBinding(gc.Namespace, argoNS),
	}
}

func shared[T any, PT interface {
	*T
	client.Object
}](desired PT, update func(current, desired client.Object) bool) sharedObject {
	return sharedObject{key: keyOf(desired), desired: desired, update: update, empty: func() client.Object { return PT(new(T)) }}
}

// sharedLabels mark objects that several GitOpsClusters may rely on: the managed-by label
// and no owner labels, so that they are removed only when no GitOpsCluster needs them.
func sharedLabels() map[string]string {
	return map[string]string{contract.LabelManagedBy: contract.ManagedByValue}
}

// placementConfigMap tells the ApplicationSet clusterDecisionResource generator how to
// read OCM PlacementDecisions.
func placementConfigMap(argoNamespace string) sharedObject {
	return shared(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: appsv1beta1.PlacementConfigMapName, Namespace: argoNamespace, Labels: sharedLabels()},
		Data: map[string]string{
			"apiVersion":    "cluster.open-cluster-management.io/v1beta1",
			"kind":          "placementdecisions",
			"statusListKey": "decisions",
			"matchKey":      "clusterName",
		},
	}, updateConfigMap)
}

// placementReaderRole lets its subjects read Placements and PlacementDecisions in the
// namespace where they live (the GitOpsCluster's namespace).
func placementReaderRole(namespace string) sharedObject {
	return shared(&rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: PlacementReaderName, Namespace: namespace, Labels: sharedLabels()},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"cluster.open-cluster-management.io"},
			Resources: []string{"placementdecisions", "placements"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}, updateRole)
}

// placementReaderBindingName is unique per Argo CD namespace, because GitOpsClusters in
// one namespace may serve Argo CD instances in different namespaces.
func placementReaderBindingName(argoNamespace string) string {
	return fmt.Sprintf("%s-%s", PlacementReaderName, argoNamespace)
}

func placementReaderBinding(namespace, argoNamespace string) sharedObject {
	subjects := make([]rbacv1.Subject, 0, len(applicationSetControllerAccounts))
	for _, sa := range applicationSetControllerAccounts {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: argoNamespace})
	}
	return shared(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: placementReaderBindingName(argoNamespace), Namespace: namespace, Labels: sharedLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: PlacementReaderName},
		Subjects:   subjects,
	}, updateRoleBinding)
}

func updateConfigMap(current, desired client.Object) bool {
	cur, want := current.(*corev1.ConfigMap), desired.(*corev1.ConfigMap)
	if maps.Equal(cur.Data, want.Data) {
		return false
	}
	cur.Data = want.Data
	return true
}

func updateRole(current, desired client.Object) bool {
	cur, want := current.(*rbacv1.Role), desired.(*rbacv1.Role)
	if equality.Semantic.DeepEqual(cur.Rules, want.Rules) {
		return false
	}
	cur.Rules = want.Rules
	return true
}

func updateRoleBinding(current, desired client.Object) bool {
	cur, want := current.(*rbacv1.RoleBinding), desired.(*rbacv1.RoleBinding)
	if equality.Semantic.DeepEqual(cur.Subjects, want.Subjects) && cur.RoleRef == want.RoleRef {
		return false
	}
	// roleRef is immutable: a foreign binding with another roleRef is reported, not changed,
	// and ours always has the same one.
	cur.Subjects = want.Subjects
	return true
}

// isSharedPlacementObject tells the shared ApplicationSet objects by their names from the
// other objects with the managed-by label (the agents' hub RBAC, the cluster Secrets).
func isSharedPlacementObject(obj client.Object) bool {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return obj.GetName() == appsv1beta1.PlacementConfigMapName
	case *rbacv1.Role:
		return obj.GetName() == PlacementReaderName
	case *rbacv1.RoleBinding:
		return strings.HasPrefix(obj.GetName(), PlacementReaderName+"-")
	}
	return false
}
