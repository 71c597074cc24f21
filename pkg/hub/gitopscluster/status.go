package gitopscluster

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
)

// maxListed bounds how many cluster names a condition message lists, so that a fleet of
// thousands of clusters cannot blow up the status.
const maxListed = 10

// placementResult is what resolving the Placement found.
type placementResult struct {
	resolved bool
	reason   string
	message  string
	clusters []string // decided clusters, sorted, unique
}

// registrationResult is what registering the clusters with Argo CD found.
type registrationResult struct {
	registered int
	problems   []string // one sentence each: what is wrong and how to fix it
	conflict   bool     // a problem is an object owned by someone else
	// accessFailed: a read or write of the shared ApplicationSet objects failed (a
	// problem says which, with the fix).
	accessFailed bool
	// inClusterBy names, per hub cluster registered by a Secret not of this GitOpsCluster,
	// that Secret; a hub cluster absent here has ours.
	inClusterBy map[string]string
}

// addonResult is what ensuring the ManagedClusterAddOns found.
type addonResult struct {
	enabled bool
	// hubOnly: the installation does not deliver the addon; deliverer then names the
	// ClusterManagementAddOn that does ("" when there is none).
	hubOnly      bool
	deliverer    string
	withAddon    int      // decided clusters with a gitops-addon ManagedClusterAddOn
	available    int      // of those, Available=True
	notAvailable []string // clusters whose addon is not (yet) Available
	problems     []string
	conflict     bool
	// draining says, per cluster whose removal is held, which Applications it waits for.
	draining []string
	// recheckAfter is when a ManagedClusterAddOn being removed will have waited StuckAfter.
	recheckAfter time.Duration
	// argoCDAgentMode clusters in Argo CD Agent mode, of which argoCDAgentCertificates reported their
	// client certificate in place (argoCDAgentWithoutCertificate the others) and argoCDAgentConnected
	// their argocd-agent connected to the principal (agentNotConnected the others).
	argoCDAgentMode, argoCDAgentCertificates, argoCDAgentConnected int
	argoCDAgentWithoutCertificate, agentNotConnected               []string
	// existing are the clusters whose addon reports an Argo CD gitops-addon did not create.
	existing []existingArgoCD
}

// observation gathers everything one reconcile learned; status is a pure function of it.
type observation struct {
	placement placementResult
	// hubs are the decided clusters that are the hub itself; hubIDProblem says why the
	// hub's cluster ID is unknown ("" when it is known).
	hubs         hubClusters
	hubIDProblem string
	registration registrationResult
	addons       addonResult
	live         liveResult
	unsupported  []string
	trust        argocdagent.Trust
	// failed is the step that could not be done, if one could not; the steps after it
	// were not attempted.
	failed *stepFailure
}

// stepFailure is an error from the API (or our own) that stopped a reconcile at the step
// whose condition it reports on.
type stepFailure struct {
	condition string
	err       error
	// reason, when set, makes this a refusal of the spec rather than an API error: the
	// condition takes this reason and the error's own message (which says the fix), and
	// nothing retries until the spec or the manager's configuration changes.
	reason string
	// pending: not a failure but a wait for another controller (the Argo CD Agent trust
	// being issued); the condition is Unknown, no Warning is recorded, and that
	// controller's writes wake the reconcile.
	pending bool
}

// conditionOrder is the order in which a reconcile does its steps.
// ExistingArgoCD is read from what the steps found, so it comes last: a failed step leaves
// it Unknown.
var conditionOrder = []string{appsv1beta1.ConditionPlacementResolved, appsv1beta1.ConditionArgoCDAgentTrust,
	appsv1beta1.ConditionLiveResources, appsv1beta1.ConditionClustersRegistered, appsv1beta1.ConditionAddOnsReady, appsv1beta1.ConditionExistingArgoCD}

// informational conditions say what is worth knowing about the clusters and never make
// Ready False: a cluster that runs its own Argo CD is a fact, not a fault, and the rest of
// the fleet must stay Ready beside it.
var informational = map[string]bool{appsv1beta1.ConditionExistingArgoCD: true}

