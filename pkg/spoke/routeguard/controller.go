package routeguard

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/enqueue"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/openapicheck"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi"
)

// OpenAPIRecheckInterval is the one timer of the guard: /openapi/v2 can break without any
// CRD or APIService event (an apiserver restart turns a frozen document into a 503).
const OpenAPIRecheckInterval = 5 * time.Minute

// singleton is the one key of the work queue: every CRD or APIService event means
// "look at the Route API again".
var singleton = reconcile.Request{NamespacedName: types.NamespacedName{Name: "route-api"}}

// Guard classifies the Route API, removes a duplicate Routes CRD from a native cluster,
// keeps the admission guard where it belongs, and checks /openapi/v2.
type Guard struct {
	Client   client.Client
	Recorder events.EventRecorder
	Checker  *openapicheck.Checker
	Report   *addonstatus.Report

	recheck chan struct{}
	// lastRemoval is when the guard last deleted a duplicate; the report keeps saying so.
	lastRemoval time.Time
	// admissionGuardDisabled: see Options.DisableAdmissionGuard.
	admissionGuardDisabled bool
}

// Options configures SetupWithManager.
type Options struct {
	// Report receives the guard's conditions; nil creates one.
	Report *addonstatus.Report
	// DisableAdmissionGuard leaves out the ValidatingAdmissionPolicy (for clusters whose
	// admission policies are managed elsewhere) and removes ours if it exists; a
	// duplicate Routes CRD is still deleted within seconds.
	DisableAdmissionGuard bool
}

// SetupWithManager registers the guard on a spoke manager whose scheme has core,
// apiextensions v1, apiregistration v1 and admissionregistration v1. RBAC it needs:
// CRDs get/list/watch and delete on routes.route.openshift.io only; apiservices
// get/list/watch; validatingadmissionpolicies(+bindings) get/list/watch/create and
// update/delete on gitops-addon-deny-routes-crd only; events create/patch; GET
// /openapi/v2, /openapi/v3.
func SetupWithManager(mgr manager.Manager, o Options) (*Guard, error) {
	checker, err := openapicheck.New(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	if o.Report == nil {
		o.Report = addonstatus.NewReport()
	}
	g := &Guard{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("gitops-addon-agent"),
		Checker: checker, Report: o.Report, recheck: make(chan struct{}, 1),
		admissionGuardDisabled: o.DisableAdmissionGuard,
	}
	toSingleton := enqueue.Always(singleton)
	err = ctrl.NewControllerManagedBy(mgr).
		Named("routeguard").
		WatchesRawSource(sourceFor(mgr, &apiextensionsv1.CustomResourceDefinition{}, toSingleton)).
		WatchesRawSource(sourceFor(mgr, &apiregistrationv1.APIService{}, toSingleton)).
		Complete(g)
	if err != nil {
		return nil, fmt.Errorf("setting up the Route API guard: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(g.runOpenAPIChecks)); err != nil {
		return nil, fmt.Errorf("adding the /openapi/v2 checker: %w", err)
	}
	return g, nil
}

// CacheByObject strips CRD schemas from the cache: the guard needs a CRD's group,
// versions and name, and a cluster's CRD schemas run to tens of megabytes.
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&apiextensionsv1.CustomResourceDefinition{}: {Transform: stripCRDSchemas},
	}
}

func stripCRDSchemas(obj any) (any, error) {
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Schema = nil
		}
		crd.ManagedFields = nil
	}
	return obj, nil
}

// Reconcile looks at the Route API and acts: remediation and guard on a native cluster,
// guard removal elsewhere, nothing at all while the facts cannot be read.
func (g *Guard) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	defer g.triggerOpenAPICheck()
	facts, err := routeapi.ReadFacts(ctx, g.Client)
	cls := routeapi.Classify(facts, err)
	setRouteAPI(g.Report, cls)
	if err != nil {
		setGuard(g.Report, metav1.ConditionUnknown, contract.ReasonGuardUnknown, "No decision while the Route API cannot be classified: "+err.Error())
		return reconcile.Result{}, err
	}
	setDuplicates(g.Report, routeapi.DuplicateSurfaces(facts))
	if cls.Reason != contract.RouteAPINative {
		if err := removeGuard(ctx, g.Client); err != nil {
			return reconcile.Result{}, err
		}
		setGuard(g.Report, metav1.ConditionFalse, contract.ReasonNotNative, "Route API is "+cls.Reason+": the Routes CRD is legitimate here, no guard.")
		return reconcile.Result{}, nil
	}
	removed, err := g.removeDuplicate(ctx, cls)
	if err != nil {
		setGuard(g.Report, metav1.ConditionFalse, contract.ReasonGuardFailed, err.Error())
		return reconcile.Result{}, err
	}
	if removed {
		g.lastRemoval = time.Now().UTC()
	}
	return reconcile.Result{}, g.guard(ctx)
}

