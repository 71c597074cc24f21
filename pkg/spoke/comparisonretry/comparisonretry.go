// Package comparisonretry asks Argo CD to compare again each Application the hub pulled
// here whose last comparison failed for want of something that is there now: its
// repo-server, once Available, when the comparison could not reach it; its AppProject,
// once it exists, when Argo CD found none.
//
// Why: Argo CD compares an Application again after a failed comparison only at its
// reconciliation timeout (timeout.reconciliation: 120 s plus up to 60 s of jitter by
// default); a project's creation does not wake its Applications either (Argo CD 3.2's
// project queue only finalizes deletions). An Application delivered while its Argo CD is
// starting (the first delivery to a new cluster, where the ArgoCD instance comes up beside
// it and argocd-server creates the `default` project) or while the repo-server restarts
// (an upgrade, a node drained) fails its first comparison with "connection refused" or
// "Application referencing project default which does not exist", and shows sync Unknown
// for two to three minutes, though what it missed was there seconds later. The agent
// writes Argo CD's own refresh annotation, which Argo CD removes once it has compared; it
// never changes anything else of an Application.
package comparisonretry

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "comparisonretry"

// FieldManager writes the refresh annotation.
const FieldManager = "gitops-addon-agent"

// RepoServerSelector selects an Argo CD instance's repo-server Deployment: the labels the
// GitOps operator and Argo CD's own manifests put on it.
var RepoServerSelector = labels.SelectorFromSet(labels.Set{
	"app.kubernetes.io/component": "repo-server",
	"app.kubernetes.io/part-of":   "argocd",
})

// Retries after the repo-server became Available: the first at once, then after each
// delay. The Service's endpoints can reach kube-proxy a moment after the Deployment is
// Available, so one refresh may still find the repo-server unreachable. Past the last,
// Argo CD's own reconciliation timeout takes over.
var retryDelays = []time.Duration{0, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}

// Controller adds the controller on the agent's Application cache; it keeps its own cache
// of the namespace's repo-server Deployments (one or two objects), slimmed to their
// Available condition, and of its AppProjects' metadata.
func Controller(namespace string) pulledapps.Controller {
	return func(mgr manager.Manager, apps cache.Cache) error {
		argoCD, err := cache.New(mgr.GetConfig(), cache.Options{
			Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
			ByObject: map[client.Object]cache.ByObject{
				&appsv1.Deployment{}: {Label: RepoServerSelector, Transform: slimDeployment},
				newProject():         {},
			},
		})
		if err != nil {
			return fmt.Errorf("creating the repo-server and AppProject cache: %w", err)
		}
		if err := mgr.Add(argoCD); err != nil {
			return fmt.Errorf("adding the repo-server and AppProject cache: %w", err)
		}
		r := &Reconciler{Apps: apps, RepoServers: argoCD, Projects: argoCD, Client: mgr.GetClient(), Namespace: namespace}
		return ctrl.NewControllerManagedBy(mgr).
			Named(ControllerName).
			WatchesRawSource(pulledapps.Source(apps)).
			WatchesRawSource(source.Kind(argoCD, &appsv1.Deployment{},
				handler.TypedEnqueueRequestsFromMapFunc(r.waitingForTheRepoServer))).
			WatchesRawSource(source.Kind(argoCD, newProject(),
				handler.TypedEnqueueRequestsFromMapFunc(r.waitingForTheProject))).
			Complete(r)
	}
}

// newProject is an AppProject's metadata: whether it exists, and since when, is all the
// controller reads of it.
func newProject() *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{}
	p.SetGroupVersionKind(pulledapps.AppProjectGVK)
	return p
}

// Reconciler requests a refresh of one Application when its comparison failed for want of
// a repo-server that is Available now, or of an AppProject that exists now.
type Reconciler struct {
	// Apps reads the Applications (pulledapps.Slim); RepoServers the repo-server
	// Deployments of Namespace (slimDeployment); Projects the metadata of its AppProjects.
	Apps, RepoServers, Projects client.Reader
	Client                      client.Client
	Namespace                   string
	// Now is the clock (tests); time.Now if nil.
	Now func() time.Time

	mu sync.Mutex
	// attempts are by Application, forgotten when it is gone or compares fine.
	attempts map[types.NamespacedName]attempts
}

// attempts are the refreshes requested for one Application (uid: a new one under the
// same name starts over) since what it missed became there at since.
type attempts struct {
	uid   types.UID
	since time.Time
	count int
	last  time.Time
}

// Reconcile requests a refresh when one is due, and looks again when the next one would be.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := pulledapps.New()
	if err := r.Apps.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	missed := whatItMissed(app)
	if !pulledapps.Pulled(app) || !app.GetDeletionTimestamp().IsZero() || missed == nothing {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if _, pending := app.GetAnnotations()[contract.AnnotationArgoCDRefresh]; pending {
		return ctrl.Result{}, nil // Argo CD has not taken the last one yet; its update wakes us
	}
	since, there, err := r.thereSince(ctx, app, missed)
	if err != nil || !there {
		return ctrl.Result{}, err // the repo-server's Deployment or the AppProject wakes us when it is
	}
	wait, due := r.due(req.NamespacedName, app.GetUID(), since)
	if !due {
		if wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		return ctrl.Result{}, nil // every retry spent: Argo CD's own timeout takes over
	}
	if err := r.requestRefresh(ctx, req.NamespacedName); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("asked Argo CD to compare again: what it missed is there now", "application", req.NamespacedName,
		"missed", missed, "comparisonError", pulledapps.ComparisonError(app), "invalidSpecError", pulledapps.InvalidSpecError(app))
	return ctrl.Result{}, nil
}

// What an Application's last comparison missed, that the agent waits for.
type missing string

