package v1alpha1

import "github.com/gitops-addon/gitops-addon/pkg/api/reasons"

// The pull model's conditions and reasons, declared once: on a hub Application the
// manager carries to its cluster (PullModelError and PullModelWarning, whose message
// starts with the reason, and a Warning Event of that reason), and in the entries of the
// MulticlusterApplicationSetReport.

// Condition types the pull model writes into a hub Application's status.conditions. Argo
// CD shows a type ending in "Error" as an error and one ending in "Warning" as a warning.
const (
	ConditionPullModelError   = "PullModelError"
	ConditionPullModelWarning = "PullModelWarning"
)

// Condition types of a cluster's entry in the MulticlusterApplicationSetReport (ACM's).
const (
	ReportConditionSyncError        = "SyncError"
	ReportConditionApplyError       = "ApplyError"
	ReportConditionApplyWarning     = "ApplyWarning"
	ReportConditionResourceError    = "ResourceError"
	ReportConditionResourcesWarning = "ResourcesWarning"
)

// Reasons of the pull model's conditions (each also the reason of a Warning Event on the
// hub Application).
const (
	ReasonPullLabelMissing           = "PullLabelMissing"
	ReasonClusterAnnotationMissing   = "ClusterAnnotationMissing"
	ReasonClusterNotFound            = "ClusterNotFound"
	ReasonClusterNotPermitted        = "ClusterNotPermitted"
	ReasonAppProjectNotFound         = "AppProjectNotFound"
	ReasonInvalidAppNamespace        = "InvalidAppNamespace"
	ReasonSkipReconcileMissing       = "SkipReconcileMissing"
	ReasonHubClusterNotPulled        = "HubClusterNotPulled"
	ReasonExistingArgoCDSkipped      = "ExistingArgoCDSkipped"
	ReasonWaitingForAgentReport      = "WaitingForAgentReport"
	ReasonSpokeApplyFailed           = "SpokeApplyFailed"
	ReasonNotApplied                 = "NotApplied"
	ReasonResourcesCapped            = "ResourcesCapped"
	ReasonResourcesNotReported       = "ResourcesNotReported"
	ReasonResourceHealthNotPersisted = "ResourceHealthNotPersisted"
	ReasonResourcesUnreadable        = "ResourcesUnreadable"
	ReasonResourceTreeBounded        = "ResourceTreeBounded"
	ReasonResourceTreeUnreadable     = "ResourceTreeUnreadable"
)

// Reasons of the Normal Events on a hub Application.
const (
	ReasonDestinationNameCleared = "DestinationNameCleared"
	ReasonFinalizerReleased      = "FinalizerReleased"
	ReasonACMWorkRetired         = "ACMManifestWorkRetired"
)

