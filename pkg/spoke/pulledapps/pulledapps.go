// Package pulledapps holds the agent's one cache of the Applications in the Argo CD
// namespace, slimmed to what the agent's controllers read, and starts those controllers
// on it once Argo CD's Application and AppProject CRDs are served (the agent installs the
// CRDs itself, so they may come after the agent starts). Pulled says which of them the hub
// delivered.
package pulledapps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
)

// GVK is Argo CD's Application kind; AppProjectGVK its AppProject kind, which a controller
// on the Applications may watch too (pkg/spoke/comparisonretry).
var (
	GVK           = contract.ApplicationGVK
	AppProjectGVK = contract.AppProjectGVK
)

// requiredCRDs are the CRDs, by name, of the kinds that must be served before the
// controllers start: a watch of a kind not served yet fails their start.
var requiredCRDs = map[string]schema.GroupVersionKind{
	"applications.argoproj.io": GVK,
	"appprojects.argoproj.io":  AppProjectGVK,
}

// Controller adds one controller on the Application cache to the running manager.
type Controller func(mgr manager.Manager, apps cache.Cache) error

// SetupWithManager starts the Application cache of namespace, and controllers on it, once
// Argo CD's Application and AppProject CRDs are established and served. It watches the
// CRDs the manager's cache holds already.
func SetupWithManager(mgr manager.Manager, namespace string, controllers ...Controller) error {
	s := &starter{mgr: mgr, namespace: namespace, controllers: controllers}
	return ctrl.NewControllerManagedBy(mgr).
		Named("pulledapps-starter").
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, required := requiredCRDs[o.GetName()]
			return required
		}))).
		Complete(s)
}

// starter adds the Application cache and the controllers to the running manager, once.
type starter struct {
	mgr         manager.Manager
	namespace   string
	controllers []Controller
	once        sync.Once
	err         error
}

func (s *starter) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	for name, gvk := range requiredCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := s.mgr.GetClient().Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err) // its creation wakes us
		}
		if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			return ctrl.Result{}, nil // its next event wakes us
		}
		// Established comes before discovery serves the kind, and no CRD event marks that
		// moment: look again shortly, until the kind maps (seconds at most).
		if _, err := s.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				ctrl.LoggerFrom(ctx).Info("a CRD is established but not served yet; waiting for discovery", "crd", name)
				return ctrl.Result{RequeueAfter: discoveryRetry}, nil
			}
			return ctrl.Result{}, fmt.Errorf("mapping the %s kind: %w", gvk.Kind, err)
		}
	}
	s.once.Do(func() { s.err = s.start() })
	return ctrl.Result{}, s.err
}

// discoveryRetry is how soon the starter looks again for the Application kind in discovery.
const discoveryRetry = 2 * time.Second

// start adds the cache of the namespace's Applications, slimmed (Slim), and the
// controllers on it. A failure is returned on every later attempt.
func (s *starter) start() error {
	c, err := cache.New(s.mgr.GetConfig(), cache.Options{
		Scheme: s.mgr.GetScheme(), Mapper: s.mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{s.namespace: {}},
		ByObject:          map[client.Object]cache.ByObject{New(): {Transform: Slim}},
	})
	if err != nil {
		return fmt.Errorf("creating the Application cache: %w", err)
	}
	if err := s.mgr.Add(c); err != nil {
		return fmt.Errorf("adding the Application cache: %w", err)
	}
	for _, add := range s.controllers {
		if err := add(s.mgr, c); err != nil {
			return err
		}
	}
	return nil
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

// Digest stands for an annotation's value in the cache: equal values, equal digests.
func Digest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Argo CD's condition types on an Application that the agent reads: ComparisonError when
// it could not load the desired or live state, InvalidSpecError when the spec refers to
// what is not there (a project among others).
const (
	comparisonErrorType  = "ComparisonError"
	invalidSpecErrorType = "InvalidSpecError"
)

// keptConditions are the condition types Slim keeps.
var keptConditions = map[string]bool{comparisonErrorType: true, invalidSpecErrorType: true}

// Slim keeps what the agent's controllers read: the metadata (owners, annotations) and
// the status fields of a resource summary (pkg/contract/appresources) and a comparison
// (reconciledAt, the ComparisonError and InvalidSpecError conditions). Spec, history and
// other conditions are
// dropped, and the resource tree annotation (up to apptree.MaxBytes) is kept as its Digest:
// the agent only asks whether it changed.
func Slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	if annotations := u.GetAnnotations(); annotations[apptree.Annotation] != "" {
		annotations[apptree.Annotation] = Digest(annotations[apptree.Annotation])
		u.SetAnnotations(annotations)
	}
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
	if conditions, ok, _ := unstructured.NestedSlice(status, "conditions"); ok {
		var kept []any
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && keptConditions[fmt.Sprint(m["type"])] {
				kept = append(kept, m)
			}
		}
		if kept != nil {
			slim["conditions"] = kept
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"], "status": slim,
	}}, nil
}

// ComparisonError is the message of the Application's ComparisonError condition, "" if
// it has none.
func ComparisonError(app *unstructured.Unstructured) string {
	return conditionMessage(app, comparisonErrorType)
}

// InvalidSpecError is the message of the Application's InvalidSpecError condition, "" if
// it has none.
func InvalidSpecError(app *unstructured.Unstructured) string {
	return conditionMessage(app, invalidSpecErrorType)
}

func conditionMessage(app *unstructured.Unstructured, conditionType string) string {
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == conditionType {
			message, _ := m["message"].(string)
			return message
		}
	}
	return ""
}

// New is an empty Application.
func New() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	return u
}

// Source watches the pulled Applications in the agent's Application cache, each event
// enqueuing the Application itself: what every controller on that cache reconciles.
func Source(apps cache.Cache) source.TypedSource[reconcile.Request] {
	return source.Kind(apps, New(), &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{},
		predicate.NewTypedPredicateFuncs(func(a *unstructured.Unstructured) bool { return Pulled(a) }))
}

// Annotate sets one annotation of an Application, and nothing else, by a merge patch:
// Argo CD owns the status and OCM's work agent the spec; neither is touched, and no
// resourceVersion is needed. An Application gone meanwhile is no error.
func Annotate(ctx context.Context, c client.Client, key types.NamespacedName, annotation, value, fieldManager string) error {
	patch := New()
	patch.SetNamespace(key.Namespace)
	patch.SetName(key.Name)
	raw := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, annotation, value)
	err := c.Patch(ctx, patch, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(fieldManager))
	return client.IgnoreNotFound(err)
}
