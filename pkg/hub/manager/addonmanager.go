package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/controllers/addonconfig"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/controllers/agentdeploy"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/controllers/certificate"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/controllers/cmaconfig"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/controllers/cmamanagedby"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/controllers/registration"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/index"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1informers "open-cluster-management.io/api/client/work/informers/externalversions/work/v1"
	"open-cluster-management.io/sdk-go/pkg/basecontroller/factory"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// informerResync is addon-framework's own resync period.
const informerResync = 10 * time.Minute

// addonManager runs addon-framework's controllers for gitops-addon over informers sized
// for a fleet, wired here instead of by addonmanager.New for two reasons measured at
// 1,000 clusters (make bench-fleet): New's Start caches every ManagedClusterAddOn of every
// addon (a hub has one per addon and cluster: tens of thousands) and keeps every
// object's managed fields, and it runs each controller with a single worker, so every
// cluster's ManifestWork, agent registration and status waits for all the clusters
// before it. Here the addon informers hold only gitops-addon's objects, no cached object
// keeps its managed fields, and the per-cluster controllers (deploy, registration, CSR
// approval) run with several workers; their queues are keyed by cluster and addon, so no
// cluster is ever synced by two workers at once. Everything else is as the framework
// wires it in BaseAddonManagerImpl.StartWithInformers.
type addonManager struct {
	agents  map[string]agent.AgentAddon
	configs map[schema.GroupVersionResource]bool
	clients addonClients
	workers int
}

func newAddonManager(clients addonClients, agentAddon agent.AgentAddon, workers int) (*addonManager, error) {
	options := agentAddon.GetAgentAddonOptions()
	if options.AddonName == "" {
		return nil, fmt.Errorf("registering the gitops-addon agent addon: the addon has no name")
	}
	if workers < 1 {
		return nil, fmt.Errorf("the addon manager needs at least 1 worker, got %d", workers)
	}
	configs := map[schema.GroupVersionResource]bool{}
	for _, gvr := range options.SupportedConfigGVRs {
		configs[gvr] = true
	}
	return &addonManager{
		agents:  map[string]agent.AgentAddon{options.AddonName: agentAddon},
		configs: configs,
		clients: clients,
		workers: workers,
	}, nil
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

// Start builds the informers, starts the framework's controllers and the informers.
func (m *addonManager) Start(ctx context.Context) error {
	clients := m.clients
	ourAddon := addonLabelSelector(m.agents)
	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(clients.kube, informerResync,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ourAddon }))
	workInformers := workinformers.NewSharedInformerFactoryWithOptions(clients.work, informerResync,
		workinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ourAddon }))
	// Only ManagedClusterAddOns and ClusterManagementAddOns come from this factory, and
	// the framework acts only on those named after our addon.
	addonInformers := addoninformers.NewSharedInformerFactoryWithOptions(clients.addon, informerResync,
		addoninformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = addonNameSelector(m.agents) }))
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
	m.runControllers(ctx, works, kubeInformers, addonInformers, clusterInformers, dynamicInformers)
	kubeInformers.Start(ctx.Done())
	workInformers.Start(ctx.Done())
	addonInformers.Start(ctx.Done())
	clusterInformers.Start(ctx.Done())
	dynamicInformers.Start(ctx.Done())
	return nil
}

// addIndexers adds the indexes addon-framework's controllers look objects up by.
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

// runControllers starts addon-framework's controllers for our addon on the given informers.
func (m *addonManager) runControllers(ctx context.Context, works workv1informers.ManifestWorkInformer,
	kubeInformers kubeinformers.SharedInformerFactory, addonInformers addoninformers.SharedInformerFactory,
	clusterInformers clusterinformers.SharedInformerFactory, dynamicInformers dynamicinformer.DynamicSharedInformerFactory) {
	clients := m.clients
	clusters := clusterInformers.Cluster().V1().ManagedClusters()
	addons := addonInformers.Addon().V1beta1().ManagedClusterAddOns()
	managementAddons := addonInformers.Addon().V1beta1().ClusterManagementAddOns()
	csrs := kubeInformers.Certificates().V1().CertificateSigningRequests()
	// gitops-addon is not a template addon: every ManagedClusterAddOn of it is ours to sync.
	allAddons := utils.AllowAllAddOns
	ourName := utils.FilterByAddonName(m.agents)

	perCluster := []factory.Controller{
		agentdeploy.NewAddonDeployController(clients.work, clients.addon, clusters, addons, works, m.agents, allAddons),
		registration.NewAddonRegistrationController(clients.addon, clusters, addons, m.agents, allAddons),
		certificate.NewCSRApprovingController(clients.kube, clusters, csrs, addons, m.agents, allAddons),
		certificate.NewCSRSignController(clients.kube, clusters, csrs, addons, m.agents, allAddons),
	}
	for _, controller := range perCluster {
		go controller.Run(ctx, m.workers)
	}
	// These sync the one ClusterManagementAddOn, or the config references of each
	// ManagedClusterAddOn, which the deploy controller waits for: one worker each, as upstream.
	single := []factory.Controller{cmamanagedby.NewCMAManagedByController(clients.addon, managementAddons, m.agents, ourName)}
	if len(m.configs) != 0 {
		single = append(single,
			addonconfig.NewAddonConfigController(clients.addon, addons, managementAddons, dynamicInformers, m.configs, ourName),
			cmaconfig.NewCMAConfigController(clients.addon, managementAddons, dynamicInformers, m.configs, ourName))
	}
	for _, controller := range single {
		go controller.Run(ctx, 1)
	}
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
