// Package resourcesummary keeps, on every Application the hub pulled to this cluster,
// the summary of its resources that OCM's work agent carries back to the hub
// (pkg/contract/appresources): one annotation, written only when the summary changes.
package resourcesummary

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "resourcesummary"

// FieldManager owns the annotation on the spoke Applications.
const FieldManager = "gitops-addon-agent"

// ConditionSummaryFailed is set on the agent's ManagedClusterAddOn while a summary cannot
// be written (most often: RBAC); it is withdrawn once one is written again.
const ConditionSummaryFailed = appresources.ConditionNotWritten

// applicationCRD must be established before Applications can be watched.
const applicationCRD = "applications.argoproj.io"

var applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// Options configures the controller.
type Options struct {
	// Namespace is the Argo CD namespace whose Applications are summarised: the one where
	// the pull model delivers them and the spoke's Argo CD runs them.
	Namespace string
	// Report receives ConditionSummaryFailed.
	Report *addonstatus.Report
}

// SetupWithManager starts the summaries once Argo CD's Application CRD is established
// (the agent installs it itself, so it may come after the agent starts). It watches the
// CRDs the manager's cache holds already.
func SetupWithManager(mgr manager.Manager, o Options) error {
	s := &starter{mgr: mgr, o: o}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-starter").
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == applicationCRD
		}))).
		Complete(s)
}

// starter adds the Application cache and the summary controller to the running manager.
type starter struct {
	mgr  manager.Manager
	o    Options
	once sync.Once
	err  error
}

func (s *starter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := s.mgr.GetClient().Get(ctx, req.NamespacedName, crd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return ctrl.Result{}, nil // its next event wakes us
	}
	// Established comes before discovery serves the kind, and no CRD event marks that
	// moment: look again shortly, until the Application kind maps (seconds at most).
	if _, err := s.mgr.GetRESTMapper().RESTMapping(applicationGVK.GroupKind(), applicationGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			ctrl.LoggerFrom(ctx).Info("the Application CRD is established but not served yet; waiting for discovery")
			return ctrl.Result{RequeueAfter: discoveryRetry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("mapping the Application kind: %w", err)
	}
	s.once.Do(func() { s.err = s.start() })
	return ctrl.Result{}, s.err
}

// discoveryRetry is how soon the starter looks again for the Application kind in discovery.
const discoveryRetry = 2 * time.Second

// start adds a cache of the Argo CD namespace's Applications, slimmed to what a summary
// needs, and the controller on it. A failure is returned on every later attempt.
func (s *starter) start() error {
	app := newApplication()
	c, err := cache.New(s.mgr.GetConfig(), cache.Options{
		Scheme: s.mgr.GetScheme(), Mapper: s.mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{s.o.Namespace: {}},
		ByObject:          map[client.Object]cache.ByObject{app: {Transform: slimApplication}},
	})
	if err != nil {
		return fmt.Errorf("creating the Application cache: %w", err)
	}
	if err := s.mgr.Add(c); err != nil {
		return fmt.Errorf("adding the Application cache: %w", err)
	}
	r := &Reconciler{Cache: c, Client: s.mgr.GetClient(), Report: s.o.Report}
	return ctrl.NewControllerManagedBy(s.mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		WatchesRawSource(source.Kind(c, app, &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{},
			predicate.NewTypedPredicateFuncs(func(a *unstructured.Unstructured) bool { return Pulled(a) }))).
		Complete(r)
}

// Reconciler writes one Application's summary annotation when it differs.
type Reconciler struct {
	// Cache reads the Applications (slimmed, see slimApplication).
	Cache  client.Reader
	Client client.Client
	Report *addonstatus.Report
}

// Reconcile summarises one Application.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := newApplication()
	if err := r.Cache.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !Pulled(app) || !app.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	if _, reconciled, _ := unstructured.NestedString(app.Object, "status", "reconciledAt"); !reconciled {
		// Argo CD has not compared it yet: "no resources" would be a claim nobody made.
		return ctrl.Result{}, nil
	}
	value, err := appresources.FromApplication(app.Object).Encode()
	if err != nil {
		return ctrl.Result{}, err
	}
	if app.GetAnnotations()[appresources.Annotation] == value {
		return ctrl.Result{}, nil
	}
	if err := r.write(ctx, req.NamespacedName, value); err != nil {
		r.failed(err)
		return ctrl.Result{}, err
	}
	r.succeeded()
	return ctrl.Result{}, nil
}

// write sets the annotation alone, by a merge patch: Argo CD owns the status and OCM's work
// agent the spec; neither is touched, and no resourceVersion is needed.
func (r *Reconciler) write(ctx context.Context, key types.NamespacedName, value string) error {
	patch := &unstructured.Unstructured{}
	patch.SetGroupVersionKind(applicationGVK)
	patch.SetNamespace(key.Namespace)
	patch.SetName(key.Name)
	raw := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, appresources.Annotation, value)
	err := r.Client.Patch(ctx, patch, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(FieldManager))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the resource summary of Application %s: %w", key, err)
	}
	return nil
}

func (r *Reconciler) failed(err error) {
	if r.Report == nil {
		return
	}
	r.Report.Set(metav1.Condition{Type: ConditionSummaryFailed, Status: metav1.ConditionTrue, Reason: "WriteFailed",
		Message: err.Error() + "; the hub shows these Applications without their resources until it can be written " +
			"(the agent needs patch on applications.argoproj.io in its Argo CD namespace)"})
}

func (r *Reconciler) succeeded() {
	if r.Report == nil {
		return
	}
	if _, set := r.Report.Condition(ConditionSummaryFailed); set {
		r.Report.Withdraw(ConditionSummaryFailed)
	}
}

// Pulled says whether the hub delivered the Application: OCM's work agent makes the
// ManifestWork's AppliedManifestWork an owner of what it applies.
func Pulled(app client.Object) bool {
	for _, o := range app.GetOwnerReferences() {
		if o.Kind == "AppliedManifestWork" && o.APIVersion == "work.open-cluster-management.io/v1" {
			return true
		}
	}
	return false
}

// slimApplication keeps what a summary needs: the metadata (owners, our annotation) and
// the status fields appresources.FromApplication reads. Spec and history are dropped.
func slimApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	slim := map[string]any{}
	for _, k := range []string{"resources", "summary", "resourceHealthSource", "reconciledAt"} {
		if v, ok := status[k]; ok {
			slim[k] = v
		}
	}
	if results, ok, _ := unstructured.NestedSlice(status, "operationState", "syncResult", "resources"); ok {
		slim["operationState"] = map[string]any{"syncResult": map[string]any{"resources": results}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"], "status": slim,
	}}, nil
}

func newApplication() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	return u
}
