package v1beta1

import "github.com/gitops-addon/gitops-addon/pkg/api/reasons"

// The GitOpsCluster's conditions and every reason the manager sets on them or on the
// Events of the hub's objects, declared once: the names here, what each means and what
// the user does in Reasons below.

// Condition types of a GitOpsCluster.
const (
	ConditionPlacementResolved  = "PlacementResolved"
	ConditionClustersRegistered = "ClustersRegistered"
	ConditionAddOnsReady        = "AddOnsReady"
	ConditionArgoCDAgentTrust   = "ArgoCDAgentTrust"
	ConditionExistingArgoCD     = "ExistingArgoCDClusters"
	ConditionLiveResources      = "LiveResources"
	ConditionReady              = "Ready"
)

// Reasons of the GitOpsCluster's conditions.
const (
	ReasonResolved                  = "Resolved"
	ReasonPlacementNotFound         = "PlacementNotFound"
	ReasonPlacementNamespace        = "PlacementInOtherNamespace"
	ReasonPlacementUnresolved       = "PlacementUnresolved"
	ReasonRegistered                = "Registered"
	ReasonRegistrationFailed        = "RegistrationFailed"
	ReasonOwnedByOther              = "OwnedByAnotherGitOpsCluster"
	ReasonArgoNamespaceNotAllowed   = "ArgoNamespaceNotAllowed"
	ReasonReconcileError            = "ReconcileError"
	ReasonAddOnsAvailable           = "AddOnsAvailable"
	ReasonAddOnsProgressing         = "AddOnsProgressing"
	ReasonAddOnDisabled             = "AddOnDisabled"
	ReasonAddOnFailed               = "AddOnFailed"
	ReasonAddOnDeliveredElsewhere   = "AddOnDeliveredElsewhere"
	ReasonAddOnNotDelivered         = "AddOnNotDelivered"
	ReasonWaitingForApplications    = "WaitingForApplications"
	ReasonArgoCDAgentsNotConnected  = "ArgoCDAgentsNotConnected"
	ReasonCertificatesCurrent       = "CertificatesCurrent"
	ReasonPrincipalAddressUnknown   = "PrincipalAddressUnknown"
	ReasonTrustPending              = "TrustPending"
	ReasonHubCluster                = "HubCluster"
	ReasonExistingArgoCDFound       = "ExistingArgoCDFound"
	ReasonNoExistingArgoCD          = "NoExistingArgoCD"
	ReasonReady                     = "Ready"
	ReasonNotReady                  = "NotReady"
	ReasonWaitingForAddOnRemoval    = "WaitingForAddOnRemoval"
	ReasonLiveResourcesReadable     = "Readable"
	ReasonClusterProxyNotInstalled  = "ClusterProxyNotInstalled"
	ReasonMSANotInstalled           = "ManagedServiceAccountNotInstalled"
	ReasonTokensPending             = "TokensPending"
	ReasonLiveResourcesOffOnManager = "LiveResourcesOffOnManager"
)

// Reasons of the Events only (the condition reasons above are Events' reasons too where
// Reasons says so).
const (
	ReasonAddOnRemoved           = "AddOnRemoved"
	ReasonClusterUnregistered    = "ClusterUnregistered"
	ReasonDoubleRegistration     = "DoubleRegistration"
	ReasonACMSecretRemoved       = "DuplicateRemoved"
	ReasonHandedOver             = "HandedOver"
	ReasonAdopted                = "Adopted"
	ReasonSharedObjectRemoved    = "SharedObjectRemoved"
	ReasonSharedObjectNotRemoved = "SharedObjectNotRemoved"
	ReasonTrustFailed            = "ArgoCDAgentTrustFailed"
	ReasonCertificateIssued      = "AgentCertificateIssued"
	ReasonCRDUpgradeRefused      = "CRDUpgradeRefused"
	ReasonCRDOwnedByOthers       = "CRDOwnedByOthers"
	ReasonLiveResourcesRemoved   = "LiveResourcesRemoved"
)

