package pullmodel

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/clusterwake"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/reports"
)

// Cache indexes.
const (
	// IndexDecisionByCluster indexes PlacementDecisions (in the manager's cache) by
	// "<namespace>/<cluster>" for every cluster they list.
	IndexDecisionByCluster = "pullmodel.placedCluster"
	indexWorkByHubApp      = "pullmodel.hubApplication"
	indexAppByCluster      = "pullmodel.cluster"
	indexAppByNsCluster    = "pullmodel.namespacedCluster"
	indexAppByProject      = "pullmodel.project"
)

// RegisterDecisionIndex adds the PlacementDecision index the tenant check uses to the
// manager's cache. It is registered with the manager, before the pull model starts.
func RegisterDecisionIndex(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &clusterv1beta1.PlacementDecision{}, IndexDecisionByCluster, func(o client.Object) []string {
		d := o.(*clusterv1beta1.PlacementDecision)
		keys := make([]string, 0, len(d.Status.Decisions))
		for _, c := range d.Status.Decisions {
			keys = append(keys, d.Namespace+"/"+c.ClusterName)
		}
		return keys
	})
}

// NewCache builds the pull model's own cache: Applications (those outside the pull model
// reduced to their metadata), AppProjects, the ManifestWorks labelled as pull works, our
// reports, and the repository credentials opted in to follow Applications (in
// credentialNamespaces only when they are given: the manager may read Secrets there only). It
// is separate from the manager's cache, whose ManifestWorks and Secrets are filtered on
// the addon's label, and it starts only once Argo CD's CRDs exist.
func NewCache(mgr manager.Manager, credentialNamespaces map[string]cache.Config) (cache.Cache, error) {
	app := newApplication()
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			app:                    {Transform: slimApplication},
			&workv1.ManifestWork{}: {Label: labels.SelectorFromSet(labels.Set{pullnames.LabelPullWork: "true"})},
			&v1alpha1.MulticlusterApplicationSetReport{}: {
				Label: labels.SelectorFromSet(labels.Set{contract.LabelManagedBy: contract.ManagedByValue}),
			},
			&corev1.Secret{}: {Label: credentialSelector(), Namespaces: credentialNamespaces},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the pull model's cache: %w", err)
	}
	return c, registerIndexes(context.Background(), c)
}

func registerIndexes(ctx context.Context, c cache.Cache) error {
	annotationIndex := func(annotation string) client.IndexerFunc {
		return func(o client.Object) []string {
			if v := o.GetAnnotations()[annotation]; v != "" {
				return []string{v}
			}
			return nil
		}
	}
	for _, ix := range []struct {
		obj  client.Object
		name string
		fn   client.IndexerFunc
	}{
		{&workv1.ManifestWork{}, indexWorkByHubApp, func(o client.Object) []string {
			a := o.GetAnnotations()
			if a[pullnames.AnnotationHubAppName] == "" {
				return nil
			}
			return []string{a[pullnames.AnnotationHubAppNamespace] + "/" + a[pullnames.AnnotationHubAppName]}
		}},
		{newApplication(), indexAppByCluster, annotationIndex(pullnames.AnnotationCluster)},
		{newApplication(), indexAppByNsCluster, func(o client.Object) []string {
			if c := o.GetAnnotations()[pullnames.AnnotationCluster]; c != "" {
				return []string{o.GetNamespace() + "/" + c}
			}
			return nil
		}},
		{newApplication(), indexAppByProject, func(o client.Object) []string {
			u := o.(*unstructured.Unstructured)
			if !isCandidate(u) {
				return nil
			}
			return []string{u.GetNamespace() + "/" + projectName(u)}
		}},
	} {
		if err := c.IndexField(ctx, ix.obj, ix.name, ix.fn); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.name, err)
		}
	}
	if err := reports.RegisterIndex(ctx, c); err != nil {
		return fmt.Errorf("indexing the pull ManifestWorks by ApplicationSet: %w", err)
	}
	return nil
}

// slimApplication keeps in the cache only the metadata of an Application the pull model
// has nothing to do with (and its pull conditions, so that they can be cleared): a hub's
// own Argo CD may hold thousands of large Applications.
func slimApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	if isCandidate(u) {
		return u, nil
	}
	slim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"],
	}}
	if ours := pullConditionsOf(u); len(ours) > 0 {
		slim.Object["status"] = map[string]any{"conditions": ours}
	}
	return slim, nil
}

// SetupWithManager registers the propagation controller: Applications and pull
// ManifestWorks from the pull cache, ManagedClusters and PlacementDecisions from the
// manager's cache, AppProjects for the Applications that use them.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int, skipNameValidation bool) error {
	app := newApplication()
	project := &unstructured.Unstructured{}
	project.SetGroupVersionKind(pullnames.AppProjectGVK)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, SkipNameValidation: &skipNameValidation}).
		WatchesRawSource(source.Kind(r.Cache, app, r.latency.noteChanges(&handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{}),
			applicationChanged())).
		WatchesRawSource(source.Kind(r.Cache, &workv1.ManifestWork{}, r.latency.watchApplies(forWorkChanges(&r.creates)))).
		WatchesRawSource(source.Kind(r.Cache, project, handler.TypedEnqueueRequestsFromMapFunc(r.forProject))).
		WatchesRawSource(source.Kind(r.Cache, &corev1.Secret{}, r.forCredentialChanges())).
		WatchesRawSource(source.Kind(mgr.GetCache(), &clusterv1.ManagedCluster{}, r.forClusterChanges())).
		WatchesRawSource(source.Kind(mgr.GetCache(), &addonv1beta1.ManagedClusterAddOn{}, clusterwake.OnAddonChanges(r.applicationsOn))).
		WatchesRawSource(source.Kind(mgr.GetCache(), &clusterv1beta1.PlacementDecision{}, r.forDecisionChanges())).
		Complete(r)
}

