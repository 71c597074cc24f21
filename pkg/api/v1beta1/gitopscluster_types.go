package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The choices of spec.gitopsAddon.existingArgoCD.
const (
	// ExistingArgoCDSkip ships no GitOps operator and no ArgoCD to a cluster that already
	// runs an Argo CD gitops-addon did not create.
	ExistingArgoCDSkip = "Skip"
	// ExistingArgoCDUseExisting delivers pulled Applications to the existing instance.
	ExistingArgoCDUseExisting = "UseExisting"
)

// GitOpsCluster registers the managed clusters chosen by a Placement with an Argo CD
// instance on the hub and, with gitopsAddon.enabled, delivers the GitOps stack to them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=gitopsclusters;goc,categories=ocm
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placementRef.name`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.selectedClusters`
// +kubebuilder:printcolumn:name="AddOns Available",type=integer,JSONPath=`.status.addonAvailableClusters`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitOpsClusterSpec   `json:"spec"`
	Status GitOpsClusterStatus `json:"status,omitempty"`
}

// GitOpsClusterSpec is the desired state of a GitOpsCluster.
type GitOpsClusterSpec struct {
	// ArgoServer locates the Argo CD instance on the hub that the clusters are registered with.
	// +required
	ArgoServer ArgoServerSpec `json:"argoServer"`

	// PlacementRef names the Placement that chooses the managed clusters. The Placement must
	// be in the GitOpsCluster's own namespace.
	// +required
	PlacementRef *PlacementReference `json:"placementRef"`

	// ManagedServiceAccountRef is accepted for compatibility with Red Hat Advanced Cluster
	// Management and is not used by gitops-addon: the cluster secrets it writes are blank
	// (pull model), so no hub credential to the spoke is needed.
	// +optional
	ManagedServiceAccountRef string `json:"managedServiceAccountRef,omitempty"`

	// GitOpsAddon configures the delivery of the GitOps stack to the chosen clusters.
	// +optional
	GitOpsAddon *GitOpsAddonSpec `json:"gitopsAddon,omitempty"`

	// CreateBlankClusterSecrets is accepted for compatibility and has no effect: cluster
	// secrets written by gitops-addon are always blank (no credentials).
	// +optional
	CreateBlankClusterSecrets *bool `json:"createBlankClusterSecrets,omitempty"`

	// CreatePolicyTemplate is accepted for compatibility and has no effect in gitops-addon.
	// +optional
	CreatePolicyTemplate *bool `json:"createPolicyTemplate,omitempty"`
}

// ArgoServerSpec locates the Argo CD instance on the hub.
type ArgoServerSpec struct {
	// Cluster is accepted for compatibility (older objects say "notused" or "local-cluster")
	// and not used: the Argo CD instance is always on the hub.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// ArgoNamespace is the namespace of the Argo CD instance on the hub; the cluster secrets
	// and the ApplicationSet placement ConfigMap are written there. Empty means the
	// GitOpsCluster's own namespace, as in Red Hat Advanced Cluster Management.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	ArgoNamespace string `json:"argoNamespace"`
}

// PlacementReference refers to a Placement. Its fields are those of an ObjectReference,
// so that objects written for Red Hat Advanced Cluster Management apply unchanged.
//
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind == 'Placement'",message="placementRef.kind must be Placement"
// +kubebuilder:validation:XValidation:rule="!has(self.apiVersion) || self.apiVersion.startsWith('cluster.open-cluster-management.io/')",message="placementRef.apiVersion must be cluster.open-cluster-management.io/v1beta1"
type PlacementReference struct {
	// APIVersion of the Placement, cluster.open-cluster-management.io/v1beta1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind must be Placement.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the Placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the Placement. It may be omitted; when set it must be the
	// GitOpsCluster's own namespace, because a Placement only decides for its namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// UID, ResourceVersion and FieldPath are accepted for compatibility and ignored.
	// +optional
	UID string `json:"uid,omitempty"`
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// +optional
	FieldPath string `json:"fieldPath,omitempty"`
}

