// Package existingargocd finds, on a spoke, an Argo CD or a GitOps operator that
// gitops-addon did not create, before the hub ships its own: an ArgoCD in the GitOps
// namespace that is not in the agent's creation record, a GitOps operator installed by
// OLM (a Subscription or ClusterServiceVersion of openshift-gitops-operator or
// argocd-operator), or any other operator Deployment that watches the namespace. It
// reports what it found as the ExistingArgoCD condition on the addon's
// ManagedClusterAddOn; the hub ships the GitOps operator and the ArgoCD instance only
// while that condition is False. It keeps the creation record: the UID of the instance
// gitops-addon created, which is all the pre-delete hook will ever delete.
package existingargocd

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Instance is an ArgoCD in the GitOps namespace, as far as the decision goes.
type Instance struct {
	Namespace, Name string
	UID             types.UID
	Created         time.Time
	// LabelledOurs: it carries app.kubernetes.io/managed-by=gitops-addon (which a
	// server-side apply of ours also merges into someone else's instance: no proof).
	LabelledOurs bool
}

func (i Instance) key() string { return i.Namespace + "/" + i.Name }

// OLMOperator is a GitOps operator OLM installed or is installing: a Subscription or a
// ClusterServiceVersion.
type OLMOperator struct {
	Kind, Namespace, Name string
	// Package is the OLM package (openshift-gitops-operator or argocd-operator).
	Package string
	// Version is the installed CSV's version when known, e.g. v1.16.0.
	Version string
}

// Operator is a Deployment that runs a GitOps (Argo CD) operator watching the GitOps
// namespace.
type Operator struct {
	Namespace, Name string
	// Ours: the Deployment gitops-addon ships (its name, namespace and label).
	Ours bool
}

// Facts are what the agent read on the cluster.
type Facts struct {
	Instances []Instance
	OLM       []OLMOperator
	Operators []Operator
	Record    Record
}

// Verdict is the decision: the condition to report, and what to record.
type Verdict struct {
	// Status is False when nothing but gitops-addon's own stack runs here.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Record is the record as it must be after this decision; RecordChanged: write it.
	Record        Record
	RecordChanged bool
	// RecordedInstance is the namespace/name of the recorded instance, for the record.
	RecordedInstance string
}

// Decide says whether the cluster runs an Argo CD gitops-addon did not create. now is
// the time the facts were read. An instance is ours only when the record holds its UID,
// or when it was created, with our label, after the cluster was found to run no other
// Argo CD (the work agent applied it): then it is recorded. An instance of an earlier
// gitops-addon (labelled, our operator beside it, nothing else on the cluster, no record
// yet) is adopted into the record once, when the agent is upgraded to one that keeps it.
func Decide(f Facts, now time.Time) Verdict {
	v := Verdict{Record: f.Record}
	ours, foreign := splitInstances(f)
	if ours == nil {
		if adopted := adoptable(f, foreign); adopted != nil {
			ours = adopted
			foreign = slices.DeleteFunc(foreign, func(i Instance) bool { return i.UID == adopted.UID })
			v.Record.ArgoCDUID, v.Record.How = adopted.UID, adopted.how
			v.RecordChanged, v.RecordedInstance = true, adopted.key()
		}
	}
	others := otherOperators(f.Operators)
	findings := describe(f.OLM, foreign, others)
	if ours != nil {
		v.Status, v.Reason = metav1.ConditionFalse, contract.ExistingArgoCDNone
		v.Message = fmt.Sprintf("ArgoCD %s is gitops-addon's (UID %s in the creation record %s).", ours.key(), ours.UID, contract.CreationRecordConfigMap)
		if len(findings) > 0 {
			v.Message += " Also found: " + strings.Join(findings, "; ") + ". Two operators reconciling one namespace fight over it: remove the other " +
				"one, or remove this cluster from the GitOpsCluster's Placement."
		}
		return v
	}
	if len(findings) > 0 {
		v.Status, v.Reason = metav1.ConditionTrue, reason(f.OLM, foreign)
		v.Message = "Found " + strings.Join(findings, "; ") + ". gitops-addon ships no GitOps operator and no ArgoCD here and never changes or " +
			"deletes these; spec.gitopsAddon.existingArgoCD (or the cluster label " + contract.ExistingArgoCDPolicy + ") says whether pulled " +
			"Applications use the existing instance (UseExisting) or the cluster is skipped (Skip)."
		return v
	}
	v.Status, v.Reason = metav1.ConditionFalse, contract.ExistingArgoCDNone
	v.Message = "No Argo CD and no GitOps operator but gitops-addon's run on this cluster."
	if f.Record.VerifiedAbsentAt.IsZero() {
		v.Record.VerifiedAbsentAt = now.UTC().Truncate(time.Second)
		v.RecordChanged = true
	}
	return v
}

