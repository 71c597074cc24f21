package existingargocd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/enqueue"
)

// singleton is the one key of the queue: any event means "look at the cluster again".
var singleton = reconcile.Request{NamespacedName: types.NamespacedName{Name: "existing-argocd"}}

// The kinds that may not be served (their CRDs come with Argo CD and with OLM): their
// watches start once they are.
var (
	subscriptionGVK = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	csvGVK          = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	// crdNames are the CRDs whose arrival starts those watches.
	crdNames = []string{"argocds.argoproj.io", "subscriptions.operators.coreos.com", "clusterserviceversions.operators.coreos.com"}
	// crdOf names the CRD of each watched kind.
	crdOf = map[schema.GroupVersionKind]string{
		contract.ArgoCDGVK: crdNames[0], subscriptionGVK: crdNames[1], csvGVK: crdNames[2],
	}
)

// readTimeout bounds one reading of the facts.
const readTimeout = time.Minute

// discoveryRetry is how soon the detector looks again at a kind whose CRD exists but
// which discovery does not serve yet: Established comes before the kind is served, and no
// CRD event marks that moment. Without a second look the kind's watch would never start,
// and an ArgoCD the work agent creates next would never be recorded as ours.
const discoveryRetry = 2 * time.Second

// Options configures the detector.
type Options struct {
	// AddonNamespace is the agent's namespace, where the creation record is kept.
	AddonNamespace string
	// Report receives the ExistingArgoCD condition.
	Report *addonstatus.Report
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Detector reports whether the cluster runs an Argo CD gitops-addon did not create and
// keeps the creation record.
type Detector struct {
	// Cache is the detector's own: cluster-wide Deployments (slimmed to what recognises
	// an operator), ArgoCD and ClusterServiceVersion metadata, Subscriptions. It is not
	// the manager's, whose Deployment cache other features narrow to one name.
	Cache cache.Cache
	// Records reads and writes the creation record, uncached (the agent may read
	// ConfigMaps only in its namespace).
	Records client.Client
	// CRDs reads CustomResourceDefinitions (the manager's cache).
	CRDs client.Reader
	Options

	controller controller.Controller
	mu         sync.Mutex
	watching   map[schema.GroupVersionKind]bool
	reported   bool
}

// SetupWithManager registers the detector on the agent's manager: its cache and its
// controller, whose first reconcile runs at start. The manager's cache must hold CRDs.
func SetupWithManager(mgr manager.Manager, cfg *rest.Config, o Options) (*Detector, error) {
	c, err := cache.New(cfg, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&appsv1.Deployment{}: {Transform: slimDeployment}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the existing Argo CD detector's cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	records, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the creation record's client: %w", err)
	}
	d := &Detector{Cache: c, Records: records, CRDs: mgr.GetClient(), Options: o, watching: map[schema.GroupVersionKind]bool{}}
	toSingleton := enqueue.Always(singleton)
	theirs := predicate.NewPredicateFuncs(func(o client.Object) bool { return slices.Contains(crdNames, o.GetName()) })
	atStart := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(singleton)
		return nil
	})
	d.controller, err = ctrl.NewControllerManagedBy(mgr).
		Named("existingargocd").
		Watches(&apiextensionsv1.CustomResourceDefinition{}, toSingleton, builder.WithPredicates(theirs)).
		WatchesRawSource(source.Kind(c, client.Object(&appsv1.Deployment{}), toSingleton, predicate.NewPredicateFuncs(looksLikeOperator))).
		WatchesRawSource(atStart).
		Build(d)
	if err != nil {
		return nil, fmt.Errorf("setting up the existing Argo CD detector: %w", err)
	}
	return d, nil
}

// Reconcile reads the facts, decides, records and reports.
func (d *Detector) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	facts, err := d.read(ctx)
	if err != nil {
		d.reportUnknown(err)
		return reconcile.Result{}, err
	}
	v := Decide(facts, d.now())
	if v.RecordChanged {
		if err := writeRecord(ctx, d.Records, d.AddonNamespace, v.Record, v.RecordedInstance); err != nil {
			d.reportUnknown(err)
			return reconcile.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("creation record written", "argocd", v.RecordedInstance, "uid", v.Record.ArgoCDUID,
			"verifiedAbsentAt", v.Record.VerifiedAbsentAt, "how", v.Record.How)
	}
	d.Report.Set(metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: v.Status, Reason: v.Reason, Message: v.Message})
	d.mu.Lock()
	d.reported = true
	d.mu.Unlock()
	if d.definedButNotServed(ctx) {
		ctrl.LoggerFrom(ctx).Info("a CRD of a watched kind exists but discovery does not serve the kind yet; looking again shortly")
		return reconcile.Result{RequeueAfter: discoveryRetry}, nil
	}
	return reconcile.Result{}, nil
}