// GitOpsAddonSpec configures the gitops-addon on the chosen clusters.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.liveResources) && has(self.liveResources.enabled) && self.liveResources.enabled && has(self.argoCDAgent) && has(self.argoCDAgent.enabled) && self.argoCDAgent.enabled)",message="liveResources is for the basic pull model: in Argo CD Agent mode the principal's resource proxy serves live resources; turn one of them off"
type GitOpsAddonSpec struct {
	// Enabled creates a ManagedClusterAddOn gitops-addon for every chosen cluster, which
	// delivers the GitOps operator, the Argo CD instance, its CRDs and the spoke agent.
	// +optional
	// +kubebuilder:default=false
	Enabled *bool `json:"enabled,omitempty"`

	// GitOpsOperatorImage overrides the GitOps operator image on these clusters; empty, as
	// for the other image fields, means no override (as in Red Hat Advanced Cluster Management).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]*$`
	GitOpsOperatorImage string `json:"gitOpsOperatorImage,omitempty"`

	// GitOpsImage overrides the Argo CD image of the ArgoCD instance on these clusters.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]*$`
	GitOpsImage string `json:"gitOpsImage,omitempty"`

	// RedisImage overrides the Redis image of the ArgoCD instance on these clusters.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]*$`
	RedisImage string `json:"redisImage,omitempty"`

	// GitOpsOperatorNamespace, GitOpsNamespace, ReconcileScope, Uninstall,
	// OverrideExistingConfigs and OLMSubscription are accepted for compatibility with Red
	// Hat Advanced Cluster Management. gitops-addon does not act on them yet and says so in
	// the GitOpsCluster's status message when one is set. ArgoCDAgent turns Argo CD Agent
	// mode on (validated as ACM's typed field is, and more strictly); of its fields,
	// uninstall is not acted on yet, and the status message says so too.
	// +optional
	GitOpsOperatorNamespace string `json:"gitOpsOperatorNamespace,omitempty"`
	// +optional
	GitOpsNamespace string `json:"gitOpsNamespace,omitempty"`
	// +optional
	ReconcileScope string `json:"reconcileScope,omitempty"`
	// +optional
	Uninstall *bool `json:"uninstall,omitempty"`
	// +optional
	OverrideExistingConfigs *bool `json:"overrideExistingConfigs,omitempty"`
	// +optional
	ArgoCDAgent *ArgoCDAgentSpec `json:"argoCDAgent,omitempty"`
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	OLMSubscription *runtime.RawExtension `json:"olmSubscription,omitempty"`

	// ExistingArgoCD says what gitops-addon does on a cluster that already runs an Argo CD
	// or a GitOps operator it did not create (OpenShift GitOps from OLM, Red Hat ACM's
	// acm-openshift-gitops, any other operator watching openshift-gitops): Skip (the
	// default) ships no operator and no ArgoCD there; UseExisting also ships none, and
	// delivers pulled Applications to the existing instance. Never a take-over: the
	// existing ArgoCD is never applied, labelled, owned or deleted. A ManagedCluster label
	// gitops-addon.open-cluster-management.io/existing-argocd (Skip or UseExisting) chooses
	// per cluster over this field. The hub itself (local-cluster) never gets anything
	// shipped, whatever this says.
	// +optional
	// +kubebuilder:validation:Enum="";Skip;UseExisting
	ExistingArgoCD string `json:"existingArgoCD,omitempty"`

	// LiveResources lets the hub's Argo CD show pulled Applications' live manifests,
	// events and pod logs in the basic pull model, read through OCM's cluster-proxy with
	// a ManagedServiceAccount that can only read (never Secrets) on each cluster. Both
	// addons of OCM must run on the hub and the clusters. Argo CD Agent mode serves the
	// same through its principal and does not take it.
	// +optional
	LiveResources *LiveResourcesSpec `json:"liveResources,omitempty"`
}

// LiveResourcesSpec is the opt-in to reading the chosen clusters' live resources from
// the hub's Argo CD (spec.gitopsAddon.liveResources).
type LiveResourcesSpec struct {
	// Enabled creates the ManagedServiceAccount gitops-addon-live-resources on each chosen
	// cluster, binds it there to the read-only ClusterRole gitops-addon:live-resources,
	// and writes its token and cluster-proxy's address into the cluster's Argo CD
	// cluster Secret. Off: the Secret is blank again and the ManagedServiceAccount goes.
	// +optional
	// +kubebuilder:default=false
	Enabled *bool `json:"enabled,omitempty"`
}

// ArgoCDAgent modes: managed (the spec comes from the hub, status goes back) and
// autonomous (the spec comes from the spoke's own Git, status goes to the hub).
const (
	ArgoCDAgentModeManaged    = "managed"
	ArgoCDAgentModeAutonomous = "autonomous"
)

// ArgoCDAgentSpec configures Argo CD Agent mode: a principal in the hub's Argo CD and an
// agent on each chosen cluster that connects to it over mTLS. Wire-compatible with Red
// Hat ACM's v1beta1 field of the same name; mode and serverPort are validated by the
// apiserver here, where ACM checks them only when it reconciles.
type ArgoCDAgentSpec struct {
	// Enabled turns agent mode on for the chosen clusters.
	// +optional
	// +kubebuilder:default=false
	Enabled *bool `json:"enabled,omitempty"`

	// PropagateHubCA sends the CA of the principal's certificates (never its key) to the
	// chosen clusters, so that their agents trust the principal.
	// +optional
	// +kubebuilder:default=true
	PropagateHubCA *bool `json:"propagateHubCA,omitempty"`

	// Image overrides argocd-agent's container image on these clusters (mirrored by the
	// AddOnDeploymentConfig's registries like every other image).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]*$`
	Image string `json:"image,omitempty"`

	// ServerAddress is the principal's address (a DNS name or an IP address) as the
	// agents reach it; empty: discovered from the principal's Service or Route.
	// The rule uses only regular expressions, not CEL's isIP() (Kubernetes 1.31+), so
	// that the CRD installs on every supported Kubernetes: an IPv4 address is a DNS name
	// of digits to it, an IPv6 address is hexadecimal digits, colons and dots.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || self.matches('^[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*$')",message="serverAddress must be a DNS name (lower case) or an IP address, without scheme or port"
	ServerAddress string `json:"serverAddress,omitempty"`

	// ServerPort is the principal's port as a string, as in ACM (1 to 65535); empty: 443.
	// +optional
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="self == '' || (self.matches('^[0-9]+$') && int(self) >= 1 && int(self) <= 65535)",message="serverPort must be a port number from 1 to 65535"
	ServerPort string `json:"serverPort,omitempty"`

	// Mode is managed (the default when empty) or autonomous.
	// +optional
	// +kubebuilder:validation:Enum="";managed;autonomous
	Mode string `json:"mode,omitempty"`

	// Uninstall removes only the agent component (accepted for ACM compatibility).
	// +optional
	Uninstall *bool `json:"uninstall,omitempty"`
}