// applyFailure turns the condition of the failed step False with the error and its fix,
// and the conditions of the steps not attempted Unknown.
func applyFailure(conds []metav1.Condition, f *stepFailure) {
	if f == nil {
		return
	}
	after := false
	for _, t := range conditionOrder {
		for i := range conds {
			if conds[i].Type != t {
				continue
			}
			switch {
			case t == f.condition && f.pending:
				conds[i].Status, conds[i].Reason, conds[i].Message = metav1.ConditionUnknown, appsv1beta1.ReasonTrustPending, sentence(f.err.Error())
				after = true
			case after && f.pending:
				conds[i].Status, conds[i].Reason = metav1.ConditionUnknown, appsv1beta1.ReasonTrustPending
				conds[i].Message = "Not evaluated yet: " + f.err.Error() + "."
			case t == f.condition && f.reason != "":
				conds[i].Status, conds[i].Reason, conds[i].Message = metav1.ConditionFalse, f.reason, f.err.Error()
				after = true
			case t == f.condition:
				conds[i].Status, conds[i].Reason, conds[i].Message = metav1.ConditionFalse, appsv1beta1.ReasonReconcileError, failureMessage(f.err)
				after = true
			case after:
				conds[i].Status, conds[i].Reason = metav1.ConditionUnknown, cmp.Or(f.reason, appsv1beta1.ReasonReconcileError)
				conds[i].Message = "Not evaluated: an earlier step failed (see " + f.condition + ")."
			}
		}
	}
}

// failureMessage says what failed, as the apiserver put it, and what fixes it. It
// retries with backoff either way.
func failureMessage(err error) string {
	var fix string
	switch {
	case apierrors.IsForbidden(err):
		fix = "the manager's ServiceAccount lacks this permission: restore the chart's ClusterRole (helm upgrade) or grant the verb named above."
	case isNamespaceNotFound(err):
		fix = "create that namespace, or set spec.argoServer.argoNamespace to the namespace of your Argo CD."
	case apierrors.IsInvalid(err):
		fix = "the apiserver refused the object gitops-addon wrote (an admission policy or webhook may reject it); the message names the field."
	case apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err):
		fix = "the apiserver is overloaded or unavailable; nothing to change."
	default:
		fix = "see the error above."
	}
	return fmt.Sprintf("%v. Fix: %s Retrying with backoff.", err, fix)
}

func isNamespaceNotFound(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// computeStatus derives the whole status of a GitOpsCluster of a generation from one
// observation. It keeps LastTransitionTime of the conditions of last (the status before)
// whose status did not change.
func computeStatus(generation int64, last appsv1beta1.GitOpsClusterStatus, obs observation, now metav1.Time) appsv1beta1.GitOpsClusterStatus {
	st := *last.DeepCopy()
	st.ObservedGeneration = generation
	st.SelectedClusters = clusterCount(len(obs.placement.clusters))
	st.AddonEnabledClusters = clusterCount(obs.addons.withAddon)
	st.AddonAvailableClusters = clusterCount(obs.addons.available)
	st.ExistingArgoCDClusters = clusterCount(existingArgoCDCount(obs))

	conds := []metav1.Condition{
		placementCondition(obs.placement),
		registrationCondition(obs),
		addonsCondition(obs),
		existingArgoCDCondition(obs),
	}
	if obs.trust.Enabled {
		conds = append(conds, agentCondition(obs))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, appsv1beta1.ConditionArgoCDAgentTrust)
	}
	if obs.live.requested {
		conds = append(conds, liveCondition(obs))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, appsv1beta1.ConditionLiveResources)
	}
	applyFailure(conds, obs.failed)
	conds = append(conds, readyCondition(conds))
	for _, c := range conds {
		c.ObservedGeneration = generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&st.Conditions, c)
	}

	ready := meta.IsStatusConditionTrue(st.Conditions, appsv1beta1.ConditionReady)
	st.Phase = "failed"
	if ready {
		st.Phase = "successful"
	}
	st.Message = meta.FindStatusCondition(st.Conditions, appsv1beta1.ConditionReady).Message
	if len(obs.unsupported) > 0 {
		st.Message += fmt.Sprintf(" Not acted upon by gitops-addon: %s.", strings.Join(obs.unsupported, ", "))
	}
	return st
}

// statusChanged tells whether a new status differs from the old one in anything but
// LastUpdateTime, so that a steady state writes nothing.
func statusChanged(old, updated appsv1beta1.GitOpsClusterStatus) bool {
	updated.LastUpdateTime = old.LastUpdateTime
	return !equality.Semantic.DeepEqual(old, updated)
}

