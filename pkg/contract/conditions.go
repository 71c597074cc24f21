package contract

import routev1 "github.com/openshift/api/route/v1"

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
	// client certificate OCM issued (pkg/spoke/agentcert), and until when.
	ConditionArgoCDAgentCertificate = "ArgoCDAgentCertificate"
	// ConditionArgoCDAgentConnected: in Argo CD Agent mode, whether argocd-agent says it
	// is connected to the hub's principal (pkg/spoke/agenthealth).
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
