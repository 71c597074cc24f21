package contract

import (
	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// Conditions the spoke agent reports on its own ManagedClusterAddOn.
const (
	// ConditionRouteAPI says how the spoke serves route.openshift.io/v1 (a RouteAPI*
	// reason); the hub ships the OpenShift flavour of the stack by it.
	ConditionRouteAPI             = "RouteAPI"
	ConditionRoutesCRDGuard       = "RoutesCRDGuard"
	ConditionOpenAPIV2Available   = "OpenAPIV2Available"
	ConditionDuplicateAPISurfaces = "DuplicateAPISurfaces"
	// ConditionArgoCDCRDsInstalled says whether the Argo CD CRDs the operator needs are
	// served on the spoke, who provides them, and which one failed and why.
	ConditionArgoCDCRDsInstalled = "ArgoCDCRDsInstalled"
	// ConditionArgoCDAgentCertificate: in Argo CD Agent mode, whether argocd-agent has the
	// client certificate OCM issued (pkg/spoke/argocdagent), and until when.
	ConditionArgoCDAgentCertificate = "ArgoCDAgentCertificate"
	// ConditionArgoCDAgentConnected: in Argo CD Agent mode, whether argocd-agent says it
	// is connected to the hub's principal (pkg/spoke/argocdagent).
	ConditionArgoCDAgentConnected = "ArgoCDAgentConnected"
)

// Reasons of the RouteAPI condition: how a spoke serves route.openshift.io/v1.
const (
	// RouteAPINative: a service-backed APIService (openshift-apiserver) serves Routes.
	RouteAPINative = "Native"
	// RouteAPICRD: no service-backed APIService; the routes.route.openshift.io CRD exists.
	RouteAPICRD = "CRD"
	// RouteAPIAbsent: neither exists.
	RouteAPIAbsent = "Absent"
	// RouteAPIUnknown: the facts could not be read; no destructive or shipping decision.
	RouteAPIUnknown = "Unknown"
)

// The OpenShift Route API, as the RouteAPI condition speaks of it.
const (
	// RoutesCRDName is the CRD that must never coexist with a native, service-backed
	// route.openshift.io APIService.
	RoutesCRDName = "routes.route.openshift.io"
	// RouteGroup and RouteVersion identify the OpenShift Route API.
	RouteGroup   = "route.openshift.io"
	RouteVersion = "v1"
)

// RouteGroupVersion is the Route API as openshift/api defines it; openshift/api is also
// where hack/crdgen takes the Routes CRD manifest from.
var RouteGroupVersion = routev1.GroupVersion

// ConditionRepositoryCredentials: whether the agent keeps the hub's repository
// credentials the Applications pulled to the cluster use (pkg/spoke/repocreds), and which
// names it refused to write because a Secret it did not create holds them.
const ConditionRepositoryCredentials = "RepositoryCredentials"

// ConditionExistingArgoCD: whether the spoke already runs an Argo CD or a GitOps
// operator that gitops-addon did not create (pkg/spoke/existingargocd). The hub ships the
// GitOps operator and the ArgoCD instance only once the agent reported it False
// (ExistingArgoCDNone); True names what it found and its owner, and the stack is
// withheld (or, with ExistingArgoCDUse, the existing instance is used); absent or Unknown,
// only the agent is shipped.
const ConditionExistingArgoCD = "ExistingArgoCD"

// Reasons of the ExistingArgoCD condition.
const (
	// ExistingArgoCDNone: no Argo CD or GitOps operator but ours: the stack is shipped.
	ExistingArgoCDNone = "NoneFound"
	// ExistingArgoCDOLM: a GitOps operator installed by OLM (a Subscription or a
	// ClusterServiceVersion of openshift-gitops-operator or argocd-operator).
	ExistingArgoCDOLM = "OLMOperator"
	// ExistingArgoCDInstance: an ArgoCD in the GitOps namespace that gitops-addon did not
	// create (no creation record of ours holds its UID).
	ExistingArgoCDInstance = "ArgoCDNotOurs"
	// ExistingArgoCDOperator: another operator Deployment watches the GitOps namespace.
	ExistingArgoCDOperator = "OtherOperator"
	// ExistingArgoCDUnknown: the facts could not be read; nothing more is shipped.
	ExistingArgoCDUnknown = "CannotTell"
)

// ExistingArgoCDReport is what a cluster's agent reported in its ExistingArgoCD
// condition, read in one place for the hub's render, the pull model and the GitOpsCluster.
type ExistingArgoCDReport struct {
	// Reported: the agent has said (True or False); an absent or Unknown condition is no
	// report, and nothing is decided on it.
	Reported bool
	// Found: an Argo CD or GitOps operator gitops-addon did not create runs there.
	Found bool
	// Message is the agent's, naming what it found and its owner.
	Message string
}

// ExistingArgoCDOf reads the report from a ManagedClusterAddOn's conditions.
func ExistingArgoCDOf(conditions []metav1.Condition) ExistingArgoCDReport {
	c := meta.FindStatusCondition(conditions, ConditionExistingArgoCD)
	if c == nil || c.Status == metav1.ConditionUnknown {
		return ExistingArgoCDReport{}
	}
	return ExistingArgoCDReport{Reported: true, Found: c.Status == metav1.ConditionTrue, Message: c.Message}
}

// ExistingArgoCDPolicy, as a ManagedCluster label, chooses per cluster what gitops-addon
// does where an Argo CD it did not create already runs, over its GitOpsCluster's
// spec.gitopsAddon.existingArgoCD; as a ManagedClusterAddOn annotation (AddonSettings) it
// is the choice the cluster's render follows.
const ExistingArgoCDPolicy = "gitops-addon.open-cluster-management.io/existing-argocd"

// The choices of ExistingArgoCDPolicy: those of spec.gitopsAddon.existingArgoCD.
const (
	// ExistingArgoCDSkip (the default): ship no operator and no ArgoCD there; the agent
	// only reports, and pulled Applications are not delivered to the cluster.
	ExistingArgoCDSkip = appsv1beta1.ExistingArgoCDSkip
	// ExistingArgoCDUse: use the existing instance: the agent (Route guard, CRD installer,
	// health) runs, pulled Applications are delivered to its namespace, and
	// argocd-platform-extensions is shipped only when asked for; never a second operator,
	// and the existing ArgoCD is never applied, labelled or owned.
	ExistingArgoCDUse = appsv1beta1.ExistingArgoCDUseExisting
)

// ConditionStackApplied is the one condition the hub writes on a ManagedClusterAddOn
// (pkg/hub/stackstatus): whether OCM's work agent applied every object of the addon's
// ManifestWorks on the cluster, and, when not, each object that failed with the work
// agent's own message (a conflict, a denied request). addon-framework's ManifestApplied
// says only "failed to apply the manifests of addon".
const ConditionStackApplied = "StackApplied"

// Reasons of the StackApplied condition.
const (
	StackApplied      = "Applied"
	StackApplyFailed  = "ApplyFailed"
	StackNotYetStatus = "WaitingForWorkAgent"
)