// removeDuplicate deletes the Routes CRD on a native cluster. Routes survive: the
// aggregated API serves them. The UID precondition makes sure only the CRD we looked at
// goes.
func (g *Guard) removeDuplicate(ctx context.Context, cls routeapi.Classification) (bool, error) {
	if cls.RoutesCRD == nil {
		return false, nil
	}
	uid := cls.RoutesCRD.UID
	err := g.Client.Delete(ctx, cls.RoutesCRD.DeepCopy(), client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("deleting the duplicate CRD %s: %w", contract.RoutesCRDName, err)
	}
	ctrl.LoggerFrom(ctx).Info("deleted the duplicate Routes CRD", "crd", contract.RoutesCRDName, "apiService", cls.NativeAPIService.Name)
	g.Recorder.Eventf(cls.NativeAPIService, nil, corev1.EventTypeWarning, contract.ReasonDuplicateRoutesCRDRemoved, "Remediate",
		"Deleted CustomResourceDefinition %s: it duplicated route.openshift.io/v1 served by this APIService and broke /openapi/v2", contract.RoutesCRDName)
	return true, nil
}

// guard installs (or, when disabled, removes) the admission guard and reports it. Once
// the agent has removed a duplicate, the reason says so, whatever the guard's state.
func (g *Guard) guard(ctx context.Context) error {
	status, reason, message, err := g.reconcileAdmissionGuard(ctx)
	if !g.lastRemoval.IsZero() && err == nil {
		reason = contract.ReasonDuplicateRemoved
		message = "Deleted a duplicate " + contract.RoutesCRDName + " CRD at " + g.lastRemoval.Format(time.RFC3339) +
			"; Routes stay served natively. " + message
	}
	setGuard(g.Report, status, reason, message)
	return err
}

func (g *Guard) reconcileAdmissionGuard(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
	if g.admissionGuardDisabled {
		if err := removeGuard(ctx, g.Client); err != nil {
			return metav1.ConditionFalse, contract.ReasonGuardFailed, "Could not remove the disabled admission guard: " + err.Error(), err
		}
		return metav1.ConditionFalse, contract.ReasonGuardDisabled,
			"The admission guard is disabled (agent flag --disable-route-crd-admission-guard); a duplicate is still removed within seconds.", nil
	}
	state, err := ensureGuard(ctx, g.Client)
	switch {
	case err != nil:
		return metav1.ConditionFalse, contract.ReasonGuardFailed, "Could not install the admission guard: " + err.Error(), err
	case state == guardUnavailable:
		return metav1.ConditionFalse, contract.ReasonGuardUnavailable,
			"The apiserver does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy; a duplicate is still removed within seconds.", nil
	default:
		return metav1.ConditionTrue, contract.ReasonGuardInstalled, "ValidatingAdmissionPolicy " + GuardName + " denies creating the duplicate CRD.", nil
	}
}

func (g *Guard) triggerOpenAPICheck() {
	select {
	case g.recheck <- struct{}{}:
	default:
	}
}

// runOpenAPIChecks checks /openapi/v2 at start, after every reconcile and periodically.
// An unhealthy answer is looked at again sooner (see openAPIRecheck): the apiserver
// rebuilds the document asynchronously after a CRD goes, and no event says when it is done.
func (g *Guard) runOpenAPIChecks(ctx context.Context) error {
	var recheck openAPIRecheck
	timer := time.NewTimer(recheck.after(g.checkOpenAPI(ctx)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-g.recheck:
		}
		timer.Reset(recheck.after(g.checkOpenAPI(ctx)))
	}
}

// openAPIRecheck is the delay before the next /openapi/v2 check: OpenAPIRecheckInterval
// while the document is healthy; while it is not, openAPIUnhealthyRecheck doubling up to
// that interval, so a repaired document is reported within seconds and a lasting outage
// costs one GET per interval.
type openAPIRecheck struct{ delay time.Duration }

const openAPIUnhealthyRecheck = time.Second

func (r *openAPIRecheck) after(healthy bool) time.Duration {
	if healthy {
		r.delay = 0
		return OpenAPIRecheckInterval
	}
	r.delay = min(max(2*r.delay, openAPIUnhealthyRecheck), OpenAPIRecheckInterval)
	return r.delay
}

// checkOpenAPI reports /openapi/v2 and says whether it is healthy.
func (g *Guard) checkOpenAPI(ctx context.Context) bool {
	facts, err := routeapi.ReadFacts(ctx, g.Client)
	if err != nil {
		setOpenAPI(g.Report, openapicheck.Result{}, err)
		return false
	}
	res, err := g.Checker.Check(ctx, routeapi.ServedCRDGroupVersions(facts))
	setOpenAPI(g.Report, res, err)
	return err == nil && res.Healthy()
}
