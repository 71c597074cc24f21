// Package addon is gitops-addon's addon-framework addon: it renders, per managed cluster,
// the agent chart embedded in the binary (GitOps operator, Argo CD instance, the
// least-privilege platform ClusterRole, the spoke agent, which installs the CRDs) into one
// ManifestWork of a few KiB, and grants the spoke agent its hub credential.
package addon

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"slices"

	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/manifests"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
)

// DefaultInstallNamespace is where the spoke agent runs unless an AddOnDeploymentConfig
// says otherwise.
const DefaultInstallNamespace = "open-cluster-management-agent-addon"

// Options configures the addon.
type Options struct {
	// AgentImage is the spoke agent image (the gitops-addon image itself).
	AgentImage string
	// OperatorImage overrides the GitOps operator image on every cluster; empty lets
	// the chart choose by cluster flavour.
	OperatorImage string
	// KubeClient writes the agent's hub RoleBinding. Render, which needs no cluster,
	// passes nil: it never grants permissions.
	KubeClient kubernetes.Interface
	// AgentHubBindings lists the agent's hub RoleBindings (AgentHubBinding in every
	// namespace) from a cache; nil reads them from the apiserver.
	AgentHubBindings rbaclisters.RoleBindingLister
	// ADCGetter reads AddOnDeploymentConfigs; nil ignores them.
	ADCGetter utils.AddOnDeploymentConfigGetter
	// ExtraValues are applied last, above everything (render's -f and --set).
	ExtraValues addonfactory.Values
	// Warn reports what a cluster's render ignored (EventWarner); nil drops it.
	Warn Warner
	// ResourceTree tells the agents to report the pulled Applications' resource trees: the
	// manager writes them for the hub's Argo CD UI (pkg/hub/treecache).
	ResourceTree bool
	// ArgoCDAgentSigner, when set, gives every cluster in Argo CD Agent mode a second
	// client certificate, approved and signed by it (pkg/hub/argocdagent/signer).
	ArgoCDAgentSigner *signer.Signer
}

// New builds the gitops-addon agent addon.
func New(o Options) (agent.AgentAddon, error) {
	built, err := buildHelmAddon(o, manifests.ChartFS)
	if err != nil {
		return nil, err
	}
	return &gitopsAddon{AgentAddon: built, memo: newRenderMemo()}, nil
}

// buildHelmAddon builds addon-framework's Helm addon over the agent chart in chartFS.
func buildHelmAddon(o Options, chartFS embed.FS) (agent.AgentAddon, error) {
	sources := valuesSources{adcGetter: o.ADCGetter, operatorImage: o.OperatorImage, warn: o.Warn}
	getValues := []addonfactory.GetValuesFunc{sources.values}
	if o.ADCGetter != nil {
		getValues = append(getValues,
			addonfactory.GetAddOnDeploymentConfigValues(o.ADCGetter,
				addonfactory.ToAddOnNodePlacementValues,
				addonfactory.ToAddOnProxyConfigValues,
				addonfactory.ToAddOnResourceRequirementsValues),
			addonfactory.GetAgentImageValues(o.ADCGetter, "global.imageOverrides.gitopsAddonAgent", o.AgentImage))
	} else {
		// Without AddOnDeploymentConfigs the cluster's image-registries annotation still
		// mirrors the agent image, as it does every other image.
		getValues = append(getValues, func(mc *clusterv1.ManagedCluster, _ *addonv1beta1.ManagedClusterAddOn) (addonfactory.Values, error) {
			return addonfactory.Values{
				"global": map[string]any{"imageOverrides": map[string]any{"gitopsAddonAgent": mirrorFunc(mc, nil)(o.AgentImage)}},
			}, nil
		})
	}
	if o.ResourceTree {
		getValues = append(getValues, staticValues(addonfactory.Values{"agent": map[string]any{"resourceTree": true}}))
	}
	if len(o.ExtraValues) > 0 {
		getValues = append(getValues, staticValues(o.ExtraValues))
	}

	factory := addonfactory.NewAgentAddonFactory(contract.AddonName, chartFS, manifests.AgentChartDir).
		WithScheme(agentScheme()).
		WithGetValuesFuncs(getValues...).
		WithAgentHealthProber(&agent.HealthProber{Type: agent.HealthProberTypeLease}).
		WithAgentInstallNamespace(installNamespace(o.ADCGetter)).
		WithAgentDeployTriggerClusterFilter(flavourChanged).
		WithHelmEngineStrict()
	if o.ADCGetter != nil {
		factory = factory.WithConfigGVRs(utils.AddOnDeploymentConfigGVR)
	}
	factory = factory.WithAgentRegistrationOption(registration(o.KubeClient, o.AgentHubBindings, o.ArgoCDAgentSigner))
	built, err := factory.BuildHelmAgentAddon()
	if err != nil {
		return nil, fmt.Errorf("building the gitops-addon agent addon: %w", err)
	}
	return built, nil
}

