// Package preflight reads a hub before it moves from Red Hat ACM's GitOps integration to
// gitops-addon and says, check by check, what the move will meet and what to do first: the
// pre-flight checklist of docs/migrating-from-acm.md, run for the user (`gitops-addon
// doctor --hub`). It only reads, and reads what each check needs and no more.
package preflight

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/crdowner"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// Facts is what the checks read from the hub.
type Facts struct {
	// MultiClusterHubServed: the hub serves Red Hat ACM's MultiClusterHub API.
	MultiClusterHubServed bool
	MultiClusterHubs      []MultiClusterHub
	// AddonV1beta1Served: the hub serves addon.open-cluster-management.io/v1beta1 (OCM
	// v1.2, ACM 2.16, MCE 2.11 and later), which gitops-addon's addon manager reads.
	AddonV1beta1Served bool
	// AppLifecycleObjects counts ACM's application lifecycle objects by kind (only the
	// kinds the hub serves).
	AppLifecycleObjects map[string]int
	// ACMAddon: the ClusterManagementAddOn gitops-addon exists and is not this chart's.
	ACMAddon bool
	// AddonClusters are the clusters with a ManagedClusterAddOn gitops-addon.
	AddonClusters []string
	CRDs          []CRD
	// GitOpsClusters are namespace/name -> the Argo CD namespace each registers in.
	GitOpsClusters map[string]string
	// ClusterSecrets are cluster name -> the namespace/name of its Argo CD cluster Secrets.
	ClusterSecrets  map[string][]string
	ManagedClusters []ManagedCluster
	// PulledApplications are the hub Applications labelled for the pull model, namespace/name.
	PulledApplications []string
	// PullWorks are hub Application namespace/name -> its ManifestWorks, cluster/name.
	PullWorks map[string][]string
}

// MultiClusterHub is what check 1 and 2 read of Red Hat ACM's MultiClusterHub.
type MultiClusterHub struct {
	Namespace, Name, Version string
	// AppLifecycle is spec.overrides' app-lifecycle component: nil when not listed
	// (ACM's default, on).
	AppLifecycle *bool
}

// CRD is one of the CRDs ACM and gitops-addon both define.
type CRD struct {
	Name   string
	Exists bool
	// Installer names who installed it when that is not gitops-addon ("" for ours).
	Installer string
	// GitOpsAddonField: the GitOpsCluster schema has spec.gitopsAddon (ACM 2.15 and later, ours).
	GitOpsAddonField bool
}

// ManagedCluster is what check 8 reads of a cluster.
type ManagedCluster struct {
	Name              string
	Joined, Available bool
}

// The CRDs ACM and gitops-addon both define.
const (
	CRDGitOpsClusters = "gitopsclusters.apps.open-cluster-management.io"
	CRDReports        = "multiclusterapplicationsetreports.apps.open-cluster-management.io"
)

var (
	gvkMultiClusterHub = schema.GroupVersionKind{Group: "operator.open-cluster-management.io", Version: "v1", Kind: "MultiClusterHub"}
	// appLifecycleKinds are the kinds only ACM's app-lifecycle component reconciles.
	appLifecycleKinds = []schema.GroupVersionKind{
		{Group: "apps.open-cluster-management.io", Version: "v1", Kind: "Subscription"},
		{Group: "apps.open-cluster-management.io", Version: "v1", Kind: "Channel"},
		{Group: "apps.open-cluster-management.io", Version: "v1", Kind: "PlacementRule"},
	}
	gvkClusterManagementAddOnV1beta1 = ocmKind(addonv1beta1.GroupVersion, "ClusterManagementAddOn")
	gvkClusterManagementAddOn        = ocmKind(addonv1alpha1.GroupVersion, "ClusterManagementAddOn")
	gvkManagedClusterAddOn           = ocmKind(addonv1alpha1.GroupVersion, "ManagedClusterAddOn")
	gvkGitOpsCluster                 = appsv1beta1.GroupVersion.WithKind("GitOpsCluster")
	gvkSecret                        = corev1.SchemeGroupVersion.WithKind("Secret")
	gvkManagedCluster                = ocmKind(clusterv1.GroupVersion, "ManagedCluster")
	gvkManifestWork                  = ocmKind(workv1.GroupVersion, "ManifestWork")
)

