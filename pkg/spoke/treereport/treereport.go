// Package treereport keeps, on every Application the hub pulled to this cluster, the
// resource tree the spoke's Argo CD shows of it (pkg/contract/apptree): read from the
// redis cache in which Argo CD's application controller keeps it, bounded, and written in
// one annotation that OCM's work agent carries back to the hub, only when it changed.
//
// It is driven by Argo CD's own announcements (the controller publishes on redis each time
// it writes a tree) and by the Application cache; nothing polls. What it cannot do (reach
// redis, write the annotation) is reported on the agent's ManagedClusterAddOn.
package treereport

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "treereport"

// FieldManager owns the annotation on the spoke Applications.
const FieldManager = "gitops-addon-agent"

// maxCachedTree bounds what the agent inflates of one cached value (a tree shard, a diff)
// from the spoke's redis.
const maxCachedTree = 64 << 20

// Cache is the part of Argo CD's redis the controller reads.
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Announcements(ctx context.Context, announced func(instance string), reconnected func()) error
}

// Options configure the controller.
type Options struct {
	// Namespace is Argo CD's namespace, where the pulled Applications live.
	Namespace string
	// Redis is Argo CD's redis on this cluster; RedisPassword, when set, reads its password
	// (the GitOps operator's <argocd>-redis-initial-password Secret) at connect time.
	Redis         argocdcache.Options
	RedisPassword func(ctx context.Context) (string, error)
	Report        *addonstatus.Report
}

// Controller adds the tree controller on the agent's Application cache (pkg/spoke/pulledapps).
func Controller(o Options) pulledapps.Controller {
	return func(mgr manager.Manager, apps cache.Cache) error {
		r := &Reconciler{Apps: apps, Client: mgr.GetClient(), Namespace: o.Namespace, Report: o.Report,
			Cache: &lazyCache{options: o.Redis, password: o.RedisPassword}}
		announced := make(chan event.TypedGenericEvent[*unstructured.Unstructured], 256)
		if err := mgr.Add(&listener{cache: r.Cache, apps: apps, namespace: o.Namespace, events: announced, report: r.failed}); err != nil {
			return fmt.Errorf("adding the tree announcement listener: %w", err)
		}
		return ctrl.NewControllerManagedBy(mgr).
			Named(ControllerName).
			WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
			WatchesRawSource(pulledapps.Source(apps)).
			WatchesRawSource(source.Channel(announced, &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{})).
			Complete(r)
	}
}

// Reconciler writes one Application's tree annotation when it differs.
type Reconciler struct {
	Apps      client.Reader
	Client    client.Client
	Cache     Cache
	Namespace string
	Report    *addonstatus.Report
}

// Reconcile ships one Application's tree.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := pulledapps.New()
	if err := r.Apps.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pulledapps.Pulled(app) || !app.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	tree, found, err := r.read(ctx, argocdcache.InstanceName(app.GetNamespace(), app.GetName(), r.Namespace))
	if err != nil {
		r.failed(err)
		return ctrl.Result{}, err
	}
	if !found {
		return ctrl.Result{}, nil // Argo CD has not drawn it yet; its announcement wakes us
	}
	diff, err := r.readDiff(ctx, argocdcache.InstanceName(app.GetNamespace(), app.GetName(), r.Namespace))
	if err != nil {
		r.failed(err)
		return ctrl.Result{}, err
	}
	_, value, err := apptree.Bound(tree, diff)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !sameTree(app.GetAnnotations()[apptree.Annotation], value) {
		if err := r.write(ctx, req.NamespacedName, value); err != nil {
			r.failed(err)
			return ctrl.Result{}, err
		}
	}
	r.succeeded()
	return ctrl.Result{}, nil
}

// sameTree says whether the annotation the cache holds (its digest: pulledapps.Slim) is
// this value.
func sameTree(cached, value string) bool {
	return cached == pulledapps.Digest(value) || cached == value
}