func staticValues(v addonfactory.Values) addonfactory.GetValuesFunc {
	return func(*clusterv1.ManagedCluster, *addonv1beta1.ManagedClusterAddOn) (addonfactory.Values, error) {
		return v, nil
	}
}

// agentScheme decodes the non-core kinds the chart renders.
func agentScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(contract.ArgoCDGVK, &unstructured.Unstructured{})
	return s
}

// installNamespace reads agentInstallNamespace from the AddOnDeploymentConfig, with our
// default when none is set.
func installNamespace(getter utils.AddOnDeploymentConfigGetter) func(context.Context, *addonv1beta1.ManagedClusterAddOn) (string, error) {
	var fromADC func(context.Context, *addonv1beta1.ManagedClusterAddOn) (string, error)
	if getter != nil {
		fromADC = utils.AgentInstallNamespaceFromDeploymentConfigFunc(getter)
	}
	return func(ctx context.Context, addon *addonv1beta1.ManagedClusterAddOn) (string, error) {
		if fromADC != nil {
			ns, err := fromADC(ctx, addon)
			if err != nil {
				return "", err
			}
			if ns != "" {
				return ns, nil
			}
		}
		return DefaultInstallNamespace, nil
	}
}

// flavourChanged re-renders a cluster's manifests when what decides its flavour (and so
// its operator image and whether its agent may install the Routes CRD) or its image
// mirrors change.
func flavourChanged(old, updated *clusterv1.ManagedCluster) bool {
	if old == nil || updated == nil {
		return false
	}
	return clusterFlavour(old) != clusterFlavour(updated) ||
		utils.ClusterImageRegistriesAnnotationChanged(old, updated)
}

// registration gives the agent a hub client certificate with a constant agent name, signed
// by the kube-apiserver-client signer after addon-framework's standard CSR checks, and
// binds AgentHubClusterRole to its subject in the cluster namespace; with
// argoCDAgentSigner, clusters in Argo CD Agent mode get their argocd-agent's client
// certificate too.
func registration(kubeClient kubernetes.Interface, bindings rbaclisters.RoleBindingLister, argoCDAgentSigner *signer.Signer) *agent.RegistrationOption {
	option := &agent.RegistrationOption{
		Configurations:  agent.KubeClientSignerConfigurations(contract.AddonName, contract.AgentName),
		CSRApproveCheck: utils.DefaultCSRApprover(contract.AgentName),
	}
	if argoCDAgentSigner != nil {
		option.Configurations = signer.Configurations(option.Configurations)
		option.CSRApproveCheck = signer.Approve(option.CSRApproveCheck)
		option.CSRSign = argoCDAgentSigner.Sign
	}
	option.PermissionConfig = agentHubAccess{kube: kubeClient, bindings: bindings, configurations: option.Configurations}.grant
	return option
}

// gitopsAddon adds to the built addon what the factory has no option for: per-manifest
// update strategies and a stable order of the rendered objects.
type gitopsAddon struct {
	agent.AgentAddon
	memo *renderMemo
}