// ocmKind is a kind of OCM's API, whose packages declare their group version in
// metav1's type.
func ocmKind(gv metav1.GroupVersion, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}
}

// Read reads the facts of every check, with a reader whose scheme has the hub's kinds
// (pkg/hub/schemes). A kind the hub does not serve is a fact (nothing of it exists); any
// other error means the hub could not be checked.
func Read(ctx context.Context, c client.Reader) (*Facts, error) {
	f := &Facts{AppLifecycleObjects: map[string]int{}, GitOpsClusters: map[string]string{},
		ClusterSecrets: map[string][]string{}, PullWorks: map[string][]string{}}
	for _, read := range []func(context.Context, client.Reader, *Facts) error{
		readMultiClusterHubs, readAddonAPI, readAppLifecycle, readAddons, readCRDs,
		readGitOpsClusters, readClusterSecrets, readManagedClusters, readPull,
	} {
		if err := read(ctx, c, f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// list lists every object of gvk, whole, matching opts; served is false when the hub
// does not serve the kind.
func list(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind,
	opts ...client.ListOption) (items []unstructured.Unstructured, served bool, err error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	served, err = pages(ctx, c, gvk, l, func() { items = append(items, l.Items...) }, opts...)
	return items, served, err
}

// listMetadata is list for the checks that read only names, labels and annotations: the
// apiserver sends no spec or status (a hub's ManifestWorks hold whole manifests).
func listMetadata(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind,
	opts ...client.ListOption) (items []metav1.PartialObjectMetadata, served bool, err error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	served, err = pages(ctx, c, gvk, l, func() { items = append(items, l.Items...) }, opts...)
	return items, served, err
}

// pages lists into l page by page (a hub may hold many objects), calling each after
// every page.
func pages(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, l client.ObjectList, each func(), opts ...client.ListOption) (bool, error) {
	opts = append(opts, client.Limit(500))
	for {
		if err := c.List(ctx, l, opts...); err != nil {
			if notServed(err) {
				return false, nil
			}
			return false, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		each()
		if l.GetContinue() == "" {
			return true, nil
		}
		opts = append(opts, client.Continue(l.GetContinue()))
	}
}

// notServed says whether a List failed because the hub does not serve the kind.
func notServed(err error) bool { return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) }

func key(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func readMultiClusterHubs(ctx context.Context, c client.Reader, f *Facts) error {
	items, served, err := list(ctx, c, gvkMultiClusterHub)
	f.MultiClusterHubServed = served
	for i := range items {
		m := MultiClusterHub{Namespace: items[i].GetNamespace(), Name: items[i].GetName()}
		m.Version, _, _ = unstructured.NestedString(items[i].Object, "status", "currentVersion")
		components, _, _ := unstructured.NestedSlice(items[i].Object, "spec", "overrides", "components")
		for _, component := range components {
			if c, ok := component.(map[string]any); ok && c["name"] == "app-lifecycle" {
				if enabled, ok := c["enabled"].(bool); ok {
					m.AppLifecycle = &enabled
				}
			}
		}
		f.MultiClusterHubs = append(f.MultiClusterHubs, m)
	}
	return err
}

func readAddonAPI(ctx context.Context, c client.Reader, f *Facts) error {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvkClusterManagementAddOnV1beta1.GroupVersion().WithKind("ClusterManagementAddOnList"))
	err := c.List(ctx, l, client.Limit(1))
	if notServed(err) {
		return nil
	}
	f.AddonV1beta1Served = err == nil
	if err != nil {
		return fmt.Errorf("listing ClusterManagementAddOns (v1beta1): %w", err)
	}
	return nil
}

func readAppLifecycle(ctx context.Context, c client.Reader, f *Facts) error {
	for _, gvk := range appLifecycleKinds {
		items, served, err := listMetadata(ctx, c, gvk)
		if err != nil {
			return err
		}
		if served {
			f.AppLifecycleObjects[gvk.Kind] = len(items)
		}
	}
	return nil
}

func readAddons(ctx context.Context, c client.Reader, f *Facts) error {
	cmas, _, err := listMetadata(ctx, c, gvkClusterManagementAddOn)
	if err != nil {
		return err
	}
	for i := range cmas {
		// The manager chart labels its own as Helm's (its install refuses beside any other).
		if cmas[i].GetName() == contract.AddonName && cmas[i].GetLabels()[contract.LabelManagedBy] != "Helm" {
			f.ACMAddon = true
		}
	}
	mcas, _, err := listMetadata(ctx, c, gvkManagedClusterAddOn)
	for i := range mcas {
		if mcas[i].GetName() == contract.AddonName {
			f.AddonClusters = append(f.AddonClusters, mcas[i].GetNamespace())
		}
	}
	return err
}

func readCRDs(ctx context.Context, c client.Reader, f *Facts) error {
	for _, name := range []string{CRDGitOpsClusters, CRDReports} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
		if apierrors.IsNotFound(err) {
			f.CRDs = append(f.CRDs, CRD{Name: name})
			continue
		}
		if err != nil {
			return fmt.Errorf("reading CRD %s: %w", name, err)
		}
		f.CRDs = append(f.CRDs, CRD{Name: name, Exists: true, Installer: crdowner.Other(crd.GetLabels()), GitOpsAddonField: hasGitOpsAddonField(crd)})
	}
	return nil
}

// hasGitOpsAddonField says whether a GitOpsCluster CRD's v1beta1 schema has spec.gitopsAddon.
func hasGitOpsAddonField(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == appsv1beta1.GroupVersion.Version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			_, found := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["gitopsAddon"]
			return found
		}
	}
	return false
}

