package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"open-cluster-management.io/addon-framework/pkg/addonmanager"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/index"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
)

// informerResync is addon-framework's own resync period.
const informerResync = 10 * time.Minute

// addonManager runs addon-framework's controllers for gitops-addon through the
// framework's public entry point for caller-built informers
// (BaseAddonManagerImpl.StartWithInformers), over informers sized for a fleet. Not
// addonmanager.New, for what was measured at 1,000 clusters (make bench-fleet): New's Start
// caches every ManagedClusterAddOn of every addon (a hub has one per addon and cluster:
// tens of thousands) and keeps every object's managed fields. Here the addon informers
// hold only gitops-addon's objects and no cached object keeps its managed fields; the
// framework wires its controllers itself, so a framework upgrade brings its controller
// set with it (TestFrameworkControllerSet says when that set changes).
type addonManager struct {
	base    *addonmanager.BaseAddonManagerImpl
	clients addonClients
	// agentHubBindings caches the agent's hub RoleBindings, which the addon's
	// permission config reads on every registration sync.
	agentHubBindings toolscache.SharedIndexInformer
}

// newAgentHubBindingInformer caches the RoleBindings named addon.AgentHubBinding, in every
// namespace: the agent's hub permissions, one per cluster (and those of older releases,
// which bound a Role: the permission config replaces them).
func newAgentHubBindingInformer(kube kubernetes.Interface) (toolscache.SharedIndexInformer, error) {
	informer := rbacinformers.NewFilteredRoleBindingInformer(kube, metav1.NamespaceAll, informerResync,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", addon.AgentHubBinding).String()
		})
	if err := informer.SetTransform(cache.TransformStripManagedFields()); err != nil {
		return nil, fmt.Errorf("slimming the agent hub RoleBindings' cache: %w", err)
	}
	return informer, nil
}

func newAddonManager(
	cfg *rest.Config, clients addonClients, agentAddon agent.AgentAddon, agentHubBindings toolscache.SharedIndexInformer,
) (*addonManager, error) {
	if agentAddon.GetAgentAddonOptions().AddonName == "" {
		return nil, fmt.Errorf("registering the gitops-addon agent addon: the addon has no name")
	}
	base := addonmanager.NewBaseAddonManagerImpl(cfg)
	// gitops-addon is not a template addon: every ManagedClusterAddOn of it is ours to sync.
	base.ApplyOptionFuncs(addonmanager.WithTemplateMode(false))
	if err := base.AddAgent(agentAddon); err != nil {
		return nil, fmt.Errorf("registering the gitops-addon agent addon: %w", err)
	}
	return &addonManager{base: base, clients: clients, agentHubBindings: agentHubBindings}, nil
}

// addonClients are the clients of the addon (its hub RBAC, AddOnDeploymentConfigs) and
// of addon-framework's informers and ManifestWork writes, made once.
type addonClients struct {
	kube    kubernetes.Interface
	work    workclient.Interface
	dynamic dynamic.Interface
	addon   addonclient.Interface
	cluster clusterclient.Interface
}

func newAddonClients(cfg *rest.Config) (addonClients, error) {
	var c addonClients
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.work, err = workclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.addon, err = addonclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	c.cluster, err = clusterclient.NewForConfig(cfg)
	return c, err
}