// read is the tree Argo CD keeps, its shards merged.
func (r *Reconciler) read(ctx context.Context, instance string) (apptree.Tree, bool, error) {
	var tree apptree.Tree
	found, err := r.readCached(ctx, argocdcache.TreeKey(instance), &tree)
	if !found || err != nil {
		return tree, found, err
	}
	for i := int64(1); i < tree.ShardsCount; i++ {
		var shard apptree.Tree
		if _, err := r.readCached(ctx, argocdcache.ShardKey(instance, i), &shard); err != nil {
			return tree, false, err
		}
		tree.Merge(shard)
	}
	return tree, true, nil
}

// readDiff is the diff of the managed resources Argo CD keeps, nil when it keeps none.
func (r *Reconciler) readDiff(ctx context.Context, instance string) ([]apptree.Diff, error) {
	var diff []apptree.Diff
	_, err := r.readCached(ctx, argocdcache.ManagedResourcesKey(instance), &diff)
	return diff, err
}

// readCached decodes one value of Argo CD's cache into into; false when it is not there.
func (r *Reconciler) readCached(ctx context.Context, key string, into any) (bool, error) {
	raw, found, err := r.Cache.Get(ctx, key)
	if !found || err != nil {
		return false, err
	}
	if err := argocdcache.Decode(raw, maxCachedTree, into); err != nil {
		return false, fmt.Errorf("reading %s: %w", key, err)
	}
	return true, nil
}

// write sets the tree annotation alone (pulledapps.Annotate).
func (r *Reconciler) write(ctx context.Context, key types.NamespacedName, value string) error {
	if err := pulledapps.Annotate(ctx, r.Client, key, apptree.Annotation, value, FieldManager); err != nil {
		return fmt.Errorf("writing the resource tree of Application %s (the agent needs patch on applications.argoproj.io "+
			"in its Argo CD namespace): %w", key, err)
	}
	return nil
}

func (r *Reconciler) failed(err error) {
	if r.Report == nil {
		return
	}
	r.Report.Set(metav1.Condition{Type: contract.ConditionApplicationTreeNotReported, Status: metav1.ConditionTrue, Reason: contract.ReasonTreeNotReported,
		Message: err.Error() + "; the hub's Argo CD shows these Applications without their resource tree until it is reported"})
}

func (r *Reconciler) succeeded() {
	if r.Report == nil {
		return
	}
	if _, set := r.Report.Condition(contract.ConditionApplicationTreeNotReported); set {
		r.Report.Withdraw(contract.ConditionApplicationTreeNotReported)
	}
}

// listener turns Argo CD's tree announcements into reconciles of the pulled Application
// they name, and, after every (re)subscription, reconciles them all: an announcement may
// have been missed while redis was away. Argo CD announces a tree before it writes the
// diff of the same comparison, so each announcement is followed by a second reconcile
// diffSettle later, which ships that diff (and writes nothing when nothing changed).
type listener struct {
	cache     Cache
	apps      client.Reader
	namespace string
	events    chan<- event.TypedGenericEvent[*unstructured.Unstructured]
	report    func(error)
}

// Start listens until ctx is done.
func (l *listener) Start(ctx context.Context) error {
	err := l.cache.Announcements(ctx, func(instance string) { l.announce(ctx, instance) }, func() { l.all(ctx) })
	if err != nil {
		l.report(err)
		ctrl.Log.WithName(ControllerName).Error(err, "not listening to Argo CD's tree announcements")
	}
	return nil // the agent's other features go on without it
}

// NeedLeaderElection: only the leader writes.
func (l *listener) NeedLeaderElection() bool { return true }