func placementCondition(p placementResult) metav1.Condition {
	if !p.resolved {
		return metav1.Condition{Type: appsv1beta1.ConditionPlacementResolved, Status: metav1.ConditionFalse, Reason: p.reason, Message: p.message}
	}
	return metav1.Condition{
		Type: appsv1beta1.ConditionPlacementResolved, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonResolved,
		Message: fmt.Sprintf("The Placement decided %d cluster(s).", len(p.clusters)),
	}
}

func registrationCondition(obs observation) metav1.Condition {
	c := metav1.Condition{Type: appsv1beta1.ConditionClustersRegistered}
	switch {
	case !obs.placement.resolved:
		c.Status, c.Reason = metav1.ConditionUnknown, appsv1beta1.ReasonPlacementUnresolved
		c.Message = "Waiting for the Placement to resolve; existing registrations are left unchanged."
	case len(obs.registration.problems) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonRegistrationFailed
		switch {
		case obs.registration.conflict:
			c.Reason = appsv1beta1.ReasonOwnedByOther
		case obs.registration.accessFailed:
			c.Reason = appsv1beta1.ReasonReconcileError
		}
		c.Message = joinProblems(obs.registration.problems)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, appsv1beta1.ReasonRegistered
		c.Message = fmt.Sprintf("%d cluster(s) registered with Argo CD; ApplicationSet placement ConfigMap and RBAC in place.", obs.registration.registered)
	}
	return c
}

func addonsCondition(obs observation) metav1.Condition {
	c := metav1.Condition{Type: appsv1beta1.ConditionAddOnsReady}
	a := obs.addons
	switch {
	case !a.enabled:
		c.Status, c.Reason = metav1.ConditionTrue, appsv1beta1.ReasonAddOnDisabled
		c.Message = "spec.gitopsAddon.enabled is not true: no ManagedClusterAddOn is managed."
	case a.hubOnly && a.deliverer == "":
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonAddOnNotDelivered
		c.Message = "spec.gitopsAddon.enabled is true, but nothing delivers the addon: this installation is hub-only (manager --deliver-addon=false, " +
			"chart addonManager.enabled=false) and there is no ClusterManagementAddOn " + contract.AddonName + ". Fix: install the chart with " +
			"addonManager.enabled=true, or set spec.gitopsAddon.enabled to false."
	case a.hubOnly:
		c.Status, c.Reason = metav1.ConditionTrue, appsv1beta1.ReasonAddOnDeliveredElsewhere
		c.Message = "spec.gitopsAddon.enabled is true; this installation is hub-only (manager --deliver-addon=false, chart addonManager.enabled=false), so " +
			"the ManagedClusterAddOns and each spoke's GitOps stack are left to the ClusterManagementAddOn " + contract.AddonName + " (" + a.deliverer +
			"): none is created, changed or removed here."
	case !obs.placement.resolved:
		c.Status, c.Reason = metav1.ConditionUnknown, appsv1beta1.ReasonPlacementUnresolved
		c.Message = "Waiting for the Placement to resolve; existing addons are left unchanged."
	case len(a.problems) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonAddOnFailed
		if a.conflict {
			c.Reason = appsv1beta1.ReasonOwnedByOther
		}
		c.Message = joinProblems(a.problems)
	case len(a.draining) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonWaitingForApplications
		c.Message = joinProblems(a.draining)
	case len(a.notAvailable) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonAddOnsProgressing
		c.Message = fmt.Sprintf("%d of %d addon(s) Available; waiting for: %s.", a.available, a.withAddon, listNames(a.notAvailable))
	case len(a.agentNotConnected) > 0:
		// The stack is delivered, but GitOps does not reach these clusters until their
		// argocd-agent connects.
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonArgoCDAgentsNotConnected
		c.Message = fmt.Sprintf("%d of %d addon(s) Available.", a.available, a.withAddon)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, appsv1beta1.ReasonAddOnsAvailable
		c.Message = fmt.Sprintf("%d of %d addon(s) Available.", a.available, a.withAddon)
	}
	if a.enabled && obs.placement.resolved && a.argoCDAgentMode > 0 {
		c.Message += fmt.Sprintf(" Argo CD Agent client certificate in place on %d of %d Argo CD Agent mode cluster(s)", a.argoCDAgentCertificates, a.argoCDAgentMode)
		if len(a.argoCDAgentWithoutCertificate) > 0 {
			c.Message += "; not yet on: " + listNames(
				a.argoCDAgentWithoutCertificate,
			) + " (see their ManagedClusterAddOn's " + contract.ConditionArgoCDAgentCertificate + " condition)"
		}
		c.Message += fmt.Sprintf("; argocd-agent connected to the principal on %d of %d", a.argoCDAgentConnected, a.argoCDAgentMode)
		if len(a.agentNotConnected) > 0 {
			c.Message += "; not connected: " + listNames(
				a.agentNotConnected,
			) + " (see their ManagedClusterAddOn's " + contract.ConditionArgoCDAgentConnected + " condition)"
		}
		c.Message += "."
	}
	return c
}

