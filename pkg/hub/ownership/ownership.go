// Package ownership records which GitOpsCluster created an object on the hub, in labels
// (cross-namespace owner references are invalid in Kubernetes), and reads it back: the
// one place that knows the owner labels' format.
package ownership

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Labels and annotations of the objects a GitOpsCluster created.
const (
	// LabelNamespace and LabelName name the GitOpsCluster that created an object.
	LabelNamespace = "gitops-addon.open-cluster-management.io/gitopscluster-namespace"
	LabelName      = "gitops-addon.open-cluster-management.io/gitopscluster-name"
	// AnnotationOwner ("<namespace>/<name>") names the GitOpsCluster in full on the objects
	// it created when its name is longer than a label value and LabelName holds it hashed.
	AnnotationOwner = "gitops-addon.open-cluster-management.io/gitopscluster"
)

// Owner identifies the GitOpsCluster that created an object, as its owner labels do:
// Name is the GitOpsCluster's name, or for a name longer than a label value may be, its
// hashed form (NameLabel).
type Owner struct {
	Namespace string
	Name      string
}

func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// Of is the Owner a GitOpsCluster records on what it creates.
func Of(gitOpsCluster client.Object) Owner {
	return Owner{Namespace: gitOpsCluster.GetNamespace(), Name: NameLabel(gitOpsCluster.GetName())}
}

// NameLabel is a GitOpsCluster's name as a label value: the name itself when it fits in
// 63 characters, else its first 52 characters and 10 hex digits of its SHA-256. A
// GitOpsCluster's name may have up to 253.
func NameLabel(name string) string {
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:52], "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// Labels are the labels every object created for one GitOpsCluster carries.
func Labels(gitOpsCluster client.Object) map[string]string {
	return map[string]string{
		contract.LabelManagedBy: contract.ManagedByValue,
		LabelNamespace:          gitOpsCluster.GetNamespace(),
		LabelName:               NameLabel(gitOpsCluster.GetName()),
	}
}

// Annotations name the GitOpsCluster in full on the objects it created when its name had
// to be hashed into the labels, for people and tools reading them; nil otherwise, so that
// objects of GitOpsClusters with short names are not rewritten.
func Annotations(gitOpsCluster client.Object) map[string]string {
	if NameLabel(gitOpsCluster.GetName()) == gitOpsCluster.GetName() {
		return nil
	}
	return map[string]string{AnnotationOwner: gitOpsCluster.GetNamespace() + "/" + gitOpsCluster.GetName()}
}

// Selector selects the objects created for one GitOpsCluster.
func Selector(gitOpsCluster client.Object) client.MatchingLabels {
	return client.MatchingLabels(Labels(gitOpsCluster))
}

// Recorded reads the owner labels of an object; ok is false when the object was not
// created for a GitOpsCluster by gitops-addon.
func Recorded(obj client.Object) (Owner, bool) {
	labels := obj.GetLabels()
	if labels[contract.LabelManagedBy] != contract.ManagedByValue {
		return Owner{}, false
	}
	o := Owner{Namespace: labels[LabelNamespace], Name: labels[LabelName]}
	return o, o.Namespace != "" && o.Name != ""
}

// KeyOf is the key of the GitOpsCluster that created obj, its full name read from
// AnnotationOwner when the labels hold it hashed; ok is false when no GitOpsCluster of
// gitops-addon created obj.
func KeyOf(obj client.Object) (client.ObjectKey, bool) {
	o, ok := Recorded(obj)
	if !ok {
		return client.ObjectKey{}, false
	}
	name := o.Name
	if ns, full, found := strings.Cut(obj.GetAnnotations()[AnnotationOwner], "/"); found && ns == o.Namespace && NameLabel(full) == o.Name {
		name = full
	}
	return client.ObjectKey{Namespace: o.Namespace, Name: name}, true
}

// Relation classifies an existing object relative to a GitOpsCluster.
type Relation int

const (
	// OwnedByIt: the GitOpsCluster created the object.
	OwnedByIt Relation = iota
	// OwnedByOther: another GitOpsCluster created it.
	OwnedByOther
	// NotOwned: someone else created it: never modified, never deleted.
	NotOwned
)

// Classify tells how obj relates to gitOpsCluster, and who owns it when a GitOpsCluster does.
func Classify(obj, gitOpsCluster client.Object) (Relation, Owner) {
	o, ok := Recorded(obj)
	switch {
	case !ok:
		return NotOwned, Owner{}
	case o == Of(gitOpsCluster):
		return OwnedByIt, o
	default:
		return OwnedByOther, o
	}
}

// Transfer records newOwner as the GitOpsCluster that owns obj (its owner labels and
// annotation), changing nothing else; the caller writes obj.
func Transfer(obj, newOwner client.Object) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, Labels(newOwner))
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	delete(annotations, AnnotationOwner)
	if full := Annotations(newOwner); full != nil {
		if annotations == nil {
			annotations = map[string]string{}
		}
		maps.Copy(annotations, full)
	}
	obj.SetAnnotations(annotations)
}