const (
	nothing          missing = ""
	missedRepoServer missing = "repo-server"
	missedProject    missing = "AppProject"
)

// whatItMissed reads the Application's conditions: a repo-server it could not reach, or
// its AppProject that did not exist.
func whatItMissed(app *unstructured.Unstructured) missing {
	if RepoServerUnreachable(pulledapps.ComparisonError(app)) {
		return missedRepoServer
	}
	if _, ok := MissingProject(pulledapps.InvalidSpecError(app)); ok {
		return missedProject
	}
	return nothing
}

// thereSince says since when what the Application missed is there; false while it is not.
func (r *Reconciler) thereSince(ctx context.Context, app *unstructured.Unstructured, missed missing) (time.Time, bool, error) {
	if missed == missedRepoServer {
		return r.repoServerAvailableSince(ctx)
	}
	name, _ := MissingProject(pulledapps.InvalidSpecError(app))
	project := newProject()
	if err := r.Projects.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, project); err != nil {
		if apierrors.IsNotFound(err) {
			return time.Time{}, false, nil
		}
		return time.Time{}, false, fmt.Errorf("reading AppProject %s: %w", name, err)
	}
	return project.CreationTimestamp.Time, true, nil
}

// due counts a refresh of the Application if one is due now; otherwise it says how long
// until the next (0: none left).
func (r *Reconciler) due(key types.NamespacedName, uid types.UID, since time.Time) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempts == nil {
		r.attempts = map[types.NamespacedName]attempts{}
	}
	a := r.attempts[key]
	if a.uid != uid || !a.since.Equal(since) {
		a = attempts{uid: uid, since: since}
	}
	if a.count >= len(retryDelays) {
		return 0, false
	}
	now := r.now()
	if next := a.last.Add(retryDelays[a.count]); a.count > 0 && now.Before(next) {
		return next.Sub(now), false
	}
	a.count++
	a.last = now
	r.attempts[key] = a
	return 0, true
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.attempts, key)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// requestRefresh writes Argo CD's refresh annotation alone, by a merge patch: the admission
// policy holds the agent to it (agent-applications-policy.yaml).
func (r *Reconciler) requestRefresh(ctx context.Context, key types.NamespacedName) error {
	if err := pulledapps.Annotate(ctx, r.Client, key, contract.AnnotationArgoCDRefresh, "normal", FieldManager); err != nil {
		return fmt.Errorf("asking Argo CD to compare Application %s again: %w", key, err)
	}
	return nil
}

// repoServerAvailableSince is when the namespace's repo-server last became Available;
// false while none is.
func (r *Reconciler) repoServerAvailableSince(ctx context.Context) (time.Time, bool, error) {
	list := &appsv1.DeploymentList{}
	if err := r.RepoServers.List(ctx, list, client.InNamespace(r.Namespace), client.MatchingLabelsSelector{Selector: RepoServerSelector}); err != nil {
		return time.Time{}, false, fmt.Errorf("listing the repo-server Deployments: %w", err)
	}
	var since time.Time
	available := false
	for _, d := range list.Items {
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				available = true
				if c.LastTransitionTime.After(since) {
					since = c.LastTransitionTime.Time
				}
			}
		}
	}
	return since, available, nil
}

// waitingForTheRepoServer are the pulled Applications whose comparison could not reach
// the repo-server: a change of the repo-server's Deployment may make them due.
func (r *Reconciler) waitingForTheRepoServer(ctx context.Context, _ *appsv1.Deployment) []reconcile.Request {
	return r.waiting(ctx, func(app *unstructured.Unstructured) bool { return whatItMissed(app) == missedRepoServer })
}

// waitingForTheProject are the pulled Applications whose comparison found no AppProject of
// this name: its creation makes them due.
func (r *Reconciler) waitingForTheProject(ctx context.Context, project *metav1.PartialObjectMetadata) []reconcile.Request {
	return r.waiting(ctx, func(app *unstructured.Unstructured) bool {
		name, ok := MissingProject(pulledapps.InvalidSpecError(app))
		return ok && name == project.GetName()
	})
}

func (r *Reconciler) waiting(ctx context.Context, waits func(*unstructured.Unstructured) bool) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(pulledapps.GVK.GroupVersion().WithKind(pulledapps.GVK.Kind + "List"))
	if err := r.Apps.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the Applications waiting for the repo-server or an AppProject")
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		app := &list.Items[i]
		if pulledapps.Pulled(app) && waits(app) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)})
		}
	}
	return requests
}

// The InvalidSpecError message of Argo CD's application controller (3.2:
// projectErrorToCondition) for an Application whose project does not exist, around the
// project's name.
const (
	missingProjectPrefix = "Application referencing project "
	missingProjectSuffix = " which does not exist"
)

// MissingProject is the project an InvalidSpecError message says does not exist.
func MissingProject(invalidSpecError string) (string, bool) {
	name, ok := strings.CutPrefix(invalidSpecError, missingProjectPrefix)
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, missingProjectSuffix)
	return name, ok && name != ""
}

// RepoServerUnreachable says whether a ComparisonError message is Argo CD's application
// controller failing to reach its repo-server (gRPC Unavailable: refused, reset, or no
// address yet), not an error the repo-server returned (a Git or manifest error, which a
// refresh would only repeat).
func RepoServerUnreachable(comparisonError string) bool {
	return strings.Contains(comparisonError, "code = Unavailable")
}

// slimDeployment keeps a Deployment's name, labels and status conditions.
func slimDeployment(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	slim := &appsv1.Deployment{}
	slim.Namespace, slim.Name, slim.UID, slim.ResourceVersion, slim.Labels = d.Namespace, d.Name, d.UID, d.ResourceVersion, d.Labels
	slim.Status.Conditions = d.Status.Conditions
	return slim, nil
}