// Manifests returns the objects addon-framework's rendering of the chart returns, in
// Helm's install order as the framework sorts them, and orders objects of the same kind
// by namespace and name: the framework leaves them in Go map order, which changes from
// one render to the next and makes `render`'s output useless for review in Git.
// Renders whose inputs did not change since the last one are served from a memo.
func (a *gitopsAddon) Manifests(ctx context.Context, cluster *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.memo.render(cluster, addon, func() ([]runtime.Object, error) {
		objects, err := a.AgentAddon.Manifests(ctx, cluster, addon)
		if err != nil {
			return nil, err
		}
		if err := sortInInstallOrder(objects); err != nil {
			return nil, err
		}
		return withoutArgoCDWhileDeleting(objects, addon), nil
	})
}

// withoutArgoCDWhileDeleting leaves the ArgoCD instance out of the addon's ManifestWork
// once its ManagedClusterAddOn is being deleted (addon-framework renders it again then,
// for the pre-delete hook). The hook deletes the instance while the GitOps operator can
// still finalize it; were the instance still in the ManifestWork, the work agent's next
// resync could create it again before the ManifestWork goes, and the work would then
// orphan it (deletion-orphan) with no operator left: an ArgoCD instance left behind on
// a cluster that left the addon, seen in TestArgoCD. Out of the ManifestWork, the work
// agent deletes it too, while the operator still runs.
func withoutArgoCDWhileDeleting(objects []runtime.Object, addon *addonv1beta1.ManagedClusterAddOn) []runtime.Object {
	if addon == nil || addon.DeletionTimestamp.IsZero() {
		return objects
	}
	return slices.DeleteFunc(objects, func(o runtime.Object) bool {
		gvk := o.GetObjectKind().GroupVersionKind()
		return gvk.GroupKind() == contract.ArgoCDGVK.GroupKind()
	})
}

// sortInInstallOrder sorts by Helm's install order of kinds (kinds Helm does not know last,
// by kind name), as the addon framework does, then by namespace and name.
func sortInInstallOrder(objects []runtime.Object) error {
	type key struct {
		rank                  int
		kind, namespace, name string
	}
	keys := make(map[runtime.Object]key, len(objects))
	for _, o := range objects {
		m, err := meta.Accessor(o)
		if err != nil {
			return fmt.Errorf("rendered object %T: %w", o, err)
		}
		kind := o.GetObjectKind().GroupVersionKind().Kind
		keys[o] = key{rank: installRank(kind), kind: kind, namespace: m.GetNamespace(), name: m.GetName()}
	}
	slices.SortFunc(objects, func(a, b runtime.Object) int {
		ka, kb := keys[a], keys[b]
		return cmp.Or(cmp.Compare(ka.rank, kb.rank), cmp.Compare(ka.kind, kb.kind),
			cmp.Compare(ka.namespace, kb.namespace), cmp.Compare(ka.name, kb.name))
	})
	return nil
}

// installRank is a kind's place in Helm's install order; kinds Helm does not know come last.
func installRank(kind string) int {
	if i := slices.Index(releaseutil.InstallOrder, kind); i >= 0 {
		return i
	}
	return len(releaseutil.InstallOrder)
}

// GetAgentAddonOptions applies the ArgoCD CR by server-side apply, so that the work agent
// owns only the fields we set and never fights the operator's writes to the rest.
func (a *gitopsAddon) GetAgentAddonOptions() agent.AgentAddonOptions {
	opts := a.AgentAddon.GetAgentAddonOptions()
	opts.ManifestConfigs = append(slices.Clone(opts.ManifestConfigs), workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{
			Group: contract.ArgoCDGVK.Group, Resource: "argocds", Name: contract.ArgoCDName, Namespace: contract.GitOpsNamespace,
		},
		UpdateStrategy: &workv1.UpdateStrategy{
			Type:            workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{FieldManager: "work-agent-gitops-addon"},
		},
	})
	return opts
}

// AnnotationDeletionOrphan is OCM's annotation that tells the work agent to leave an
// object on the spoke when the ManifestWork that carried it is deleted.
const AnnotationDeletionOrphan = "addon.open-cluster-management.io/deletion-orphan"
