package gitopscluster

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/bounded"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
)

// existingArgoCDChoice is what gitops-addon does on one cluster where an Argo CD it did
// not create runs (contract.ExistingArgoCDSkip or contract.ExistingArgoCDUse), and where
// that choice comes from, for the status message.
type existingArgoCDChoice struct {
	value  string
	source string
}

// setting is the choice as the addon settings carry it: "" for the default, Skip, so that
// the annotations of the clusters that keep the default never change.
func (c existingArgoCDChoice) setting() string {
	if c.value == contract.ExistingArgoCDSkip {
		return ""
	}
	return c.value
}

// String says the choice and what it does, e.g. for "cluster c1 (…)".
func (c existingArgoCDChoice) String() string {
	if c.value == contract.ExistingArgoCDUse {
		return fmt.Sprintf("%s, by %s: pulled Applications go to that instance, no operator or ArgoCD is shipped", c.value, c.source)
	}
	return fmt.Sprintf("%s, by %s: no operator or ArgoCD is shipped, no pulled Application is delivered", c.value, c.source)
}

// existingArgoCDChoiceOf is one cluster's choice: its ManagedCluster's
// contract.ExistingArgoCDPolicy label when set to a valid choice, else the
// GitOpsCluster's spec.gitopsAddon.existingArgoCD. A label with another value is
// reported (problem) and not used, as an invalid Argo CD Agent mode label is.
func existingArgoCDChoiceOf(gc *appsv1beta1.GitOpsCluster, mc *clusterv1.ManagedCluster) (existingArgoCDChoice, string) {
	spec := existingArgoCDChoice{value: gc.ExistingArgoCDChoice(), source: "spec.gitopsAddon.existingArgoCD"}
	if mc == nil {
		return spec, ""
	}
	label, set := mc.Labels[contract.ExistingArgoCDPolicy]
	switch {
	case !set:
		return spec, ""
	case label == contract.ExistingArgoCDSkip || label == contract.ExistingArgoCDUse:
		return existingArgoCDChoice{value: label, source: "the cluster's label " + contract.ExistingArgoCDPolicy}, ""
	default:
		return spec, fmt.Sprintf("ManagedCluster %s has label %s=%q, which is not a choice for an existing Argo CD: using the GitOpsCluster's %q. "+
			"Fix: set the label to %s or %s, or remove it.",
			mc.Name, contract.ExistingArgoCDPolicy, label, spec.value, contract.ExistingArgoCDSkip, contract.ExistingArgoCDUse)
	}
}

// existingArgoCD is one cluster whose addon reports an Argo CD gitops-addon did not
// create: the spoke agent's words (who owns it) and the choice in force there.
type existingArgoCD struct {
	cluster string
	found   string
	choice  existingArgoCDChoice
}

// maxFoundLength bounds how much of each spoke's own message the GitOpsCluster's
// condition quotes: it is written by the spoke, and maxListed of them go in one message.
const maxFoundLength = 300

// existingArgoCDReported reads the ExistingArgoCD condition the spoke agent reports on
// the cluster's ManagedClusterAddOn; nil unless it is True.
func existingArgoCDReported(cluster string, addon *addonv1beta1.ManagedClusterAddOn, choice existingArgoCDChoice) *existingArgoCD {
	report := contract.ExistingArgoCDOf(addon.Status.Conditions)
	if !report.Found {
		return nil
	}
	return &existingArgoCD{cluster: cluster, found: bounded.Cut(report.Message, maxFoundLength), choice: choice}
}

// existingArgoCDView is what a GitOpsCluster reads of an addon's ExistingArgoCD
// condition: whether it is True, and then its message; "" when it is not True.
func existingArgoCDView(a *addonv1beta1.ManagedClusterAddOn) string {
	report := contract.ExistingArgoCDOf(a.Status.Conditions)
	if !report.Found {
		return ""
	}
	return "True: " + report.Message
}

// existingArgoCDCondition (informational, not part of Ready) names the selected clusters
// that run an Argo CD gitops-addon did not create: the hub itself, and the clusters whose
// addon reports one, and says what is done there.
func existingArgoCDCondition(obs observation) metav1.Condition {
	c := metav1.Condition{Type: appsv1beta1.ConditionExistingArgoCD}
	hubs, existing := hubSentences(obs), existingSentence(obs.addons.existing)
	switch {
	case !obs.placement.resolved:
		c.Status, c.Reason = metav1.ConditionUnknown, appsv1beta1.ReasonPlacementUnresolved
		c.Message = "Waiting for the Placement to resolve."
	case len(hubs) > 0 && existing == "":
		c.Status, c.Reason = metav1.ConditionTrue, appsv1beta1.ReasonHubCluster
		c.Message = joinProblems(hubs)
	case existing != "":
		c.Status, c.Reason = metav1.ConditionTrue, appsv1beta1.ReasonExistingArgoCDFound
		c.Message = strings.TrimSpace(joinProblems(hubs) + " " + existing)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonNoExistingArgoCD
		c.Message = "No selected cluster is the hub itself, and no cluster's addon reports an Argo CD gitops-addon did not create."
	}
	if obs.hubIDProblem != "" && obs.placement.resolved {
		c.Message += " " + sentence(obs.hubIDProblem)
	}
	return c
}

// existingArgoCDCount is the status's ExistingArgoCDClusters: the hub clusters and the
// clusters whose addon reports an existing Argo CD (never both: the hub has no addon of ours).
func existingArgoCDCount(obs observation) int {
	return len(obs.hubs) + len(obs.addons.existing)
}

// hubSentences say, per hub cluster, why it is the hub and what is done there.
func hubSentences(obs observation) []string {
	var out []string
	for _, cluster := range obs.hubs.names() {
		registered := "registered as Argo CD's in-cluster destination " + localcluster.InClusterServer
		if by := obs.registration.inClusterBy[cluster]; by != "" {
			registered = fmt.Sprintf("Argo CD's in-cluster destination %s is registered already by %s, so gitops-addon writes none for it "+
				"(Argo CD keeps one cluster per server address)", localcluster.InClusterServer, by)
		}
		out = append(out, fmt.Sprintf("Cluster %s is the hub itself (%s): nothing shipped there; %s; pull-model Applications aimed at it are "+
			"refused, each with the fix (reason HubClusterNotPulled).", cluster, obs.hubs[cluster], registered))
	}
	return out
}

// existingSentence lists, at most maxListed, the clusters whose addon reports an existing
// Argo CD, each with what the spoke found and the choice in force; "" when there are none.
func existingSentence(existing []existingArgoCD) string {
	if len(existing) == 0 {
		return ""
	}
	var parts []string
	for i, e := range existing {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more clusters", len(existing)-maxListed))
			break
		}
		parts = append(parts, fmt.Sprintf("cluster %s (%s; %s)", e.cluster, strings.TrimSuffix(e.found, "."), e.choice))
	}
	return fmt.Sprintf("%d cluster(s) already run an Argo CD gitops-addon did not create, as their addon reports: %s. "+
		"To change what is done there, set spec.gitopsAddon.existingArgoCD, or label the ManagedCluster %s=%s or %s.",
		len(existing), strings.Join(parts, "; "), contract.ExistingArgoCDPolicy, contract.ExistingArgoCDSkip, contract.ExistingArgoCDUse)
}