// candidate is an instance that may be recorded as ours, and how.
type candidate struct {
	Instance
	how string
}

// splitInstances finds the recorded instance (ours, or one the work agent created after
// the cluster was found empty, which is recorded now) and the others (foreign).
func splitInstances(f Facts) (*candidate, []Instance) {
	var ours *candidate
	var foreign []Instance
	for _, i := range f.Instances {
		switch {
		case f.Record.Ours(i.UID):
			ours = &candidate{Instance: i, how: f.Record.How}
		default:
			foreign = append(foreign, i)
		}
	}
	return ours, foreign
}

// adoptable is the instance to record as ours when the record holds none: the one the
// work agent created from the hub's render after the cluster was verified empty, or one
// an earlier gitops-addon created (before it kept a record). Nothing else may run beside
// it: no OLM operator, no other operator Deployment, no other instance.
func adoptable(f Facts, foreign []Instance) *candidate {
	if len(f.OLM) > 0 || len(otherOperators(f.Operators)) > 0 || len(foreign) != 1 {
		return nil
	}
	i := foreign[0]
	if !i.LabelledOurs || i.Namespace != contract.GitOpsNamespace || i.Name != contract.ArgoCDName {
		return nil
	}
	switch {
	case !f.Record.VerifiedAbsentAt.IsZero() && !i.Created.Before(f.Record.VerifiedAbsentAt):
		return &candidate{Instance: i, how: "created by gitops-addon after the cluster was found to run no other Argo CD"}
	case f.Record.VerifiedAbsentAt.IsZero() && slices.ContainsFunc(f.Operators, func(o Operator) bool { return o.Ours }):
		return &candidate{Instance: i, how: "adopted from an earlier gitops-addon (labelled, run by gitops-addon's operator, nothing else on the cluster)"}
	}
	return nil
}

func otherOperators(ops []Operator) []Operator {
	return slices.DeleteFunc(slices.Clone(ops), func(o Operator) bool { return o.Ours })
}

// reason names the strongest finding: OLM's operator, then an instance, then another
// operator Deployment.
func reason(olm []OLMOperator, foreign []Instance) string {
	switch {
	case len(olm) > 0:
		return contract.ExistingArgoCDOLM
	case len(foreign) > 0:
		return contract.ExistingArgoCDInstance
	}
	return contract.ExistingArgoCDOperator
}

// describe names each finding for people, owner first: "OpenShift GitOps v1.16.0 via OLM
// (Subscription openshift-gitops-operator/openshift-gitops-operator)", "ArgoCD
// openshift-gitops/openshift-gitops (not created by gitops-addon)".
func describe(olm []OLMOperator, foreign []Instance, others []Operator) []string {
	var out []string
	for _, o := range olm {
		product := "Argo CD operator"
		if o.Package == "openshift-gitops-operator" {
			product = "OpenShift GitOps"
		}
		if o.Version != "" {
			product += " " + o.Version
		}
		out = append(out, fmt.Sprintf("%s via OLM (%s %s/%s)", product, o.Kind, o.Namespace, o.Name))
	}
	for _, i := range foreign {
		out = append(out, fmt.Sprintf("ArgoCD %s (not created by gitops-addon)", i.key()))
	}
	for _, o := range others {
		out = append(out, fmt.Sprintf("operator Deployment %s/%s watching %s", o.Namespace, o.Name, contract.GitOpsNamespace))
	}
	return out
}
