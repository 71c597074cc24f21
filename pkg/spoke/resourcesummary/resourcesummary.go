// Package resourcesummary keeps, on every Application the hub pulled to this cluster,
// the summary of its resources that OCM's work agent carries back to the hub
// (pkg/contract/appresources): one annotation, written only when the summary changes.
package resourcesummary

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "resourcesummary"

// FieldManager owns the annotation on the spoke Applications.
const FieldManager = "gitops-addon-agent"

// ConditionSummaryFailed is set on the agent's ManagedClusterAddOn while a summary cannot
// be written (most often: RBAC); it is withdrawn once one is written again.
const ConditionSummaryFailed = contract.ConditionApplicationResourcesNotReported

// Controller adds the summary controller on the agent's Application cache
// (pkg/spoke/pulledapps); report receives ConditionSummaryFailed.
func Controller(report *addonstatus.Report) pulledapps.Controller {
	return func(mgr manager.Manager, apps cache.Cache) error {
		r := &Reconciler{Cache: apps, Client: mgr.GetClient(), Report: report}
		return ctrl.NewControllerManagedBy(mgr).
			Named(ControllerName).
			WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
			WatchesRawSource(pulledapps.Source(apps)).
			Complete(r)
	}
}

// Reconciler writes one Application's summary annotation when it differs.
type Reconciler struct {
	// Cache reads the Applications (slimmed, see pulledapps.Slim).
	Cache  client.Reader
	Client client.Client
	Report *addonstatus.Report
}

// Reconcile summarises one Application.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := pulledapps.New()
	if err := r.Cache.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pulledapps.Pulled(app) || !app.GetDeletionTimestamp().IsZero() {
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

// write sets the summary annotation alone (pulledapps.Annotate).
func (r *Reconciler) write(ctx context.Context, key types.NamespacedName, value string) error {
	if err := pulledapps.Annotate(ctx, r.Client, key, appresources.Annotation, value, FieldManager); err != nil {
		return fmt.Errorf("writing the resource summary of Application %s: %w", key, err)
	}
	return nil
}

func (r *Reconciler) failed(err error) {
	if r.Report == nil {
		return
	}
	r.Report.Set(metav1.Condition{Type: ConditionSummaryFailed, Status: metav1.ConditionTrue, Reason: contract.ReasonWriteFailed,
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