func agentCondition(obs observation) metav1.Condition {
	if !obs.placement.resolved || obs.trust.CA.Secret == "" {
		return metav1.Condition{Type: appsv1beta1.ConditionArgoCDAgentTrust, Status: metav1.ConditionUnknown, Reason: appsv1beta1.ReasonPlacementUnresolved,
			Message: "Not evaluated yet: the Placement must resolve first."}
	}
	return obs.trust.Condition()
}

func readyCondition(conds []metav1.Condition) metav1.Condition {
	var notReady []string
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue && !informational[c.Type] {
			notReady = append(notReady, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	if len(notReady) == 0 {
		return metav1.Condition{Type: appsv1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonReady, Message: "All clusters are " +
			"registered and every addon is Available."}
	}
	return metav1.Condition{
		Type:    appsv1beta1.ConditionReady,
		Status:  metav1.ConditionFalse,
		Reason:  appsv1beta1.ReasonNotReady,
		Message: strings.Join(notReady, " "),
	}
}

// listNames lists at most maxListed names, sorted, and says how many more there are.
func listNames(names []string) string {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	if len(sorted) <= maxListed {
		return strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(sorted[:maxListed], ", "), len(sorted)-maxListed)
}

// joinProblems joins at most maxListed problem sentences.
func joinProblems(problems []string) string {
	if len(problems) <= maxListed {
		return strings.Join(problems, " ")
	}
	return fmt.Sprintf("%s (and %d more problems)", strings.Join(problems[:maxListed], " "), len(problems)-maxListed)
}

// unsupportedFields lists the compatibility fields that are set but not acted upon.
func unsupportedFields(gc *appsv1beta1.GitOpsCluster) []string {
	var fields []string
	if gc.Spec.ManagedServiceAccountRef != "" {
		fields = append(fields, "spec.managedServiceAccountRef")
	}
	if gc.Spec.CreatePolicyTemplate != nil && *gc.Spec.CreatePolicyTemplate {
		fields = append(fields, "spec.createPolicyTemplate")
	}
	a := gc.Spec.GitOpsAddon
	if a == nil {
		return fields
	}
	set := map[string]bool{
		"spec.gitopsAddon.gitOpsOperatorNamespace": a.GitOpsOperatorNamespace != "",
		"spec.gitopsAddon.gitOpsNamespace":         a.GitOpsNamespace != "",
		"spec.gitopsAddon.reconcileScope":          a.ReconcileScope != "",
		"spec.gitopsAddon.uninstall":               a.Uninstall != nil && *a.Uninstall,
		"spec.gitopsAddon.overrideExistingConfigs": a.OverrideExistingConfigs != nil && *a.OverrideExistingConfigs,
		"spec.gitopsAddon.olmSubscription":         a.OLMSubscription != nil,
	}
	// Argo CD Agent mode itself is acted upon; of its fields, only uninstall is not.
	if agent := a.ArgoCDAgent; agent != nil {
		set["spec.gitopsAddon.argoCDAgent.uninstall"] = agent.Uninstall != nil && *agent.Uninstall
	}
	for name, isSet := range set {
		if isSet {
			fields = append(fields, name)
		}
	}
	sort.Strings(fields)
	return fields
}

// clusterCount converts a count of clusters for the status's int32 fields, saturating
// instead of wrapping (a fleet is far below 2^31 clusters, but a wrapped count would lie).
func clusterCount(n int) int32 {
	return int32(min(n, math.MaxInt32)) //nolint:gosec // G115: bounded by the min above
}

// sentence makes a message that starts in lower case a sentence.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}