func (l *listener) announce(ctx context.Context, instance string) {
	key := types.NamespacedName{Namespace: l.namespace, Name: instance}
	if ns, name, ok := strings.Cut(instance, "_"); ok {
		key = types.NamespacedName{Namespace: ns, Name: name}
	}
	if key.Namespace != l.namespace {
		return // not an Application the hub pulls here
	}
	app := pulledapps.New()
	app.SetNamespace(key.Namespace)
	app.SetName(key.Name)
	l.send(ctx, app)
	time.AfterFunc(diffSettle, func() { l.send(ctx, app) })
}

// diffSettle is how long after a tree's announcement its diff is read again: Argo CD
// writes the diff right after the tree, in the same reconcile.
const diffSettle = 2 * time.Second

func (l *listener) all(ctx context.Context) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(pulledapps.GVK.GroupVersion().WithKind("ApplicationList"))
	if err := l.apps.List(ctx, list, client.InNamespace(l.namespace)); err != nil {
		return
	}
	for i := range list.Items {
		if pulledapps.Pulled(&list.Items[i]) {
			l.send(ctx, &list.Items[i])
		}
	}
}

func (l *listener) send(ctx context.Context, app *unstructured.Unstructured) {
	select {
	case l.events <- event.TypedGenericEvent[*unstructured.Unstructured]{Object: app}:
	case <-ctx.Done():
	}
}

// lazyCache connects to redis on first use, reading its password then; a refused password
// (the operator made a new one) is read again on the next use.
type lazyCache struct {
	options  argocdcache.Options
	password func(ctx context.Context) (string, error)

	mu     sync.Mutex
	client *argocdcache.Client
}

func (c *lazyCache) connect(ctx context.Context) (*argocdcache.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		return c.client, nil
	}
	o := c.options
	if c.password != nil {
		p, err := c.password(ctx)
		if err != nil {
			return nil, err
		}
		o.Password = p
	}
	c.client = argocdcache.New(o)
	return c.client, nil
}

func (c *lazyCache) forgetOnAuthError(err error) {
	if err == nil || !argocdcache.IsAuthError(err) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		_ = c.client.Close()
		c.client = nil
	}
}

func (c *lazyCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	client, err := c.connect(ctx)
	if err != nil {
		return nil, false, err
	}
	v, found, err := client.Get(ctx, key)
	c.forgetOnAuthError(err)
	if err != nil {
		return nil, false, fmt.Errorf("%w (Argo CD's redis at %s; a NetworkPolicy must let the agent in)", err, c.options.Address)
	}
	return v, found, nil
}

// Announcements subscribes with the current password. Until it can (the operator has not
// made redis or its password Secret yet, as on a spoke the agent reaches first), it tries
// again at a growing interval; when redis refuses the password, it reads it again. The
// reconciles report the same failure on the ManagedClusterAddOn meanwhile.
func (c *lazyCache) Announcements(ctx context.Context, announced func(string), reconnected func()) error {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		client, err := c.connect(ctx)
		if err == nil {
			if err = client.Announcements(ctx, announced, reconnected); err == nil {
				return nil
			}
			c.forgetOnAuthError(err)
		}
		backoff = min(max(2*backoff, time.Second), maxConnectBackoff)
		ctrl.Log.WithName(ControllerName).Info("not listening to Argo CD's tree announcements yet", "retryIn", backoff, "reason", err.Error())
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
	return nil
}

// maxConnectBackoff bounds the wait between attempts to subscribe.
const maxConnectBackoff = 30 * time.Second

// SecretPassword reads redis's password from a Secret of Argo CD's namespace when the
// agent connects (uncached: one read, by name).
func SecretPassword(reader client.Reader, namespace, name, key string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		s := &corev1.Secret{}
		if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
			return "", fmt.Errorf("reading the redis password from Secret %s/%s: %w", namespace, name, err)
		}
		p, ok := s.Data[key]
		if !ok {
			return "", fmt.Errorf("the Secret %s/%s has no key %q: the redis password is not where the agent was told to read it "+
				"(--argocd-redis-password-secret)", namespace, name, key)
		}
		return string(p), nil
	}
}
