package gitopscluster

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

// Finalizer holds a GitOpsCluster until the objects it created in other namespaces are
// removed: cross-namespace owner references are invalid, so garbage collection cannot.
const Finalizer = "gitops-addon.open-cluster-management.io/cleanup"

// owner identifies the GitOpsCluster that created an object, as its owner labels do:
// Name is the GitOpsCluster's name, or for a name longer than a label value may be, its
// hashed form (ownerNameLabel).
type owner struct {
	Namespace string
	Name      string
}

func (o owner) String() string { return o.Namespace + "/" + o.Name }

func ownerOf(gc *appsv1beta1.GitOpsCluster) owner {
	return owner{Namespace: gc.Namespace, Name: ownerNameLabel(gc.Name)}
}

// ownerNameLabel is a GitOpsCluster's name as a label value: the name itself when it
// fits in 63 characters, else its first 52 characters and 10 hex digits of its SHA-256.
// A GitOpsCluster's name may have up to 253.
func ownerNameLabel(name string) string {
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:52], "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// ownerLabels are the labels every object created for one GitOpsCluster carries.
func ownerLabels(gc *appsv1beta1.GitOpsCluster) map[string]string {
	return map[string]string{
		constants.LabelManagedBy:      constants.ManagedByValue,
		constants.LabelOwnerNamespace: gc.Namespace,
		constants.LabelOwnerName:      ownerNameLabel(gc.Name),
	}
}

// ownerAnnotations name the GitOpsCluster in full on the objects it created when its name
// had to be hashed into the labels, for people and tools reading them; nil otherwise, so
// that objects of GitOpsClusters with short names are not rewritten.
func ownerAnnotations(gc *appsv1beta1.GitOpsCluster) map[string]string {
	if ownerNameLabel(gc.Name) == gc.Name {
		return nil
	}
	return map[string]string{constants.AnnotationOwner: gc.Namespace + "/" + gc.Name}
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