// Start builds the informers, starts the framework's controllers on them and starts
// the informers.
func (m *addonManager) Start(ctx context.Context) error {
	clients, agents := m.clients, m.base.GetAddonAgents()
	ourAddon := addonLabelSelector(agents)
	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(clients.kube, informerResync,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ourAddon }))
	workInformers := workinformers.NewSharedInformerFactoryWithOptions(clients.work, informerResync,
		workinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ourAddon }))
	// Only ManagedClusterAddOns and ClusterManagementAddOns come from this factory, and
	// the framework acts only on those named after our addon.
	addonInformers := addoninformers.NewSharedInformerFactoryWithOptions(clients.addon, informerResync,
		addoninformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = addonNameSelector(agents) }))
	clusterInformers := clusterinformers.NewSharedInformerFactory(clients.cluster, informerResync)
	dynamicInformers := dynamicinformer.NewDynamicSharedInformerFactory(clients.dynamic, informerResync)

	works := workInformers.Work().V1().ManifestWorks()
	addons := addonInformers.Addon().V1beta1().ManagedClusterAddOns()
	managementAddons := addonInformers.Addon().V1beta1().ClusterManagementAddOns()
	for _, informer := range []toolscache.SharedIndexInformer{
		works.Informer(), addons.Informer(), managementAddons.Informer(),
		clusterInformers.Cluster().V1().ManagedClusters().Informer(),
		kubeInformers.Certificates().V1().CertificateSigningRequests().Informer(),
	} {
		if err := informer.SetTransform(cache.TransformStripManagedFields()); err != nil {
			return fmt.Errorf("slimming the addon manager's caches: %w", err)
		}
	}
	if err := addIndexers(works.Informer(), addons.Informer(), managementAddons.Informer()); err != nil {
		return err
	}
	// The registration controller reads the bindings from their cache from its first sync.
	go m.agentHubBindings.Run(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), m.agentHubBindings.HasSynced) {
		return fmt.Errorf("caching the agent hub RoleBindings: %w", ctx.Err())
	}
	if err := m.base.StartWithInformers(ctx, clients.work, works, kubeInformers, addonInformers, clusterInformers, dynamicInformers); err != nil {
		return fmt.Errorf("starting addon-framework's controllers: %w", err)
	}
	kubeInformers.Start(ctx.Done())
	workInformers.Start(ctx.Done())
	addonInformers.Start(ctx.Done())
	clusterInformers.Start(ctx.Done())
	dynamicInformers.Start(ctx.Done())
	return nil
}

// addIndexers adds the indexes addon-framework's controllers look objects up by, as the
// framework's own Start does (StartWithInformers expects them on the informers it is
// given; TestFrameworkControllerSet checks that these are all the framework uses).
func addIndexers(works, addons, managementAddons toolscache.SharedIndexInformer) error {
	if err := works.AddIndexers(toolscache.Indexers{
		index.ManifestWorkByAddon:           index.IndexManifestWorkByAddon,
		index.ManifestWorkByHostedAddon:     index.IndexManifestWorkByHostedAddon,
		index.ManifestWorkHookByHostedAddon: index.IndexManifestWorkHookByHostedAddon,
	}); err != nil {
		return fmt.Errorf("indexing ManifestWorks: %w", err)
	}
	if err := addons.AddIndexers(toolscache.Indexers{
		index.ManagedClusterAddonByNamespace: index.IndexManagedClusterAddonByNamespace,
		index.AddonByConfig:                  index.IndexAddonByConfig,
	}); err != nil {
		return fmt.Errorf("indexing ManagedClusterAddOns: %w", err)
	}
	if err := managementAddons.AddIndexers(toolscache.Indexers{
		index.ClusterManagementAddonByConfig: index.IndexClusterManagementAddonByConfig,
	}); err != nil {
		return fmt.Errorf("indexing ClusterManagementAddOns: %w", err)
	}
	return nil
}

// addonLabelSelector selects the objects labelled for one of the registered addons.
func addonLabelSelector(agents map[string]agent.AgentAddon) string {
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: addonv1beta1.AddonLabelKey, Operator: metav1.LabelSelectorOpIn, Values: slices.Sorted(maps.Keys(agents)),
	}}})
}

// addonNameSelector selects the objects named after the registered addon. A field
// selector takes no set of values: the manager registers exactly one addon.
func addonNameSelector(agents map[string]agent.AgentAddon) string {
	return fields.OneTermEqualSelector("metadata.name", slices.Sorted(maps.Keys(agents))[0]).String()
}
