package crdinstall

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/crdowner"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall/crds"
)

// action is what the installer does about one CRD.
type action int

const (
	// actionNone: ours, current, and unchanged since we last applied it.
	actionNone action = iota
	// actionApply: missing, or ours and (possibly) different from the embedded copy:
	// apply it (create, adopt, upgrade or repair).
	actionApply
	// actionWaitDeletion: being deleted; it is created again once it is gone.
	actionWaitDeletion
	// actionLeaveForeign: it belongs to someone else; never touched.
	actionLeaveForeign
	// actionKeepNewer: ours, but from a newer upstream version than this agent's: an
	// older agent never downgrades a CRD.
	actionKeepNewer
)

// applied is what the installer remembers of its last apply of a CRD: while the CRD has
// the same UID and generation, nobody changed its spec since.
type applied struct {
	uid        types.UID
	generation int64
}

// verdict is a decision about one CRD and why.
type verdict struct {
	action action
	why    string
}

// decide says what to do with the embedded desired CRD given the cluster's current one
// (nil when absent) and the installer's memory of its last apply (nil when none since
// the agent started). It never returns a destructive action.
func decide(desired *CRD, current *apiextensionsv1.CustomResourceDefinition, last *applied) verdict {
	switch {
	case current == nil:
		return verdict{actionApply, "missing"}
	case current.DeletionTimestamp != nil:
		return verdict{actionWaitDeletion, "being deleted; it is installed again once it is gone"}
	case current.Labels[contract.LabelManagedBy] != contract.ManagedByValue:
		return verdict{actionLeaveForeign, "provided by " + provider(current) + ", left alone"}
	}
	installed := current.Annotations[crds.AnnotationSource]
	if newer, v := isNewer(installed, desired.Source); newer {
		return verdict{actionKeepNewer, fmt.Sprintf("installed from %s, newer than this agent's %s: kept", v, sourceVersion(desired.Source))}
	}
	switch {
	case installed != desired.Source:
		return verdict{actionApply, fmt.Sprintf("installed from %q, this agent carries %q", installed, desired.Source)}
	case last == nil:
		return verdict{actionApply, "not applied since the agent started"}
	case last.uid != current.UID || last.generation != current.Generation:
		return verdict{actionApply, fmt.Sprintf("changed by someone else (generation %d, applied %d)", current.Generation, last.generation)}
	}
	return verdict{actionNone, "current"}
}

// isNewer says whether the installed source is a newer version of the same upstream
// module than the desired one, and returns the installed version.
func isNewer(installed, desired string) (bool, string) {
	if installed == "" || sourceModule(installed) != sourceModule(desired) {
		return false, ""
	}
	have, err1 := version.ParseSemantic(sourceVersion(installed))
	want, err2 := version.ParseSemantic(sourceVersion(desired))
	if err1 != nil || err2 != nil {
		return false, ""
	}
	return have.GreaterThan(want), sourceVersion(installed)
}

// provider names who seems to manage a CRD that is not ours, for the report.
func provider(crd *apiextensionsv1.CustomResourceDefinition) string {
	if who := crdowner.Other(crd.Labels); who != "" {
		return who
	}
	return "someone else (no " + contract.LabelManagedBy + ": " + contract.ManagedByValue + " label)"
}
