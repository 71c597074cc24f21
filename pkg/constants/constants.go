// Package constants holds the names shared by the hub manager, the spoke agent and
// the manifests they render, so that both sides of the addon always agree on them.
package constants

import (
	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ArgoCDGVK is the kind of the Argo CD instance the addon delivers (the GitOps
// operator's ArgoCD), handled as unstructured or metadata so that gitops-addon needs no
// Go dependency on the operator's API.
var ArgoCDGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1beta1", Kind: "ArgoCD"}

const (
	// AddonName is the name of the ClusterManagementAddOn, of every ManagedClusterAddOn,
	// of the addon lease and of the Helm release rendered for each cluster.
	AddonName = "gitops-addon"

	// AgentName is the constant agent name in the addon's CSR subject. It must never
	// change between manager restarts, or the CSR approver rejects renewals.
	AgentName = "gitops-addon-agent"

	// HubKubeconfigSecret is the secret OCM's registration agent writes on the spoke
	// with the agent's hub credential (kubeconfig, tls.crt, tls.key, cluster-name).
	HubKubeconfigSecret = AddonName + "-hub-kubeconfig"

	// AgentDeployment is the name of the spoke agent Deployment and its ServiceAccount.
	AgentDeployment = "gitops-addon-agent"

	// GitOpsNamespace is where the GitOps operator and the Argo CD instance run on a spoke.
	GitOpsNamespace = "openshift-gitops"

	// ArgoCDName is the name of the ArgoCD custom resource shipped to each spoke.
	ArgoCDName = "openshift-gitops"

	// OperatorDeployment is the GitOps operator Deployment shipped to each spoke.
	OperatorDeployment = "openshift-gitops-operator-controller-manager"

	// PlatformExtensionsClusterRole is the least-privilege ClusterRole granted to the
	// spoke Argo CD application controller.
	PlatformExtensionsClusterRole = "argocd-platform-extensions"

	// RoutesCRDName is the CRD that must never coexist with a native, service-backed
	// route.openshift.io APIService.
	RoutesCRDName = "routes.route.openshift.io"

	// RouteGroup and RouteVersion identify the OpenShift Route API.
	RouteGroup   = "route.openshift.io"
	RouteVersion = "v1"

	// PlacementConfigMapName is the ConfigMap an ApplicationSet clusterDecisionResource
	// generator names in configMapRef to read PlacementDecisions, as in Red Hat ACM.
	PlacementConfigMapName = "acm-placement"
)

// RouteGroupVersion is the Route API as openshift/api defines it; openshift/api is also
// where hack/crdgen takes the Routes CRD manifest from.
var RouteGroupVersion = routev1.GroupVersion

// Labels and annotations written by gitops-addon.
const (
	// LabelManagedBy marks every object gitops-addon creates; caches are filtered on it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on our objects.
	ManagedByValue = "gitops-addon"

	// LabelOwnerNamespace and LabelOwnerName name the GitOpsCluster that created an
	// object. Cross-namespace owner references are invalid in Kubernetes, so ownership
	// of objects in other namespaces is recorded in labels and enforced by a finalizer.
	LabelOwnerNamespace = "gitops-addon.open-cluster-management.io/gitopscluster-namespace"
	LabelOwnerName      = "gitops-addon.open-cluster-management.io/gitopscluster-name"
	// AnnotationOwner ("<namespace>/<name>") names the GitOpsCluster in full on the
	// objects it created when its name is longer than a label value and LabelOwnerName
	// holds it hashed.
	AnnotationOwner = "gitops-addon.open-cluster-management.io/gitopscluster"
	// AnnotationAdopt "true" on a GitOpsCluster makes it take over existing objects of the
	// names it wants that no GitOpsCluster of gitops-addon owns (Red Hat ACM's, when
	// migrating), instead of reporting them.
	AnnotationAdopt = "gitops-addon.open-cluster-management.io/adopt"
	// AnnotationWrittenLabels lists, comma-separated, the label keys gitops-addon wrote on
	// an Argo CD cluster Secret; the others are another tool's and stay.
	AnnotationWrittenLabels = "gitops-addon.open-cluster-management.io/written-labels"

	// LabelClusterName names the managed cluster an Argo CD cluster secret stands for.
	LabelClusterName = "apps.open-cluster-management.io/cluster-name"

	// AnnotationOperatorImage, AnnotationArgoCDImage and AnnotationRedisImage carry the
	// per-cluster image choices of a GitOpsCluster (spec.gitopsAddon) on the
	// ManagedClusterAddOn it creates, where the addon's values functions read them.
	AnnotationOperatorImage = "gitops-addon.open-cluster-management.io/gitops-operator-image"
	AnnotationArgoCDImage   = "gitops-addon.open-cluster-management.io/argocd-image"
	AnnotationRedisImage    = "gitops-addon.open-cluster-management.io/redis-image"
	// AnnotationArgoCDAgentImage carries spec.gitopsAddon.argoCDAgent.image: argocd-agent's
	// image in Argo CD Agent mode.
	AnnotationArgoCDAgentImage = "gitops-addon.open-cluster-management.io/argocd-agent-image"

	// ArgoCDAgentMode, as a ManagedCluster label, sets that cluster's Argo CD Agent mode
	// (managed or autonomous) over its GitOpsCluster's spec.gitopsAddon.argoCDAgent.mode,
	// for a fleet that mixes both. As a ManagedClusterAddOn annotation, written by the
	// GitOpsCluster controller, it is the mode the cluster's agent runs in; absent when
	// agent mode is off.
	ArgoCDAgentMode = "gitops-addon.open-cluster-management.io/argocd-agent-mode"

	// AnnotationArgoCDAgentPrincipal ("host:port") and AnnotationArgoCDAgentCA (the PEM
	// certificate of argocd-agent-ca, never its key) carry, on an agent-mode cluster's
	// ManagedClusterAddOn, where its argocd-agent connects and the CA it trusts there;
	// the CA is absent when spec.gitopsAddon.argoCDAgent.propagateHubCA is false.
	AnnotationArgoCDAgentPrincipal = "gitops-addon.open-cluster-management.io/argocd-agent-principal"
	AnnotationArgoCDAgentCA        = "gitops-addon.open-cluster-management.io/argocd-agent-ca"
	// AnnotationSkipHubCAPropagation on a GitOpsCluster is Red Hat ACM's way to keep the
	// hub's CA off the clusters; honoured like propagateHubCA: false.
	AnnotationSkipHubCAPropagation = "apps.open-cluster-management.io/skip-hub-ca-propagation"

	// AnnotationDeletionOrphan tells OCM's work agent to leave an object on the spoke
	// when the ManifestWork that carried it is deleted.
	AnnotationDeletionOrphan = "addon.open-cluster-management.io/deletion-orphan"

	// AnnotationCRDSource records, on every CRD the spoke agent installs, the upstream
	// file it was generated from (<module>@<version>/<path>): an agent compares that
	// version with its own to never replace a newer CRD with an older one.
	AnnotationCRDSource = "gitops-addon.open-cluster-management.io/source"

	// AgentFieldManager is the spoke agent's server-side apply field manager.
	AgentFieldManager = "gitops-addon-agent"
)

// Conditions the spoke agent reports on its own ManagedClusterAddOn.
const (
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