// Reasons is the pull model's table: a hub Application's conditions and Events.
var Reasons = reasons.Table{
	Name: "Hub Application (pull model)",
	ShownOn: "the hub Application's `status.conditions` (`kubectl describe application`): the `PullModelError` or `PullModelWarning` " +
		"condition, whose message starts with the reason",
	EventsOn: "the hub Application (`kubectl describe application`)",
	Conditions: []reasons.Condition{
		{Type: ConditionPullModelError, Meaning: "The Application is not delivered to its cluster, or not applied there; the message " +
			"starts with the reason, one problem per sentence."},
		{Type: ConditionPullModelWarning, Meaning: "The Application is delivered, but something the hub shows of it is missing or " +
			"limited; the message starts with the reason."},
	},
	Reasons: []reasons.Reason{
		{Name: ReasonPullLabelMissing, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The cluster annotation is there, the pull label is not: nothing is shipped.",
			Fix: "Add the label `apps.open-cluster-management.io/pull-to-ocm-managed-cluster: \"true\"` (for an ApplicationSet, " +
				"in `spec.template.metadata.labels`)."},
		{Name: ReasonClusterAnnotationMissing, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "The pull label is there, but no cluster is named.",
			Fix: "Set `apps.open-cluster-management.io/ocm-managed-cluster` to the cluster's name (`'{{name}}'` with the " +
				"`clusterDecisionResource` generator)."},
		{Name: ReasonClusterNotFound, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "No ManagedCluster of that name.",
			Fix:     "Fix the annotation; `kubectl get managedclusters` lists the clusters."},
		{Name: ReasonClusterNotPermitted, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "Tenant isolation: no PlacementDecision in the Application's own namespace lists the cluster.",
			Fix:     "Add the cluster to a Placement in that namespace (the GitOpsCluster's, for example), or move the Application."},
		{Name: ReasonAppProjectNotFound, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "The Application's AppProject does not exist in its namespace on the hub, so it cannot be shipped with it.",
			Fix:     "Create it there, or use the project `default`."},
		{Name: ReasonInvalidAppNamespace, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "`apps.open-cluster-management.io/ocm-managed-cluster-app-namespace` is not a namespace name.",
			Fix:     "Fix it, or remove it to use the hub Application's namespace."},
		{Name: ReasonSkipReconcileMissing, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "Shipped, but the hub's own Argo CD deploys it too, onto the hub.",
			Fix:     "Add `argocd.argoproj.io/skip-reconcile: \"true\"`."},
		{Name: ReasonHubClusterNotPulled, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "The cluster named is the hub itself (named `local-cluster`, labelled `local-cluster=true`, or claiming the hub's " +
				"cluster ID): its own Argo CD syncs Applications for it directly, and nothing is shipped there " +
				"([why](docs/concepts.md#the-hub-as-a-managed-cluster-local-cluster)).",
			Fix: "Remove the pull label and the annotations `apps.open-cluster-management.io/ocm-managed-cluster` and " +
				"`argocd.argoproj.io/skip-reconcile` from the Application (for an ApplicationSet, from `spec.template.metadata`), or " +
				"exclude the hub from the ApplicationSet's generator."},
		{Name: ReasonExistingArgoCDSkipped, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "The cluster runs an Argo CD gitops-addon did not create (OpenShift GitOps from OLM, ACM's `acm-openshift-gitops`, " +
				"another operator; the message quotes the cluster's agent) and the choice for it is `Skip`: nothing is delivered to " +
				"that Argo CD unasked; a ManifestWork delivered before is taken back.",
			Fix: "Set the GitOpsCluster's `spec.gitopsAddon.existingArgoCD: UseExisting` (or label the ManagedCluster " +
				"`gitops-addon.open-cluster-management.io/existing-argocd=UseExisting`) to run pulled Applications on that instance " +
				"([install](docs/operations/install.md#clusters-that-already-run-argo-cd))."},
		{Name: ReasonWaitingForAgentReport, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "The first delivery to a cluster waits until its agent has reported whether an Argo CD gitops-addon did not " +
				"create runs there (seconds after the agent starts); a delivery made before is kept meanwhile.",
			Fix: "Wait; if it stays, look at the cluster's addon (its `ExistingArgoCD` condition, the agent's pod)."},
		{Name: ReasonSpokeApplyFailed, Conditions: []string{ConditionPullModelError}, Event: reasons.Warning,
			Meaning: "The cluster's work agent could not apply the ManifestWork; the message says why: most often the gitops addon " +
				"is not enabled there (no Argo CD, no Application CRD), or not yet installed.",
			Fix: "Enable the addon (`spec.gitopsAddon.enabled: true` on the GitOpsCluster, or a ManagedClusterAddOn `gitops-addon` in " +
				"the cluster's namespace), or wait for it: `kubectl get managedclusteraddon gitops-addon -n <cluster>`."},
		{Name: ReasonNotApplied, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The ManifestWork was not applied within `pullModel.applyTimeout` (default 5m); the message names the cluster's " +
				"state: not accepted, never reported, unavailable since when with OCM's reason, or available but its work agent silent.",
			Fix: "Bring the cluster or its klusterlet back; nothing to change on the hub: it is applied once the work agent acts."},
		{Name: ReasonResourcesCapped, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The Application has more resources than `status.resources` lists (100); the message counts them all, by kind.",
			Fix:     "Nothing: the failed and unhealthy are listed first."},
		{Name: ReasonResourcesNotReported, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The cluster reports sync and health but not the resources: the Application runs outside `openshift-gitops` " +
				"there (the agent summarises that namespace only), the addon is not enabled or not available there, its agent " +
				"cannot write the summary (quoting its `ApplicationResourcesNotReported` condition), or the installation is hub-only " +
				"(ACM's addon does not summarise); `status.resources` is left as it was, never emptied.",
			Fix: "Follow the message: run the Application in `openshift-gitops`, enable or repair the addon."},
		{Name: ReasonResourceHealthNotPersisted, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The spoke's Argo CD keeps resource health out of the Application (`controller.resource.health.persist: " +
				"\"false\"`; the GitOps operator's default is `\"true\"`): resources come with their sync status only.",
			Fix: "Set it to `\"true\"` in the `ArgoCD`'s `spec.cmdParams`."},
		{Name: ReasonResourcesUnreadable, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The cluster's agent sends a summary this manager cannot decode (a newer agent's format).",
			Fix: "Upgrade the hub manager to the agent's version " +
				"([operations/upgrade.md](docs/operations/upgrade.md#version-skew))."},
		{Name: ReasonResourceTreeBounded, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The Application's resource tree on its cluster is over the bound (1,000 nodes or 48 KiB encoded): the hub's " +
				"Argo CD UI draws its managed resources without their children; the message counts the nodes, and any managed " +
				"resources left out. Or its diff does not fit in the same 48 KiB beside the tree: the hub's UI shows the tree " +
				"but no diff and no resource panel (the message says so).",
			Fix: "Nothing: the spoke's own Argo CD UI has the whole tree and diff; split a very large Application to see them on the hub."},
		{Name: ReasonResourceTreeUnreadable, Conditions: []string{ConditionPullModelWarning}, Event: reasons.Warning,
			Meaning: "The cluster's agent sends a resource tree this manager cannot decode (a newer agent's format, or beyond the " +
				"bounds): the hub shows no tree for it.",
			Fix: "Upgrade the hub manager to the agent's version " +
				"([operations/upgrade.md](docs/operations/upgrade.md#version-skew))."},

		{Name: ReasonDestinationNameCleared, Event: reasons.Normal,
			Meaning: "A `destination.name` was replaced on the spoke by `https://kubernetes.default.svc`, the cluster the Application runs on."},
		{Name: ReasonFinalizerReleased, Event: reasons.Normal,
			Meaning: "The Application's ManifestWork is gone, and the spoke Application with it: Argo CD's resources finalizer is released on the hub."},
		{Name: ReasonACMWorkRetired, Event: reasons.Normal,
			Meaning: "Red Hat ACM's ManifestWork of the Application was taken over ([migrating-from-acm.md](docs/migrating-from-acm.md))."},
	},
}

// ReportReasons is the report's table: the condition types of a cluster's entry.
var ReportReasons = reasons.Table{
	Name:    "MulticlusterApplicationSetReport",
	ShownOn: "each cluster's entry of the report (`kubectl get multiclusterapplicationsetreport <applicationset> -o yaml`)",
	Conditions: []reasons.Condition{
		{Type: ReportConditionSyncError, Meaning: "The last sync operation on the cluster failed (its phase `Failed` or `Error`); the message is Argo CD's."},
		{Type: ReportConditionApplyError, Meaning: "The cluster's work agent could not apply the Application's ManifestWork; the message is the work agent's."},
		{Type: ReportConditionApplyWarning, Meaning: "The ManifestWork was not applied in time; the message starts with `NotApplied`."},
		{Type: ReportConditionResourceError, Meaning: "A resource of the Application is Degraded or failed to sync; the message " +
			"names it and quotes its health message."},
		{Type: ReportConditionResourcesWarning, Meaning: "A warning about what the cluster reports (`ResourcesNotReported`, `ResourcesUnreadable`, " +
			"`ResourceHealthNotPersisted`, the tree's); the message starts with the reason."},
	},
}
