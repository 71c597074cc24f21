package contract

import "k8s.io/apimachinery/pkg/runtime/schema"

const (
	// AddonName is the name of the ClusterManagementAddOn, of every ManagedClusterAddOn,
	// of the addon lease and of the Helm release rendered for each cluster.
	AddonName = "gitops-addon"

	// AgentName is the constant agent name in the addon's CSR subject. It must never
	// change between manager restarts, or the CSR approver rejects renewals.
	AgentName = "gitops-addon-agent"

	// HubKubeconfigSecret is the Secret OCM's registration agent writes on the spoke with
	// the agent's hub credential (kubeconfig, tls.crt, tls.key, cluster-name); OCM names
	// it after the addon.
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
	// LiveResourcesClusterRole is what the hub's Argo CD UI reads of a spoke (live
	// manifests, events, logs), read-only: through argocd-agent in Argo CD Agent mode, through
	// the live-resources reader (managed-serviceaccount's ServiceAccount) in the basic pull model.
	LiveResourcesClusterRole = "gitops-addon:live-resources"
	// LiveResourcesArgoCDAgentBinding and LiveResourcesReaderBinding bind it, each to one of them.
	LiveResourcesArgoCDAgentBinding = "gitops-addon:live-resources:argocd-agent"
	LiveResourcesReaderBinding      = "gitops-addon:live-resources:reader"

	// LabelManagedBy marks every object gitops-addon creates, on the hub and on spokes;
	// caches are filtered on it and teardown removes only what carries it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on our objects.
	ManagedByValue = "gitops-addon"
)

// ArgoCDGVK is the kind of the Argo CD instance the addon delivers (the GitOps
// operator's ArgoCD), handled as unstructured or metadata so that gitops-addon needs no
// Go dependency on the operator's API.
var ArgoCDGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1beta1", Kind: "ArgoCD"}

// Argo CD's own kinds, which hub and spoke read and write as unstructured objects: neither
// links Argo CD's Go module.
var (
	ApplicationGVK    = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	ApplicationSetGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSet"}
	AppProjectGVK     = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AppProject"}
)

// CreationRecordConfigMap is the ConfigMap, in the spoke agent's namespace, where the
// agent records the UID of the ArgoCD instance gitops-addon created (and when it found
// none there before). The pre-delete hook deletes an instance only when this record
// holds its UID: a label on the instance is no proof, since a server-side apply merges
// it into an instance someone else created.
const CreationRecordConfigMap = "gitops-addon-created"

// AnnotationArgoCDRefresh asks Argo CD to compare an Application again ("normal", or
// "hard" to bypass its manifest cache); Argo CD removes it once done. The hub writes it on
// pulled Applications, the agent after a comparison the repo-server could not serve
// (pkg/spoke/comparisonretry).
const AnnotationArgoCDRefresh = "argocd.argoproj.io/refresh"
