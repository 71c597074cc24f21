package contract

import (
	"github.com/gitops-addon/gitops-addon/pkg/api/reasons"
	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// The conditions of a cluster's ManagedClusterAddOn gitops-addon (the agent's, and the
// hub's StackApplied) and every reason set on them or on the Events of the agent and of
// the addon, declared once: the condition types and the RouteAPI, ExistingArgoCD and
// StackApplied reasons in conditions.go, the rest here; what each means and what the user
// does in Reasons below.

// Condition types the agent sets while something it reports on Applications fails.
const (
	ConditionApplicationResourcesNotReported = "ApplicationResourcesNotReported"
	ConditionApplicationTreeNotReported      = "ApplicationTreeNotReported"
)

// Reasons of the agent's conditions.
const (
	ReasonGuardInstalled   = "GuardInstalled"
	ReasonDuplicateRemoved = "DuplicateRemoved"
	ReasonGuardUnavailable = "GuardUnavailable"
	ReasonGuardDisabled    = "GuardDisabled"
	ReasonNotNative        = "NotNative"
	ReasonGuardUnknown     = "RouteAPIUnknown"
	ReasonGuardFailed      = "GuardFailed"

	ReasonOpenAPIV2Served             = "Served"
	ReasonOpenAPIV2ServiceUnavailable = "ServiceUnavailable"
	ReasonOpenAPIV2Frozen             = "Frozen"
	ReasonOpenAPIV2CheckFailed        = "CheckFailed"

	ReasonNoDuplicates    = "NoDuplicates"
	ReasonDuplicatesFound = "DuplicatesFound"

	ReasonCRDsInstalled        = "Installed"
	ReasonCRDsProvidedByOthers = "ProvidedByOthers"
	ReasonCRDsWaiting          = "Waiting"
	ReasonCRDInstallFailed     = "InstallFailed"

	ReasonCertificateInPlace    = "InPlace"
	ReasonWaitingForCertificate = "WaitingForCertificate"
	ReasonNoArgoCDInstance      = "NoArgoCDInstance"
	ReasonCertificateFailed     = "Failed"

	ReasonConnected                 = "Connected"
	ReasonNotConnected              = "NotConnected"
	ReasonHealthEndpointUnreachable = "HealthEndpointUnreachable"

	ReasonCredentialsMaterialised = "Materialised"
	ReasonForeignSecret           = "ForeignSecret"
	ReasonWriteFailed             = "WriteFailed"

	ReasonTreeNotReported = "TreeNotReported"
)

// Reasons of the Events only.
const (
	ReasonConfigIgnored             = "AddOnDeploymentConfigIgnored"
	ReasonCRDApplied                = "CRDApplied"
	ReasonCRDApplyFailed            = "CRDInstallFailed"
	ReasonDuplicateRoutesCRDRemoved = "DuplicateRoutesCRDRemoved"
)

// Reasons is the table of a cluster's ManagedClusterAddOn gitops-addon.
var Reasons = reasons.Table{
	Name: "A cluster's addon",
	ShownOn: "the cluster's ManagedClusterAddOn `gitops-addon` on the hub (`kubectl -n <cluster> describe managedclusteraddon " +
		"gitops-addon`), reported by its agent (`StackApplied` by the hub)",
	EventsOn: "the spoke object named (on the spoke: `kubectl get events -A`)",
	Conditions: []reasons.Condition{
		{Type: ConditionRouteAPI, Meaning: "How the spoke serves `route.openshift.io/v1`; the hub ships the OpenShift flavour of the stack by it."},
		{Type: ConditionRoutesCRDGuard, Meaning: "Whether a duplicate Routes CRD beside the native Route API is prevented (an " +
			"admission policy) and removed; such a duplicate breaks `/openapi/v2` and every Argo CD sync."},
		{Type: ConditionOpenAPIV2Available, Meaning: "Whether the spoke's `/openapi/v2` answers and lists every CRD (every Argo CD sync reads it)."},
		{Type: ConditionDuplicateAPISurfaces, Meaning: "Whether a CRD duplicates a group/version a service-backed APIService serves."},
		{Type: ConditionArgoCDCRDsInstalled, Meaning: "Whether the Argo CD CRDs the operator needs are served on the spoke, who " +
			"provides them, and which one failed and why."},
		{Type: ConditionExistingArgoCD, Meaning: "Whether the spoke already runs an Argo CD or a GitOps operator gitops-addon did " +
			"not create; the hub ships the operator and the ArgoCD instance only once the agent reported `False`."},
		{Type: ConditionArgoCDAgentCertificate, Meaning: "In Argo CD Agent mode, whether argocd-agent has the client certificate OCM issued, and until when."},
		{Type: ConditionArgoCDAgentConnected, Meaning: "In Argo CD Agent mode, whether argocd-agent says it is connected to the hub's principal."},
		{Type: ConditionRepositoryCredentials, Meaning: "Whether the agent keeps the hub's repository credentials the Applications " +
			"pulled here use, and which names it refused to write because a Secret it did not create holds them."},
		{Type: ConditionApplicationResourcesNotReported, Meaning: "Set while the agent cannot write the summary of the pulled " +
			"Applications' resources (most often RBAC); the hub quotes it."},
		{Type: ConditionApplicationTreeNotReported, Meaning: "Set while the agent cannot read the pulled Applications' trees or " +
			"write them on the Applications; withdrawn once one is written again."},
		{Type: ConditionStackApplied, Meaning: "Written by the hub: whether OCM's work agent applied every object of the addon's " +
			"ManifestWorks, and, when not, each object that failed with the work agent's own message."},
	},
	Reasons: []reasons.Reason{
		{Name: RouteAPINative, Conditions: []string{ConditionRouteAPI},
			Meaning: "`route.openshift.io/v1` is served by openshift-apiserver (an APIService), available or not: OpenShift. A " +
				"Routes CRD must never be installed here."},
		{Name: RouteAPICRD, Conditions: []string{ConditionRouteAPI}, Meaning: "Routes are served by the `routes.route.openshift.io` CRD."},
		{Name: RouteAPIAbsent, Conditions: []string{ConditionRouteAPI},
			Meaning: "No Route API: the agent installs the Routes CRD, unless the hub found the cluster to be OpenShift or MicroShift."},
		{Name: RouteAPIUnknown, Conditions: []string{ConditionRouteAPI},
			Meaning: "The agent could not read the cluster's APIServices and CRDs: no decision is taken.",
			Fix:     "Give the agent its read access back; the message has the error."},
		{Name: ReasonGuardInstalled, Conditions: []string{ConditionRoutesCRDGuard},
			Meaning: "The ValidatingAdmissionPolicy that denies a duplicate Routes CRD is installed."},
		{Name: ReasonDuplicateRemoved, Conditions: []string{ConditionRoutesCRDGuard},
			Meaning: "A duplicate Routes CRD appeared next to the native Route API and the agent deleted it (Routes stay: the aggregated API serves them).",
			Fix:     "Find what installed it, so that it does not come back."},
		{Name: ReasonGuardUnavailable, Conditions: []string{ConditionRoutesCRDGuard},
			Meaning: "The cluster serves no ValidatingAdmissionPolicy (Kubernetes before 1.30): no policy, but a duplicate is still removed within seconds."},
		{Name: ReasonGuardDisabled, Conditions: []string{ConditionRoutesCRDGuard},
			Meaning: "The policy is turned off (`routeCRDAdmissionGuard: \"false\"`, agent flag `--disable-route-crd-admission-guard`); " +
				"a duplicate is still removed."},
		{Name: ReasonNotNative, Conditions: []string{ConditionRoutesCRDGuard},
			Meaning: "The Route API is not native here, so the Routes CRD is legitimate and there is nothing to guard."},
		{Name: ReasonGuardUnknown, Conditions: []string{ConditionRoutesCRDGuard},
			Meaning: "No decision while the Route API cannot be classified.", Fix: "See `RouteAPI` `Unknown`."},
		{Name: ReasonGuardFailed, Conditions: []string{ConditionRoutesCRDGuard},
			Meaning: "The agent could not install, remove or act; the message has the error.",
			Fix:     "Give the agent back its RBAC (re-applied by the work agent)."},
		{Name: ReasonOpenAPIV2Served, Conditions: []string{ConditionOpenAPIV2Available},
			Meaning: "`/openapi/v2` answers and lists every CRD."},
		{Name: ReasonOpenAPIV2ServiceUnavailable, Conditions: []string{ConditionOpenAPIV2Available},
			Meaning: "`/openapi/v2` answers an error (503): every Argo CD sync on this cluster fails with \"failed to load open api schema\".",
			Fix:     "Remove the duplicate API surface `DuplicateAPISurfaces` names; `gitops-addon doctor` says the exact fix."},
		{Name: ReasonOpenAPIV2Frozen, Conditions: []string{ConditionOpenAPIV2Available},
			Meaning: "A CRD in `/openapi/v3` is missing from v2: the document stopped updating (the same cause).",
			Fix:     "As for `ServiceUnavailable`."},
		{Name: ReasonOpenAPIV2CheckFailed, Conditions: []string{ConditionOpenAPIV2Available},
			Meaning: "The agent could not ask; the message has the error."},
		{Name: ReasonNoDuplicates, Conditions: []string{ConditionDuplicateAPISurfaces},
			Meaning: "No CRD duplicates a group/version an aggregated APIService serves."},
		{Name: ReasonDuplicatesFound, Conditions: []string{ConditionDuplicateAPISurfaces},
			Meaning: "A CRD duplicates a service-backed APIService; each breaks `/openapi/v2`.",
			Fix:     "Delete the duplicating CRD (`kubectl delete crd NAME`)."},
		{Name: ReasonCRDsInstalled, Conditions: []string{ConditionArgoCDCRDsInstalled},
			Meaning: "Every Argo CD CRD is the agent's, current and established; the message also says what it decided about the Routes CRD."},
		{Name: ReasonCRDsProvidedByOthers, Conditions: []string{ConditionArgoCDCRDsInstalled},
			Meaning: "Every CRD is established; some are another installer's (OLM, a Helm chart) or a newer gitops-addon's, and left as they are.",
			Fix:     "Nothing, if that installer keeps them current."},
		{Name: ReasonCRDsWaiting, Conditions: []string{ConditionArgoCDCRDsInstalled},
			Meaning: "A CRD is being deleted or not established yet.", Fix: "Wait; if it stays, see who deletes it."},
		{Name: ReasonCRDInstallFailed, Conditions: []string{ConditionArgoCDCRDsInstalled},
			Meaning: "The agent could not apply a CRD; the message names it and the apiserver's answer.",
			Fix: "Fix what the apiserver refused (the agent may create CRDs and change only its own: its ClusterRole " +
				"`gitops-addon:agent`, admission policies), or install the CRD yourself."},
		{Name: ExistingArgoCDNone, Conditions: []string{ConditionExistingArgoCD},
			Meaning: "`False`: no Argo CD and no GitOps operator but gitops-addon's run on the cluster: the hub ships the operator " +
				"and the `openshift-gitops` ArgoCD. The message names the instance the creation record (ConfigMap " +
				"`gitops-addon-created` in the agent's namespace) holds, and, if one appeared after ours, the other operator too.",
			Fix: "If it names another operator: remove one of the two, they reconcile the same namespace (or remove the cluster from " +
				"the GitOpsCluster's Placement)."},
		{Name: ExistingArgoCDOLM, Conditions: []string{ConditionExistingArgoCD},
			Meaning: "`True`: a GitOps operator installed by OLM, a Subscription or ClusterServiceVersion of `openshift-gitops-operator` " +
				"or `argocd-operator`; the message names it, its version and namespace. gitops-addon ships no operator and no ArgoCD, " +
				"and never changes or deletes the existing ones.",
			Fix: "Nothing, or choose `existingArgoCD: UseExisting` to have pulled Applications run on that instance " +
				"([install](docs/operations/install.md#clusters-that-already-run-argo-cd))."},
		{Name: ExistingArgoCDInstance, Conditions: []string{ConditionExistingArgoCD},
			Meaning: "`True`: an ArgoCD in `openshift-gitops` that gitops-addon did not create (Red Hat ACM's `acm-openshift-gitops`, " +
				"or an `openshift-gitops` made by someone else; our label on it proves nothing).",
			Fix: "As for `OLMOperator`."},
		{Name: ExistingArgoCDOperator, Conditions: []string{ConditionExistingArgoCD},
			Meaning: "`True`: a Deployment running a GitOps operator image that watches `openshift-gitops` (every namespace, or one listing it).",
			Fix:     "As for `OLMOperator`; or narrow that operator's `WATCH_NAMESPACE`."},
		{Name: ExistingArgoCDUnknown, Conditions: []string{ConditionExistingArgoCD},
			Meaning: "`Unknown`: the agent could not read ArgoCDs, Subscriptions, CSVs or Deployments (most often RBAC); only the agent " +
				"is shipped meanwhile.",
			Fix: "Give the agent back its ClusterRole `gitops-addon:agent` (re-applied by the work agent); the message has the error."},
		{Name: ReasonCertificateInPlace, Conditions: []string{ConditionArgoCDAgentCertificate},
			Meaning: "argocd-agent has the client certificate the hub signed, in `argocd-agent-client-tls`; the message says who issued it and until when."},
		{Name: ReasonWaitingForCertificate, Conditions: []string{ConditionArgoCDAgentCertificate},
			Meaning: "OCM's registration agent has not written the certificate yet; the hub approves it once the GitOpsCluster's " +
				"`argocd-agent-ca` exists.",
			Fix: "Look at `ArgoCDAgentTrust` on the GitOpsCluster."},
		{Name: ReasonNoArgoCDInstance, Conditions: []string{ConditionArgoCDAgentCertificate},
			Meaning: "The `ArgoCD` instance is missing or being deleted: the certificate is not handed over (the cluster is leaving " +
				"the addon, or the operator has not made it yet)."},
		{Name: ReasonCertificateFailed, Conditions: []string{ConditionArgoCDAgentCertificate},
			Meaning: "The hand-over failed, for example a Secret `argocd-agent-client-tls` that is not gitops-addon's: it is left alone and named.",
			Fix:     "Remove or rename your Secret, or the message's cause."},
		{Name: ReasonConnected, Conditions: []string{ConditionArgoCDAgentConnected},
			Meaning: "argocd-agent reports it is connected to the principal."},
		{Name: ReasonNotConnected, Conditions: []string{ConditionArgoCDAgentConnected},
			Meaning: "argocd-agent runs but is not connected.",
			Fix: "Check that the principal runs on the hub, that its address is reachable from this cluster, that the principal's " +
				"certificate names that address, and argocd-agent's log for the TLS or authentication error."},
		{Name: ReasonHealthEndpointUnreachable, Conditions: []string{ConditionArgoCDAgentConnected},
			Meaning: "argocd-agent's health endpoint does not answer, or answers something else: argocd-agent is not running or not ready.",
			Fix:     "See its Deployment and log in the Argo CD namespace."},
		{Name: ReasonCredentialsMaterialised, Conditions: []string{ConditionRepositoryCredentials},
			Meaning: "Every hub repository credential the Applications pulled here use is kept in `openshift-gitops` as the hub has it " +
				"([private repositories](docs/guides/pull-model.md#private-repositories))."},
		{Name: ReasonForeignSecret, Conditions: []string{ConditionRepositoryCredentials}, Event: reasons.Warning,
			EventOn: "the spoke's Secret it did not overwrite, in the Argo CD namespace",
			Meaning: "A Secret the agent did not create holds the name of a hub credential an Application here uses; it is not " +
				"overwritten, and that Application uses it as it is.",
			Fix: "Delete or rename the spoke's Secret, or rename the hub's; the hub's arrives within a minute."},
		{Name: ReasonWriteFailed, Conditions: []string{ConditionRepositoryCredentials, ConditionApplicationResourcesNotReported},
			Meaning: "The agent could not write. On `RepositoryCredentials`: it could not create, update or delete a credential. On " +
				"`ApplicationResourcesNotReported`: it cannot write the summary of the pulled Applications' resources (most often " +
				"RBAC), so the hub shows them without resources. The message quotes the apiserver.",
			Fix: "Give the agent back its RBAC (re-applied by the work agent): for the credentials, its Role " +
				"`gitops-addon:agent:repository-credentials` in `openshift-gitops`; for the summary, patch on " +
				"`applications.argoproj.io` in its Argo CD namespace, which it gets on Kubernetes 1.30 or later only " +
				"([supported versions](docs/operations/install.md#supported-kubernetes-versions))."},
		{Name: ReasonTreeNotReported, Conditions: []string{ConditionApplicationTreeNotReported},
			Meaning: "The agent cannot read the pulled Applications' trees from its Argo CD's redis (unreachable, its password Secret " +
				"missing or refused) or write them on the Applications; the message quotes the error: the hub's Argo CD UI shows " +
				"these Applications without their tree.",
			Fix: "A NetworkPolicy must let the agent reach redis on 6379 (the addon ships `gitops-addon-agent-redis` beside the " +
				"operator's); the password is read from `<argocd>-redis-initial-password` (key `admin.password`) in `openshift-gitops`, " +
				"or the Secret `--argocd-redis-password-secret` names; the address is the operator's `<argocd>-redis` Service unless " +
				"`--argocd-redis-address` says otherwise."},
		{Name: StackApplied, Conditions: []string{ConditionStackApplied},
			Meaning: "Written by the hub: OCM's work agent applied every object of the addon's ManifestWorks."},
		{Name: StackApplyFailed, Conditions: []string{ConditionStackApplied},
			Meaning: "Written by the hub: OCM's work agent could not apply some objects; the message names each with the work " +
				"agent's own words (a conflict, an admission webhook or policy that denied it, a missing namespace). The " +
				"GitOpsCluster's `AddOnsReady` and `Ready` are `False` with the same words.",
			Fix: "Fix what refused it (the message quotes the apiserver); the work agent retries on its own."},
		{Name: StackNotYetStatus, Conditions: []string{ConditionStackApplied},
			Meaning: "The work agent has not reported on the ManifestWorks yet.",
			Fix:     "Wait; if it stays, look at the klusterlet's work agent on the cluster."},

		{Name: ReasonConfigIgnored, Event: reasons.Warning, EventOn: "the cluster's ManagedClusterAddOn `gitops-addon` on the hub",
			Meaning: "The AddOnDeploymentConfig names a customized variable gitops-addon does not understand, or one of Red Hat " +
				"ACM's it does not carry over; the message says what is understood.",
			Fix: "Fix or remove the variable ([guides/disconnected.md](docs/guides/disconnected.md#choose-the-images))."},
		{Name: ReasonCRDApplied, Event: reasons.Normal, EventOn: "the spoke's CustomResourceDefinition",
			Meaning: "The agent applied one of its CRDs; the message says from where and why."},
		{Name: ReasonCRDApplyFailed, Event: reasons.Warning, EventOn: "the spoke's CustomResourceDefinition",
			Meaning: "The agent could not apply one of its CRDs; the message has the error.",
			Fix:     "As for the `ArgoCDCRDsInstalled` reason `InstallFailed`."},
		{Name: ReasonDuplicateRoutesCRDRemoved, Event: reasons.Warning, EventOn: "the spoke's APIService `v1.route.openshift.io`",
			Meaning: "The agent deleted a Routes CRD that duplicated the native Route API and broke `/openapi/v2`.",
			Fix:     "Find what installed it, so that it does not come back."},
	},
}

// ReasonTables are every table of conditions and reasons, in the order the references
// show them: the one list hack/docgen renders and the reason tests check.
var ReasonTables = []reasons.Table{appsv1beta1.Reasons, v1alpha1.Reasons, v1alpha1.ReportReasons, Reasons}