// Reasons is the GitOpsCluster's table: its conditions, and every reason set on them or
// on the Events the manager records on the hub's objects.
var Reasons = reasons.Table{
	Name:     "GitOpsCluster",
	ShownOn:  "the GitOpsCluster's `status.conditions` (`kubectl describe gitopscluster`)",
	EventsOn: "the GitOpsCluster (`kubectl describe gitopscluster`)",
	Conditions: []reasons.Condition{
		{Type: ConditionPlacementResolved, Meaning: "The Placement was found in the GitOpsCluster's namespace and its PlacementDecisions were read."},
		{Type: ConditionClustersRegistered, Meaning: "Every decided cluster has an Argo CD cluster Secret, and the ApplicationSet " +
			"placement ConfigMap and its RBAC exist."},
		{Type: ConditionAddOnsReady, Meaning: "With the addon enabled, every decided cluster has a ManagedClusterAddOn and each one is Available; " +
			"in Argo CD Agent mode, each one's argocd-agent also has its certificate and is connected to the principal."},
		{Type: ConditionArgoCDAgentTrust, Meaning: "Only with `spec.gitopsAddon.argoCDAgent.enabled`: the principal's CA, serving certificates and JWT key " +
			"are in the Argo CD namespace, with their expiry dates."},
		{Type: ConditionExistingArgoCD, Meaning: "Informational, not part of `Ready`: `True` when some selected clusters already run an Argo CD that " +
			"gitops-addon did not create (the hub itself among them); the message names each cluster, who runs its Argo CD and what " +
			"gitops-addon does there. `False`: none does."},
		{Type: ConditionLiveResources, Meaning: "Only with `spec.gitopsAddon.liveResources.enabled`: every decided cluster's Argo CD " +
			"cluster Secret reads that cluster's live resources through OCM's cluster-proxy, as a ManagedServiceAccount bound on the " +
			"spoke to the read-only ClusterRole `gitops-addon:live-resources`."},
		{Type: ConditionReady, Meaning: "All of the above are `True`."},
	},
	Reasons: []reasons.Reason{
		{Name: ReasonResolved, Conditions: []string{ConditionPlacementResolved},
			Meaning: "The Placement was found and its decisions read."},
		{Name: ReasonPlacementNotFound, Conditions: []string{ConditionPlacementResolved},
			Meaning: "`spec.placementRef.name` is empty, or no Placement of that name exists in the GitOpsCluster's namespace; nothing is " +
				"registered or removed.",
			Fix: "Create the Placement there, or point `placementRef.name` at one of that namespace."},
		{Name: ReasonPlacementNamespace, Conditions: []string{ConditionPlacementResolved},
			Meaning: "`placementRef.namespace` names another namespace: a Placement only decides for its own namespace.",
			Fix: "Create the Placement (and a ManagedClusterSetBinding) in the GitOpsCluster's namespace and drop `placementRef.namespace`, " +
				"or create the GitOpsCluster in the Placement's namespace."},
		{Name: ReasonPlacementUnresolved, Conditions: []string{ConditionClustersRegistered, ConditionAddOnsReady, ConditionArgoCDAgentTrust, ConditionExistingArgoCD,
			ConditionLiveResources},
			Meaning: "Not evaluated while the Placement does not resolve; existing registrations and addons are left as they are.",
			Fix:     "Fix `PlacementResolved` first."},
		{Name: ReasonRegistered, Conditions: []string{ConditionClustersRegistered},
			Meaning: "Every cluster has its Argo CD cluster Secret; the `acm-placement` ConfigMap and its RBAC are in place."},
		{Name: ReasonRegistrationFailed, Conditions: []string{ConditionClustersRegistered},
			Meaning: "One or more clusters could not be registered; the message says which and why, one sentence each (for example a " +
				"cluster Red Hat ACM's Secret already registers: no second Secret is made).",
			Fix: "Follow each sentence; for ACM's Secrets, annotate the GitOpsCluster `gitops-addon.open-cluster-management.io/adopt=true` " +
				"to adopt them ([migrating-from-acm.md](docs/migrating-from-acm.md))."},
		{Name: ReasonOwnedByOther, Conditions: []string{ConditionClustersRegistered, ConditionAddOnsReady, ConditionLiveResources},
			Meaning: "Another GitOpsCluster already owns the cluster's Secret, ManagedClusterAddOn or ManagedServiceAccount, or an object of the wanted name " +
				"is not gitops-addon's; the message names it.",
			Fix: "Select each cluster from one GitOpsCluster: when the first lets it go, the objects are handed over. " +
				"An object someone else made: remove it, or adopt it."},
		{Name: ReasonArgoNamespaceNotAllowed, Conditions: []string{ConditionClustersRegistered, ConditionArgoCDAgentTrust, ConditionAddOnsReady,
			ConditionExistingArgoCD, ConditionLiveResources},
			Meaning: "`spec.argoServer.argoNamespace` is not one of the namespaces the manager was installed for; nothing is written " +
				"there. `ClustersRegistered` is `False` (`ArgoCDAgentTrust` in Argo CD Agent mode, whose trust is the first step " +
				"there), the conditions after it `Unknown` with this reason.",
			Fix: "Add it to the chart value `argoNamespaces` and `helm upgrade` " +
				"([install](docs/operations/install.md#where-your-argo-cd-lives-argonamespaces)), or set `spec.argoServer.argoNamespace` to one of them."},
		{Name: ReasonReconcileError, Conditions: []string{ConditionPlacementResolved, ConditionClustersRegistered, ConditionAddOnsReady,
			ConditionArgoCDAgentTrust, ConditionExistingArgoCD, ConditionLiveResources, ConditionReady}, Event: reasons.Warning,
			Meaning: "The apiserver refused a step; the message has the API error and the fix (a namespace that does not exist, a " +
				"forbidden write, an admission policy, an overloaded apiserver); later conditions are `Unknown`; retried with backoff.",
			Fix: "Follow the message: create the namespace, restore the chart's RBAC (`helm upgrade`), see the webhook or policy that rejects the object."},
		{Name: ReasonAddOnsAvailable, Conditions: []string{ConditionAddOnsReady},
			Meaning: "Every addon is Available."},
		{Name: ReasonAddOnsProgressing, Conditions: []string{ConditionAddOnsReady},
			Meaning: "Some addons are not Available yet; the message names them.",
			Fix:     "Wait (a new cluster takes a minute); if one stays, see [a cluster's addon](docs/troubleshooting.md#a-clusters-addon)."},
		{Name: ReasonAddOnDisabled, Conditions: []string{ConditionAddOnsReady},
			Meaning: "`spec.gitopsAddon.enabled` is not true: no ManagedClusterAddOn is managed (registration and the pull model still work).",
			Fix:     "Set it to `true` to deliver the GitOps stack."},
		{Name: ReasonAddOnFailed, Conditions: []string{ConditionAddOnsReady},
			Meaning: "One sentence per problem: a ManagedClusterAddOn that could not be created or kept; a cluster whose " +
				"`gitops-addon.open-cluster-management.io/argocd-agent-mode` label is not a mode (the GitOpsCluster's mode is used) or whose " +
				"`gitops-addon.open-cluster-management.io/existing-argocd` label is not `Skip` or `UseExisting` (the GitOpsCluster's choice " +
				"is used); objects of a cluster's stack OCM's work agent could not apply (its addon's `StackApplied` is `ApplyFailed`); or a " +
				"departed cluster's ManagedClusterAddOn still there after 5 minutes, with the finalizers it waits for.",
			Fix: "Follow each sentence: fix the label (`managed` or `autonomous`; `Skip` or `UseExisting`), or remove it; for a stuck addon, " +
				"see why its cluster's pre-delete hook does not finish."},
		{Name: ReasonAddOnDeliveredElsewhere, Conditions: []string{ConditionAddOnsReady},
			Meaning: "Hub-only installation: another ClusterManagementAddOn `gitops-addon` (Red Hat ACM's) delivers the spokes' stack, " +
				"and nothing is done to it here ([migrating-from-acm.md](docs/migrating-from-acm.md))."},
		{Name: ReasonAddOnNotDelivered, Conditions: []string{ConditionAddOnsReady},
			Meaning: "The addon is asked for, but the installation is hub-only and no ClusterManagementAddOn `gitops-addon` delivers it.",
			Fix:     "Install the chart with `addonManager.enabled=true`, or set `spec.gitopsAddon.enabled: false`."},
		{Name: ReasonWaitingForApplications, Conditions: []string{ConditionAddOnsReady}, Event: reasons.Warning,
			Meaning: "A cluster left the Placement; its addon, and so its Argo CD, stays until the Applications leaving it with it are " +
				"pruned there, at most 5 minutes (then a Warning Event of this reason names what is left).",
			Fix: "Nothing, usually; an Application stuck Terminating on the spoke with `resources-finalizer.argocd.argoproj.io` after the " +
				"addon left needs that finalizer removed there ([concepts](docs/concepts.md#when-a-cluster-leaves))."},
		{Name: ReasonArgoCDAgentsNotConnected, Conditions: []string{ConditionAddOnsReady},
			Meaning: "Every addon is Available, but some Argo CD Agent mode cluster's argocd-agent has no certificate yet or is not " +
				"connected to the principal; the message names them.",
			Fix: "See the cluster's `ArgoCDAgentCertificate` and `ArgoCDAgentConnected` conditions " +
				"([Argo CD Agent mode](docs/troubleshooting.md#argo-cd-agent-mode))."},
		{Name: ReasonCertificatesCurrent, Conditions: []string{ConditionArgoCDAgentTrust},
			Meaning: "The principal's CA, certificates and JWT key are in place; the message gives every expiry date.",
			Fix:     "Restart the principal when an `AgentCertificateIssued` Event says a certificate was renewed."},
		{Name: ReasonPrincipalAddressUnknown, Conditions: []string{ConditionArgoCDAgentTrust},
			Meaning: "No `serverAddress`, and no principal Route admitted by a router nor LoadBalancer address to discover; the message says which.",
			Fix: "Set `spec.gitopsAddon.argoCDAgent.serverAddress`, or expose the principal " +
				"([guides/argocd-agent.md](docs/guides/argocd-agent.md#where-the-agents-connect))."},
		{Name: ReasonTrustPending, Conditions: []string{ConditionArgoCDAgentTrust, ConditionClustersRegistered, ConditionAddOnsReady, ConditionExistingArgoCD},
			Meaning: "`Unknown` while the trust controller has not issued the Argo CD namespace's trust Secrets yet (`ArgoCDAgentTrust`, " +
				"and the conditions after it: not evaluated yet).",
			Fix: "Wait: its writes wake the GitOpsCluster; an `ArgoCDAgentTrustFailed` Warning Event says why it cannot."},
		{Name: ReasonHubCluster, Conditions: []string{ConditionExistingArgoCD}, Event: reasons.Normal,
			Meaning: "Informational, never part of `Ready`: a decided cluster is the hub itself; the message names it, the rule " +
				"that matched, and what was done: nothing shipped, registered as Argo CD's in-cluster destination " +
				"`https://kubernetes.default.svc` (or by which Secret that address is registered already), pull-model Applications " +
				"for it refused " +
				"([why](docs/concepts.md#the-hub-as-a-managed-cluster-local-cluster)).",
			Fix: "Nothing; to register the hub under your own `in-cluster` Secret instead, keep it: none of ours is written beside it."},
		{Name: ReasonExistingArgoCDFound, Conditions: []string{ConditionExistingArgoCD}, Event: reasons.Normal,
			Meaning: "Informational: some clusters' agents report an Argo CD or a GitOps operator gitops-addon did not create (the message quotes " +
				"each agent: who owns it), and what is done there, `Skip` or `UseExisting`, and whether the GitOpsCluster or the " +
				"cluster's label chose it; the hub itself may be named too.",
			Fix: "Choose per GitOpsCluster with `spec.gitopsAddon.existingArgoCD`, or per cluster with the label " +
				"`gitops-addon.open-cluster-management.io/existing-argocd` (`Skip` or `UseExisting`); a label with another value is an " +
				"`AddOnFailed` problem, and the GitOpsCluster's choice is used."},
		{Name: ReasonNoExistingArgoCD, Conditions: []string{ConditionExistingArgoCD}, Event: reasons.Normal,
			Meaning: "No decided cluster is the hub, and no cluster's addon reports an Argo CD not of gitops-addon's; when the " +
				"message says the hub's cluster ID could not be read, a hub registered under another name and without the label is not recognised.",
			Fix: "For that: let the manager get `namespaces` (the chart's ClusterRole does) and restart it, or label the hub's " +
				"ManagedCluster `local-cluster=true`."},
		{Name: ReasonLiveResourcesReadable, Conditions: []string{ConditionLiveResources},
			Meaning: "Every decided cluster's cluster Secret carries its ManagedServiceAccount's token and cluster-proxy's address: the hub's " +
				"Argo CD UI shows live manifests, events and pod logs of pulled Applications."},
		{Name: ReasonClusterProxyNotInstalled, Conditions: []string{ConditionLiveResources},
			Meaning: "OCM's cluster-proxy is not on the hub (no ManagedProxyConfiguration `cluster-proxy`, or no `proxy-server-ca` Secret in its " +
				"namespace); the cluster Secrets stay blank.",
			Fix: "Install cluster-proxy on the hub and enable its addon on the clusters " +
				"([pull model](docs/guides/pull-model.md#live-resources-in-the-basic-pull-model)), or set `liveResources.enabled: false`."},
		{Name: ReasonLiveResourcesOffOnManager, Conditions: []string{ConditionLiveResources},
			Meaning: "The GitOpsCluster asks for live resources, and the manager runs without them: with `--live-resources=false` (chart value " +
				"`liveResources.enabled: false`), or because its ClusterRole does not let it read the Secrets they are made of (the message " +
				"names each read it may not make); it creates no ManagedServiceAccount and the cluster Secrets stay blank.",
			Fix: "Set the chart's `liveResources.enabled` to `true` (the default; it also grants the manager what it reads) and restart the " +
				"manager, or set the GitOpsCluster's `spec.gitopsAddon.liveResources.enabled` to `false`."},
		{Name: ReasonMSANotInstalled, Conditions: []string{ConditionLiveResources},
			Meaning: "OCM's managed-serviceaccount is not on the hub (the ManagedServiceAccount API is not served); the cluster Secrets stay blank.",
			Fix: "Install managed-serviceaccount on the hub and enable its addon on the clusters " +
				"([pull model](docs/guides/pull-model.md#live-resources-in-the-basic-pull-model)), or set `liveResources.enabled: false`."},
		{Name: ReasonTokensPending, Conditions: []string{ConditionLiveResources},
			Meaning: "Some clusters have no token of their ManagedServiceAccount yet (the message names them); their cluster Secrets stay blank until it comes.",
			Fix: "Wait (its agent reports the token within a minute); if a cluster stays, enable the `managed-serviceaccount` addon on it and see " +
				"the ManagedServiceAccount's conditions in the cluster's namespace."},
		{Name: ReasonReady, Conditions: []string{ConditionReady},
			Meaning: "All of the above."},
		{Name: ReasonNotReady, Conditions: []string{ConditionReady},
			Meaning: "The message lists each condition that is not `True`, with its message.",
			Fix:     "Fix them in order."},
		{Name: ReasonWaitingForAddOnRemoval, Conditions: []string{ConditionReady}, Event: reasons.Warning,
			Meaning: "The GitOpsCluster is being deleted and has waited more than 5 minutes for its ManagedClusterAddOns; the message " +
				"names each cluster and the finalizers its addon waits for.",
			Fix: "See why the cluster's addon does not go (an offline cluster's pre-delete hook cannot run; " +
				"[operations/uninstall.md](docs/operations/uninstall.md#a-removal-that-waits))."},

		{Name: ReasonAddOnRemoved, Event: reasons.Normal,
			Meaning: "A cluster left the GitOpsCluster's Placement (or the addon was turned off): its ManagedClusterAddOn was removed."},
		{Name: ReasonLiveResourcesRemoved, Event: reasons.Normal,
			Meaning: "A cluster left the Placement, or `liveResources` was turned off: its ManagedServiceAccount was removed " +
				"(managed-serviceaccount removes the ServiceAccount on the spoke and its token on the hub); its cluster Secret is blank again."},
		{Name: ReasonClusterUnregistered, Event: reasons.Normal,
			Meaning: "A cluster left the Placement: its Argo CD cluster Secret was removed."},
		{Name: ReasonDoubleRegistration, Event: reasons.Warning,
			Meaning: "A cluster is registered twice with Argo CD (by an earlier version); the message says which Secret to remove.",
			Fix:     "Remove the Secret the message names."},
		{Name: ReasonACMSecretRemoved, Event: reasons.Normal,
			Meaning: "Red Hat ACM's cluster Secret of a cluster was removed: the adopted one registers the same cluster."},
		{Name: ReasonHandedOver, Event: reasons.Normal,
			Meaning: "An object of a cluster this GitOpsCluster no longer selects was handed over to another GitOpsCluster that selects it."},
		{Name: ReasonAdopted, Event: reasons.Normal,
			Meaning: "An object gitops-addon did not create was adopted, as the GitOpsCluster's " +
				"`gitops-addon.open-cluster-management.io/adopt` annotation asks."},
		{Name: ReasonSharedObjectRemoved, Event: reasons.Normal,
			EventOn: "the GitOpsClusters that needed the shared object (after a manager restart, the object itself)",
			Meaning: "The `acm-placement` ConfigMap or its RBAC in a namespace was removed: no GitOpsCluster needs it any more."},
		{Name: ReasonSharedObjectNotRemoved, Event: reasons.Warning,
			EventOn: "the GitOpsClusters that needed the shared object (after a manager restart, the object itself)",
			Meaning: "A shared object no GitOpsCluster needs could not be removed; the message has the error; retried with backoff.",
			Fix:     "Follow the error (most often RBAC: restore the chart's roles with `helm upgrade`)."},
		{Name: ReasonTrustFailed, Event: reasons.Warning, EventOn: "every GitOpsCluster of the Argo CD namespace",
			Meaning: "The trust of an Argo CD namespace (the principal's CA, certificates, JWT key) could not be kept; the error says why.",
			Fix:     "Follow the error: a CA Secret of yours that cannot be read, RBAC in the Argo CD namespace."},
		{Name: ReasonCertificateIssued, Event: reasons.Normal, EventOn: "every GitOpsCluster of the Argo CD namespace",
			Meaning: "A trust Secret of the Argo CD namespace was issued or renewed; the message says which and why.",
			Fix:     "Restart the principal so that it serves the new certificate."},
		{Name: ReasonCRDUpgradeRefused, Event: reasons.Warning, EventOn: "the hub's CustomResourceDefinition (`kubectl describe crd <name>`)",
			Meaning: "The manager did not apply its chart's CRD: the installed one is newer, or applying it would drop a version still stored.",
			Fix:     "Upgrade the manager to the version the CRD came with ([the CRDs follow the manager](docs/operations/upgrade.md#the-crds-follow-the-manager))."},
		{Name: ReasonCRDOwnedByOthers, Event: reasons.Warning, EventOn: "the hub's CustomResourceDefinition (`kubectl describe crd <name>`)",
			Meaning: "The CRD is another installer's (Red Hat ACM, OLM, another chart): the manager leaves it as it is.",
			Fix: "Nothing, if that installer keeps it current: gitops-addon never takes a CRD over from its installer " +
				"([ACM's CRDs](docs/migrating-from-acm.md#acms-crds-before-during-and-after))."},
	},
}
