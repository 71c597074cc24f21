package gitopscluster

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// Finalizer holds a GitOpsCluster until the objects it created in other namespaces are
// removed: cross-namespace owner references are invalid, so garbage collection cannot.
const Finalizer = "gitops-addon.open-cluster-management.io/cleanup"

// owner identifies the GitOpsCluster that created an object.
type owner struct {
	Namespace string
	Name      string
}

func (o owner) String() string { return o.Namespace + "/" + o.Name }

func ownerOf(gc *appsv1beta1.GitOpsCluster) owner {
	return owner{Namespace: gc.Namespace, Name: gc.Name}
}

// ownerLabels are the labels every object created for one GitOpsCluster carries.
func ownerLabels(gc *appsv1beta1.GitOpsCluster) map[string]string {
	return map[string]string{
		constants.LabelManagedBy:      constants.ManagedByValue,
		constants.LabelOwnerNamespace: gc.Namespace,
		constants.LabelOwnerName:      gc.Name,
	}
}

// ownerSelector selects the objects created for one GitOpsCluster.
func ownerSelector(gc *appsv1beta1.GitOpsCluster) client.MatchingLabels {
	return client.MatchingLabels(ownerLabels(gc))
}

// recordedOwner reads the owner labels of an object; ok is false when the object was not
// created for a GitOpsCluster by gitops-addon.
func recordedOwner(obj client.Object) (owner, bool) {
	labels := obj.GetLabels()
	if labels[constants.LabelManagedBy] != constants.ManagedByValue {
		return owner{}, false
	}
	o := owner{Namespace: labels[constants.LabelOwnerNamespace], Name: labels[constants.LabelOwnerName]}
	return o, o.Namespace != "" && o.Name != ""
}

// ownership classifies an existing object relative to a GitOpsCluster.
type ownership int

const (
	ownedByUs ownership = iota
	ownedByOtherGitOpsCluster
	notOwned // created by someone else: never modified, never deleted
)

func classifyOwnership(obj client.Object, gc *appsv1beta1.GitOpsCluster) (ownership, owner) {
	o, ok := recordedOwner(obj)
	switch {
	case !ok:
		return notOwned, owner{}
	case o == ownerOf(gc):
		return ownedByUs, o
	default:
		return ownedByOtherGitOpsCluster, o
	}
}
