package crdinstall

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/compat"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/enqueue"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi"
)

// FieldManager is the spoke agent's server-side apply field manager for the CRDs.
const FieldManager = "gitops-addon-agent"

// singleton is the one key of the work queue: any event about our CRDs or the Route API
// means "look at every CRD again" (there are nine, all read from the cache).
var singleton = reconcile.Request{NamespacedName: types.NamespacedName{Name: "crds"}}

// Options configures the installer.
type Options struct {
	// Report receives the ArgoCDCRDsInstalled condition.
	Report *addonstatus.Report
	// OpenShift is the hub's flavour decision for this cluster: true (OpenShift or
	// MicroShift) means the Routes CRD is never installed, whatever the cluster serves.
	OpenShift bool
}

// Installer installs and repairs the embedded CRDs on the spoke.
type Installer struct {
	Client client.Client
	// RESTMapper tells whether the cluster serves the admission policy API; nil: assume it does.
	RESTMapper meta.RESTMapper
	Recorder   events.EventRecorder
	Report     *addonstatus.Report
	CRDs       Embedded
	OpenShift  bool

	// applied remembers, per CRD name, the UID and generation of our last apply. Only
	// Reconcile touches it, and the queue's one key never runs twice at once.
	applied map[string]applied
}

// SetupWithManager registers the installer on a spoke manager whose scheme has
// apiextensions v1 and apiregistration v1, and whose cache holds CRDs (schemas may be
// stripped: the installer reads only metadata and status from the cache). RBAC it
// needs: CRDs get/list/watch and create, update/patch on the embedded names only;
// apiservices get/list/watch; events create/patch.
func SetupWithManager(mgr manager.Manager, o Options) (*Installer, error) {
	crds, err := Load()
	if err != nil {
		return nil, err
	}
	if o.Report == nil {
		o.Report = addonstatus.NewReport()
	}
	i := &Installer{
		Client: mgr.GetClient(), RESTMapper: mgr.GetRESTMapper(), Recorder: mgr.GetEventRecorder("gitops-addon-agent"),
		Report: o.Report, CRDs: crds, OpenShift: o.OpenShift, applied: map[string]applied{},
	}
	toSingleton := enqueue.Always(singleton)
	names := crds.Names()
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return slices.Contains(names, o.GetName()) })
	routeAPI := predicate.NewPredicateFuncs(func(o client.Object) bool {
		s, ok := o.(*apiregistrationv1.APIService)
		return ok && s.Spec.Group == contract.RouteGroup
	})
	// The first reconcile must not wait for an event (on a cluster without our CRDs and
	// without a Route APIService none would come), and it goes through the controller's
	// queue, so that reconciles never run concurrently and an older one never reports last.
	atStart := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(singleton)
		return nil
	})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("crdinstall").
		Watches(&apiextensionsv1.CustomResourceDefinition{}, toSingleton, builder.WithPredicates(ours)).
		Watches(&apiregistrationv1.APIService{}, toSingleton, builder.WithPredicates(routeAPI)).
		WatchesRawSource(atStart).
		Complete(i)
	if err != nil {
		return nil, fmt.Errorf("setting up the CRD installer: %w", err)
	}
	return i, nil
}

// result is the outcome for one CRD.
type result struct {
	name    string
	verdict verdict
	// current is the CRD as it is now (after our apply when we applied); nil if absent.
	current *apiextensionsv1.CustomResourceDefinition
	err     error
}

// Reconcile brings every embedded CRD that is wanted to its desired state and reports.
func (i *Installer) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	// A Route API that cannot be classified holds back only the Routes CRD.
	routes, routesErr := i.decideRoutes(ctx)
	var argoResults []result
	errs := []error{routesErr}
	for _, crd := range i.CRDs.ArgoCD {
		r := i.ensure(ctx, crd)
		argoResults = append(argoResults, r)
		errs = append(errs, r.err)
	}
	var routesResult *result
	if routes.install {
		r := i.ensure(ctx, i.CRDs.Routes)
		routesResult = &r
		errs = append(errs, r.err)
	}
	c := condition(argoResults, routesResult, routes)
	if !i.admissionPolicyServed() {
		c.Message += " " + noAdmissionPolicyNote
	}
	i.Report.Set(c)
	return reconcile.Result{}, errors.Join(errs...)
}

// noAdmissionPolicyNote tells, on clusters before Kubernetes 1.30, that the chart left out
// the admission policy holding the agent's CRD writes to its own names (RBAC cannot
// restrict create by name).
const noAdmissionPolicyNote = "This cluster serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes before 1.30), " +
	"so no admission policy holds the agent's permission to create CRDs to the names it installs; upgrade the cluster to Kubernetes 1.30 or later for that guard."