// GitOpsClusterStatus is the observed state of a GitOpsCluster.
type GitOpsClusterStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// SelectedClusters is the number of clusters the Placement decided.
	// +optional
	SelectedClusters int32 `json:"selectedClusters"`
	// AddonEnabledClusters is the number of selected clusters with a gitops-addon
	// ManagedClusterAddOn.
	// +optional
	AddonEnabledClusters int32 `json:"addonEnabledClusters"`
	// AddonAvailableClusters is the number of those ManagedClusterAddOns that are Available.
	// +optional
	AddonAvailableClusters int32 `json:"addonAvailableClusters"`
	// ExistingArgoCDClusters is the number of selected clusters that already run an Argo
	// CD gitops-addon did not create, the hub itself (local-cluster) included: no GitOps
	// operator or ArgoCD of gitops-addon is shipped there (condition ExistingArgoCD).
	// +optional
	ExistingArgoCDClusters int32 `json:"existingArgoCDClusters,omitempty"`

	// Conditions: PlacementResolved, ClustersRegistered, AddOnsReady, ExistingArgoCD and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Phase ("successful" or "failed"), Message and LastUpdateTime are kept for
	// compatibility with tools written for Red Hat Advanced Cluster Management.
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
}

// GitOpsClusterList is a list of GitOpsClusters.
//
// +kubebuilder:object:root=true
type GitOpsClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsCluster `json:"items"`
}

// ArgoCDAgentEnabled tells whether spec.gitopsAddon.argoCDAgent.enabled is true.
func (g *GitOpsCluster) ArgoCDAgentEnabled() bool {
	a := g.Spec.GitOpsAddon
	return a != nil && a.ArgoCDAgent != nil && a.ArgoCDAgent.Enabled != nil && *a.ArgoCDAgent.Enabled
}

// ArgoCDAgentMode is spec.gitopsAddon.argoCDAgent.mode, managed when empty; "" when agent
// mode is off.
func (g *GitOpsCluster) ArgoCDAgentMode() string {
	if !g.ArgoCDAgentEnabled() {
		return ""
	}
	if m := g.Spec.GitOpsAddon.ArgoCDAgent.Mode; m != "" {
		return m
	}
	return ArgoCDAgentModeManaged
}

// ArgoNamespace is the hub namespace of the Argo CD instance: spec.argoServer.argoNamespace,
// or the GitOpsCluster's own namespace when that is empty (Red Hat ACM's meaning).
func (g *GitOpsCluster) ArgoNamespace() string {
	if ns := g.Spec.ArgoServer.ArgoNamespace; ns != "" {
		return ns
	}
	return g.Namespace
}

// Adopts tells whether the GitOpsCluster takes over the objects of the names it wants
// that no GitOpsCluster of gitops-addon owns (AnnotationAdopt "true"): Red Hat ACM's
// cluster Secrets, ManagedClusterAddOns and placement ConfigMap, when migrating from ACM.
func (g *GitOpsCluster) Adopts() bool {
	return g.Annotations[AnnotationAdopt] == "true"
}

// AddonEnabled tells whether spec.gitopsAddon.enabled is true.
func (g *GitOpsCluster) AddonEnabled() bool {
	return g.Spec.GitOpsAddon != nil && g.Spec.GitOpsAddon.Enabled != nil && *g.Spec.GitOpsAddon.Enabled
}

// LiveResourcesEnabled tells whether spec.gitopsAddon.liveResources.enabled is true (and
// the addon is enabled: the read-only role on the spokes comes with it).
func (g *GitOpsCluster) LiveResourcesEnabled() bool {
	a := g.Spec.GitOpsAddon
	return g.AddonEnabled() && a.LiveResources != nil && a.LiveResources.Enabled != nil && *a.LiveResources.Enabled
}

// ExistingArgoCDChoice is spec.gitopsAddon.existingArgoCD, Skip when empty.
func (g *GitOpsCluster) ExistingArgoCDChoice() string {
	if a := g.Spec.GitOpsAddon; a != nil && a.ExistingArgoCD != "" {
		return a.ExistingArgoCD
	}
	return ExistingArgoCDSkip
}