// applicationChanged lets through the events that can change what is shipped: an
// Application's status, which gitops-addon writes itself and which changes the object
// (Argo CD's Application has no status subresource), does not re-trigger propagation.
func applicationChanged() predicate.TypedPredicate[*unstructured.Unstructured] {
	return predicate.TypedFuncs[*unstructured.Unstructured]{
		CreateFunc: func(e event.TypedCreateEvent[*unstructured.Unstructured]) bool { return isCandidate(e.Object) },
		DeleteFunc: func(e event.TypedDeleteEvent[*unstructured.Unstructured]) bool { return isCandidate(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*unstructured.Unstructured]) bool {
			if !isCandidate(e.ObjectOld) && !isCandidate(e.ObjectNew) {
				return false
			}
			return !equality.Semantic.DeepEqual(propagationView(e.ObjectOld), propagationView(e.ObjectNew))
		},
	}
}

// propagationView is the part of an Application that decides its ManifestWork.
func propagationView(u *unstructured.Unstructured) map[string]any {
	return map[string]any{
		"labels": u.GetLabels(), "annotations": u.GetAnnotations(), "finalizers": u.GetFinalizers(),
		"deletion": u.GetDeletionTimestamp() != nil, "owners": u.GetOwnerReferences(),
		"spec": u.Object["spec"], "operation": u.Object["operation"],
	}
}

func forWorkApplication(_ context.Context, w *workv1.ManifestWork) []reconcile.Request {
	a := w.GetAnnotations()
	if a[pullnames.AnnotationHubAppName] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: a[pullnames.AnnotationHubAppNamespace], Name: a[pullnames.AnnotationHubAppName]}}}
}

func (r *Reconciler) forProject(ctx context.Context, p *unstructured.Unstructured) []reconcile.Request {
	return r.applicationsBy(ctx, indexAppByProject, p.GetNamespace()+"/"+p.GetName())
}

// forClusterChanges wakes the Applications aimed at a cluster that appears or goes, or
// whose availability or acceptance changes (an unapplied work's warning names them).
func (r *Reconciler) forClusterChanges() handler.TypedEventHandler[*clusterv1.ManagedCluster, reconcile.Request] {
	return clusterwake.OnClusterChanges(r.applicationsOn)
}

func (r *Reconciler) applicationsOn(ctx context.Context, cluster string) []reconcile.Request {
	return r.applicationsBy(ctx, indexAppByCluster, cluster)
}

// forDecisionChanges wakes the Applications of the decision's namespace aimed at a
// cluster that the decision added or dropped, and only those.
func (r *Reconciler) forDecisionChanges() handler.TypedEventHandler[*clusterv1beta1.PlacementDecision, reconcile.Request] {
	wake := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], ns string, clusters []string) {
		for _, c := range clusters {
			r.enqueue(q, r.applicationsBy(ctx, indexAppByNsCluster, ns+"/"+c))
		}
	}
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[*clusterv1beta1.PlacementDecision, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*clusterv1beta1.PlacementDecision], q queue) {
			wake(ctx, q, e.Object.Namespace, decided(e.Object))
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*clusterv1beta1.PlacementDecision], q queue) {
			wake(ctx, q, e.Object.Namespace, decided(e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*clusterv1beta1.PlacementDecision], q queue) {
			wake(ctx, q, e.ObjectNew.Namespace, symmetricDifference(decided(e.ObjectOld), decided(e.ObjectNew)))
		},
	}
}

func decided(d *clusterv1beta1.PlacementDecision) []string {
	out := make([]string, 0, len(d.Status.Decisions))
	for _, c := range d.Status.Decisions {
		out = append(out, c.ClusterName)
	}
	return out
}

func symmetricDifference(a, b []string) []string {
	in := func(s []string) map[string]bool {
		m := make(map[string]bool, len(s))
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for x := range ma {
		if !mb[x] {
			out = append(out, x)
		}
	}
	for x := range mb {
		if !ma[x] {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

func (r *Reconciler) applicationsBy(ctx context.Context, index, value string) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(pullnames.ApplicationGVK.GroupVersion().WithKind(pullnames.ApplicationGVK.Kind + "List"))
	if err := r.Cache.List(ctx, list, client.MatchingFields{index: value}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Applications", "index", index, "value", value)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

func (r *Reconciler) enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
	enqueueAll(q, reqs)
}

func enqueueAll(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
	for _, req := range reqs {
		q.Add(req)
	}
}