// admissionPolicyServed says whether the apiserver serves ValidatingAdmissionPolicy v1.
// The manager's REST mapper answers from its discovery cache.
func (i *Installer) admissionPolicyServed() bool {
	if i.RESTMapper == nil {
		return true
	}
	served, _ := compat.ServesValidatingAdmissionPolicyV1(i.RESTMapper)
	return served
}

// routesDecision says whether the Routes CRD is wanted on this cluster, and why.
type routesDecision struct {
	install bool
	why     string
}

// decideRoutes installs the Routes CRD only where the facts say so: the hub has not
// found the cluster to be OpenShift/MicroShift, and the agent's own classification of
// route.openshift.io/v1 is Absent (or CRD: then our own CRD is kept current; someone
// else's is left alone). Never on Native (the guard removes a duplicate there), never
// while Unknown.
func (i *Installer) decideRoutes(ctx context.Context) (routesDecision, error) {
	if i.OpenShift {
		return routesDecision{why: "the hub found this cluster to be OpenShift or MicroShift: Routes are built in"}, nil
	}
	facts, err := i.routeFacts(ctx)
	cls := routeapi.Classify(facts, err)
	switch cls.Reason {
	case contract.RouteAPIAbsent:
		return routesDecision{install: true, why: "the cluster serves no Route API"}, nil
	case contract.RouteAPICRD:
		return routesDecision{install: true, why: "the cluster serves Routes from the CRD"}, nil
	case contract.RouteAPINative:
		return routesDecision{why: "Routes are served natively"}, nil
	}
	return routesDecision{why: "the Route API cannot be classified: " + cls.Message}, err
}

// routeFacts reads what the Route API classification needs from the cache: the APIServices
// and the Routes CRD.
func (i *Installer) routeFacts(ctx context.Context) (routeapi.Facts, error) {
	var facts routeapi.Facts
	apiServices := &apiregistrationv1.APIServiceList{}
	if err := i.Client.List(ctx, apiServices); err != nil {
		return facts, fmt.Errorf("listing APIServices: %w", err)
	}
	facts.APIServices = apiServices.Items
	routes, err := i.get(ctx, contract.RoutesCRDName)
	if err != nil {
		return facts, err
	}
	if routes != nil {
		facts.CRDs = []apiextensionsv1.CustomResourceDefinition{*routes}
	}
	return facts, nil
}

// ensure decides about one CRD and applies it when needed.
func (i *Installer) ensure(ctx context.Context, crd *CRD) result {
	r := result{name: crd.Name()}
	current, err := i.get(ctx, crd.Name())
	if err != nil {
		r.err = err
		return r
	}
	r.current = current
	r.verdict = decide(crd, current, i.lastApplied(crd.Name()))
	if r.verdict.action != actionApply {
		return r
	}
	updated, err := i.apply(ctx, crd)
	if err != nil {
		r.err = err
		regarding := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name()}}
		i.Recorder.Eventf(regarding, nil, corev1.EventTypeWarning, contract.ReasonCRDApplyFailed, "Apply", "Could not apply CustomResourceDefinition %s (%s): "+
			"%v", crd.Name(), r.verdict.why, err)
		return r
	}
	r.current = updated
	ctrl.LoggerFrom(ctx).Info("applied CRD", "crd", crd.Name(), "why", r.verdict.why, "generation", updated.Generation)
	if current == nil || current.Generation != updated.Generation || current.UID != updated.UID {
		i.Recorder.Eventf(updated, nil, corev1.EventTypeNormal, contract.ReasonCRDApplied, "Apply", "Applied CustomResourceDefinition %s from %s "+
			"(%s)", crd.Name(), crd.Source, r.verdict.why)
	}
	return r
}

func (i *Installer) get(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := i.Client.Get(ctx, client.ObjectKey{Name: name}, crd)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
	}
	return crd, nil
}

// apply server-side applies the embedded CRD with the agent's field manager, forcing
// ownership of the fields it sets (a CRD of ours that the work agent or a person changed
// is taken back), and remembers the result's generation.
func (i *Installer) apply(ctx context.Context, crd *CRD) (*apiextensionsv1.CustomResourceDefinition, error) {
	obj := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name()}}
	err := i.Client.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, crd.ApplyJSON),
		client.ForceOwnership, client.FieldOwner(FieldManager))
	if err != nil {
		return nil, err
	}
	i.applied[crd.Name()] = applied{uid: obj.UID, generation: obj.Generation}
	return obj, nil
}

func (i *Installer) lastApplied(name string) *applied {
	if a, ok := i.applied[name]; ok {
		return &a
	}
	return nil
}
