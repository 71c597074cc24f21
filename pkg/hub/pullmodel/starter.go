package pullmodel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/acmtakeover"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/reports"
	"github.com/gitops-addon/gitops-addon/pkg/hub/treecache"
)

// ApplicationCRDName is the CRD whose presence starts the pull model.
const ApplicationCRDName = "applications.argoproj.io"

// requiredCRDs must be established before the pull model starts.
var requiredCRDs = []string{ApplicationCRDName, "appprojects.argoproj.io"}

// Starter starts the pull model's cache and controllers once Argo CD's Application and
// AppProject CRDs are established on the hub, whether they were installed before or
// after the manager started: no restart is needed.
type Starter struct {
	mgr      manager.Manager
	opts     Options
	once     sync.Once
	started  bool
	startErr error
	// departures gets the pull cache once it exists.
	departures *Departures
}

// Options configures the pull model.
type Options struct {
	// Workers is how many Applications are propagated concurrently.
	Workers int
	// ApplyTimeout is how long a ManifestWork may stay unapplied before the hub
	// Application and the report say so (DefaultApplyTimeout when zero).
	ApplyTimeout time.Duration
	// StatusStaleAfter is the age from which a pulled Application's status on the hub counts
	// in gitops_addon_pull_stale_statuses (DefaultStatusStaleAfter when zero).
	StatusStaleAfter time.Duration
	// HubOnly: this installation does not deliver the addon (another one, Red Hat ACM's,
	// does), so no spoke agent of ours summarises the Applications' resources.
	HubOnly bool
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
	// Hub is the hub's own cluster ID: an Application aimed at the hub itself is refused.
	Hub localcluster.Hub
	// CredentialNamespaces, when not nil, are the only namespaces whose repository
	// credentials the pull model reads (the manager may read Secrets there only): the
	// manager's --argo-namespaces as gitopscluster.NamespaceConfigs gives them.
	CredentialNamespaces map[string]cache.Config
	// Trees writes the resource trees where the hub's argocd-server reads them (nil: none).
	Trees *treecache.Writer
}

// DefaultApplyTimeout is Options.ApplyTimeout's default: far above the seconds a work
// agent takes, short enough for an operator to learn of an offline cluster.
const DefaultApplyTimeout = 5 * time.Minute

func (o Options) statusStaleAfter() time.Duration {
	if o.StatusStaleAfter <= 0 {
		return DefaultStatusStaleAfter
	}
	return o.StatusStaleAfter
}

func (o Options) applyTimeout() time.Duration {
	if o.ApplyTimeout <= 0 {
		return DefaultApplyTimeout
	}
	return o.ApplyTimeout
}

// SetupStarter registers the Starter. It watches CRD metadata only, filtered to Argo
// CD's two CRDs. The Departures it returns finds the pull Applications leaving a cluster
// once the pull model runs.
func SetupStarter(mgr manager.Manager, o Options) (*Departures, error) {
	if err := RegisterDecisionIndex(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("indexing PlacementDecisions by cluster: %w", err)
	}
	skipNameValidation := o.SkipNameValidation
	s := &Starter{mgr: mgr, opts: o, departures: NewDepartures(mgr.GetClient(), mgr.GetAPIReader())}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return s.departures, ctrl.NewControllerManagedBy(mgr).
		Named("pullmodel-starter").
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation}).
		For(crd, builder.OnlyMetadata, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == requiredCRDs[0] || o.GetName() == requiredCRDs[1]
		}))).
		Complete(s)
}

// Reconcile starts the pull model when both CRDs are established.
func (s *Starter) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if s.started {
		return ctrl.Result{}, nil
	}
	for _, name := range requiredCRDs {
		ready, err := s.established(ctx, name)
		if err != nil || !ready {
			return ctrl.Result{}, err // the CRD's next event wakes us
		}
	}
	if err := s.start(); err != nil {
		return ctrl.Result{}, err
	}
	s.started = true
	ctrl.LoggerFrom(ctx).Info("Argo CD's Application CRD is established: the pull model is running", "workers", s.opts.Workers)
	return ctrl.Result{}, nil
}

func (s *Starter) established(ctx context.Context, name string) (bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := s.mgr.GetAPIReader().Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	return apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established), nil
}

// start adds the pull cache and both controllers to the running manager. A failure is
// returned on every later attempt too: half-registered controllers cannot be retried.
func (s *Starter) start() error {
	s.once.Do(func() {
		c, err := NewCache(s.mgr, s.opts.CredentialNamespaces)
		if err != nil {
			s.startErr = err
			return
		}
		if err := s.mgr.Add(c); err != nil {
			s.startErr = fmt.Errorf("adding the pull model's cache: %w", err)
			return
		}
		propagation := &Reconciler{Client: s.mgr.GetClient(), Cache: c, Recorder: s.mgr.GetEventRecorder(ControllerName),
			ApplyTimeout: s.opts.applyTimeout(), HubOnly: s.opts.HubOnly, Hub: s.opts.Hub, latency: newLatencies(time.Now),
			Trees: s.opts.Trees}
		propagation.acm = acmtakeover.NewWorks(s.mgr.GetClient(), s.mgr.GetAPIReader(), propagation.event)
		if err := propagation.SetupWithManager(s.mgr, s.opts.Workers, s.opts.SkipNameValidation); err != nil {
			s.startErr = fmt.Errorf("setting up the pull model's propagation controller: %w", err)
			return
		}
		report := &reports.Reconciler{Client: s.mgr.GetClient(), Cache: c, APIReader: s.mgr.GetAPIReader(),
			ApplyTimeout: s.opts.applyTimeout(), HubOnly: s.opts.HubOnly}
		if err := report.SetupWithManager(s.mgr, s.opts.SkipNameValidation); err != nil {
			s.startErr = fmt.Errorf("setting up the ApplicationSet report controller: %w", err)
			return
		}
		if err := s.mgr.Add(propagation.reportStatusAges(c, s.opts.statusStaleAfter())); err != nil {
			s.startErr = fmt.Errorf("serving the pull model's status metrics: %w", err)
			return
		}
		s.departures.SetCache(c)
	})
	return s.startErr
}