func readGitOpsClusters(ctx context.Context, c client.Reader, f *Facts) error {
	items, _, err := list(ctx, c, gvkGitOpsCluster)
	for i := range items {
		ns, _, _ := unstructured.NestedString(items[i].Object, "spec", "argoServer", "argoNamespace")
		if ns == "" { // ACM's meaning, and ours: the GitOpsCluster's own namespace.
			ns = items[i].GetNamespace()
		}
		f.GitOpsClusters[key(&items[i])] = ns
	}
	return err
}

func readClusterSecrets(ctx context.Context, c client.Reader, f *Facts) error {
	items, _, err := listMetadata(ctx, c, gvkSecret,
		client.MatchingLabels{contract.LabelArgoCDSecretType: "cluster"}, client.HasLabels{gitopscluster.LabelClusterName})
	for i := range items {
		cluster := items[i].GetLabels()[gitopscluster.LabelClusterName]
		f.ClusterSecrets[cluster] = append(f.ClusterSecrets[cluster], key(&items[i]))
	}
	return err
}

func readManagedClusters(ctx context.Context, c client.Reader, f *Facts) error {
	l := &clusterv1.ManagedClusterList{}
	_, err := pages(ctx, c, gvkManagedCluster, l, func() {
		for _, mc := range l.Items {
			f.ManagedClusters = append(f.ManagedClusters, ManagedCluster{Name: mc.Name,
				Joined:    meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined),
				Available: meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)})
		}
	})
	return err
}

func readPull(ctx context.Context, c client.Reader, f *Facts) error {
	apps, _, err := listMetadata(ctx, c, pullnames.ApplicationGVK, client.MatchingLabels{contract.LabelPull: "true"})
	if err != nil {
		return err
	}
	for i := range apps {
		f.PulledApplications = append(f.PulledApplications, key(&apps[i]))
	}
	works, _, err := listMetadata(ctx, c, gvkManifestWork)
	for i := range works {
		annotations := works[i].GetAnnotations()
		if name := annotations[pullnames.AnnotationHubAppName]; name != "" {
			app := annotations[pullnames.AnnotationHubAppNamespace] + "/" + name
			f.PullWorks[app] = append(f.PullWorks[app], key(&works[i]))
		}
	}
	return err
}