// definedButNotServed says whether a watched kind is not watched yet though its CRD is
// established.
func (d *Detector) definedButNotServed(ctx context.Context) bool {
	if d.CRDs == nil {
		return false
	}
	d.mu.Lock()
	var missing []string
	for gvk, crd := range crdOf {
		if !d.watching[gvk] {
			missing = append(missing, crd)
		}
	}
	d.mu.Unlock()
	for _, name := range missing {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		// One not established yet wakes the detector when it is (a CRD event).
		if d.CRDs.Get(ctx, client.ObjectKey{Name: name}, crd) == nil && apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			return true
		}
	}
	return false
}

// reportUnknown reports that the facts could not be read, but only before a first
// verdict: the hub withdraws the stack from a cluster that is not False, and a passing
// read error must not take gitops-addon's own Argo CD away.
func (d *Detector) reportUnknown(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.reported {
		return
	}
	d.Report.Set(metav1.Condition{
		Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionUnknown, Reason: contract.ExistingArgoCDUnknown,
		Message: "Could not find out whether an Argo CD gitops-addon did not create runs here, so only the agent is shipped: " + err.Error(),
	})
}

func (d *Detector) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// read gathers the facts: the record, then each kind (a kind that is not served has no
// objects).
func (d *Detector) read(ctx context.Context) (Facts, error) {
	// A kind's first list starts its informer and waits for it to sync, which a missing
	// permission would make wait for ever.
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var f Facts
	var err error
	if f.Record, err = ReadRecord(ctx, d.Records, d.AddonNamespace); err != nil {
		return f, err
	}
	instances, err := d.listMetadata(ctx, contract.ArgoCDGVK, client.InNamespace(contract.GitOpsNamespace))
	for _, m := range instances {
		f.Instances = append(f.Instances, instanceOf(&m))
	}
	errs := []error{err}
	csvs, err := d.listMetadata(ctx, csvGVK)
	errs = append(errs, err)
	for _, m := range csvs {
		if o, ok := csvOf(&m); ok {
			f.OLM = append(f.OLM, o)
		}
	}
	subs, err := d.listSubscriptions(ctx)
	errs = append(errs, err)
	f.OLM = append(f.OLM, subs...)
	deployments := &appsv1.DeploymentList{}
	if err := d.Cache.List(ctx, deployments); err != nil {
		errs = append(errs, fmt.Errorf("listing Deployments: %w", err))
	}
	for i := range deployments.Items {
		if o, ok := operatorOf(&deployments.Items[i]); ok {
			f.Operators = append(f.Operators, o)
		}
	}
	return f, errors.Join(errs...)
}

// listMetadata lists a kind's metadata from the cache.
func (d *Detector) listMetadata(ctx context.Context, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return list.Items, d.listServed(ctx, gvk, list, obj, opts...)
}

func (d *Detector) listSubscriptions(ctx context.Context) ([]OLMOperator, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(subscriptionGVK.GroupVersion().WithKind(subscriptionGVK.Kind + "List"))
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(subscriptionGVK)
	if err := d.listServed(ctx, subscriptionGVK, list, obj); err != nil {
		return nil, err
	}
	var out []OLMOperator
	for i := range list.Items {
		if o, ok := subscriptionOf(&list.Items[i]); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// listServed lists a kind that may not be served into list from the cache (a kind that
// is not served has no objects: list stays empty) and watches it, as obj, from then on.
func (d *Detector) listServed(ctx context.Context, gvk schema.GroupVersionKind, list client.ObjectList, obj client.Object, opts ...client.ListOption) error {
	if err := d.Cache.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return d.watch(gvk, obj)
}

// watch starts, once, the watch of a kind that became served, so that its changes wake
// the detector from then on.
func (d *Detector) watch(gvk schema.GroupVersionKind, obj client.Object) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watching[gvk] || d.controller == nil {
		return nil
	}
	if err := d.controller.Watch(source.Kind(d.Cache, obj, enqueue.Always(singleton))); err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	d.watching[gvk] = true
	return nil
}

// looksLikeOperator passes the Deployments whose containers run a GitOps operator image:
// the others' changes (every rollout on the cluster) need no second look.
func looksLikeOperator(o client.Object) bool {
	dep, ok := o.(*appsv1.Deployment)
	return ok && slices.ContainsFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return operatorImage.MatchString(c.Image) })
}

// slimDeployment keeps of a cached Deployment only what recognises a GitOps operator:
// its metadata, and each container's name, image and WATCH_NAMESPACE.
func slimDeployment(obj any) (any, error) {
	dep, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	slim := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: dep.Name, Namespace: dep.Namespace, UID: dep.UID, ResourceVersion: dep.ResourceVersion, Labels: dep.Labels,
		CreationTimestamp: dep.CreationTimestamp,
	}}
	for _, c := range dep.Spec.Template.Spec.Containers {
		kept := corev1.Container{Name: c.Name, Image: c.Image}
		for _, e := range c.Env {
			if e.Name == "WATCH_NAMESPACE" {
				kept.Env = append(kept.Env, e)
			}
		}
		slim.Spec.Template.Spec.Containers = append(slim.Spec.Template.Spec.Containers, kept)
	}
	return slim, nil
}
