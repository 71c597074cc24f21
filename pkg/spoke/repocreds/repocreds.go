// Package repocreds materialises, on a spoke, the repository credentials the hub's pulled
// Applications use. Each Application's ManifestWork carries a staged copy of every hub
// credential it uses (pkg/hub/repocreds), in the Argo CD namespace, which the spoke's
// Argo CD ignores. This controller keeps, for every target name the staged copies stand
// for, one Secret of that name that Argo CD reads, and owns only what it created: it never
// writes a Secret it did not create (it says so, in a condition and an Event), and deletes
// its own once no staged copy asks for it, which happens when the last Application that
// used it leaves the cluster (OCM's work agent removes the staged copy with its work).
package repocreds

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "repository-credentials"

// foreignRetry is how often a name held by a Secret we did not create is tried again:
// its owner may delete or rename it, which this controller's cache (our Secrets only)
// does not see.
const foreignRetry = time.Minute

// everything is the one request: every reconcile looks at all the staged copies, since a
// target's content is the union of several.
var everything = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all"}}

// Options configures the controller.
type Options struct {
	// Namespace is the Argo CD namespace: where staged copies arrive and credentials go.
	Namespace string
	// Report receives the RepositoryCredentials condition.
	Report *addonstatus.Report
}

// Reconciler materialises the staged copies.
type Reconciler struct {
	// Client writes Secrets in the Argo CD namespace.
	Client client.Client
	// Cache holds the Secrets of this feature only (staged and owned).
	Cache client.Reader
	// APIReader reads a Secret uncached: one that holds a name we need and is not ours.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Options

	mu sync.Mutex
	// foreign are the names last found held by a Secret we did not create (each one's
	// Event is recorded when it is first found).
	foreign map[string]bool
}

// CacheByObject is what the controller reads: the Secrets of the Argo CD namespace that
// carry the feature's label, staged or owned. Nothing else of that namespace is cached.
func (o Options) CacheByObject() map[client.Object]cache.ByObject {
	ours, _ := labels.NewRequirement(contract.LabelRepositoryCredential, selection.Exists, nil)
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}, Label: labels.NewSelector().Add(*ours)},
	}
}

// SetupWithManager adds a cache of its own (the manager's cache may be narrowed to other
// Secrets by other features) and the controller.
func SetupWithManager(mgr manager.Manager, o Options) error {
	c, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), ByObject: o.CacheByObject(),
		DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return fmt.Errorf("creating the repository credentials cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding the repository credentials cache: %w", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Cache: c, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("gitops-addon-agent"), Options: o}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(c, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(context.Context, *corev1.Secret) []reconcile.Request { return []reconcile.Request{everything} }))).
		Complete(r)
}

// Reconcile brings the owned Secrets to what the staged copies ask for.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	list := &corev1.SecretList{}
	if err := r.Cache.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the repository credentials of %s: %w", r.Namespace, err)
	}
	desired, owned := plan(list.Items)
	var foreign, failed []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(desired)) {
		isForeign, err := r.ensure(ctx, desired[name], owned[name])
		switch {
		case err != nil:
			failed = append(failed, name)
			errs = append(errs, err)
		case isForeign:
			foreign = append(foreign, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(owned)) {
		if _, wanted := desired[name]; !wanted {
			if err := r.remove(ctx, owned[name]); err != nil {
				failed = append(failed, name)
				errs = append(errs, err)
			}
		}
	}
	r.noteForeign(foreign)
	r.report(len(desired)-len(foreign)-len(failed), foreign, failed, errs)
	if len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("repository credentials: %w", errs[0])
	}
	if len(foreign) > 0 {
		return ctrl.Result{RequeueAfter: foreignRetry}, nil
	}
	return ctrl.Result{}, nil
}

// plan groups the feature's Secrets: per target name, the staged copy that wins (the one
// made from the newest hub Secret), and the Secrets this controller created.
func plan(secrets []corev1.Secret) (desired, owned map[string]*corev1.Secret) {
	desired, owned = map[string]*corev1.Secret{}, map[string]*corev1.Secret{}
	for i := range secrets {
		s := &secrets[i]
		switch s.Labels[contract.LabelRepositoryCredential] {
		case contract.RepositoryCredentialOwned:
			owned[s.Name] = s
		case contract.RepositoryCredentialStaged:
			target := s.Annotations[contract.AnnotationCredentialTarget]
			if target == "" || !s.DeletionTimestamp.IsZero() {
				continue
			}
			if cur, ok := desired[target]; !ok || newer(s, cur) {
				desired[target] = s
			}
		}
	}
	return desired, owned
}

// newer says whether staged copy a was made from a newer hub Secret than b. Two
// ManifestWorks may be applied a moment apart after the hub Secret changed; the copy of
// the later resourceVersion wins (compared as numbers, which etcd's are; as strings
// otherwise), then the name, so that the choice is stable.
func newer(a, b *corev1.Secret) bool {
	va, vb := a.Annotations[contract.AnnotationCredentialVersion], b.Annotations[contract.AnnotationCredentialVersion]
	na, errA := strconv.ParseUint(va, 10, 64)
	nb, errB := strconv.ParseUint(vb, 10, 64)
	switch {
	case errA == nil && errB == nil && na != nb:
		return na > nb
	case (errA != nil || errB != nil) && va != vb:
		return va > vb
	}
	return a.Name < b.Name
}

// materialised is the Secret Argo CD reads for a staged copy.
func (r *Reconciler) materialised(staged *corev1.Secret) *corev1.Secret {
	target := staged.Annotations[contract.AnnotationCredentialTarget]
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: target, Namespace: r.Namespace,
			Labels: map[string]string{
				contract.LabelRepositoryCredential: contract.RepositoryCredentialOwned,
				contract.LabelManagedBy:            contract.ManagedByValue,
				contract.LabelArgoCDSecretType:     staged.Annotations[contract.AnnotationCredentialType],
			},
		},
		Type: staged.Type,
		Data: maps.Clone(staged.Data),
	}
}

// ensure makes the target of a staged copy hold its data: created when absent, updated
// when ours and different. A Secret of that name we did not create is left alone: it
// returns foreign.
func (r *Reconciler) ensure(ctx context.Context, staged, owned *corev1.Secret) (foreign bool, err error) {
	want := r.materialised(staged)
	if owned == nil {
		return r.create(ctx, want)
	}
	if sameContent(owned, want) {
		return false, nil
	}
	updated := owned.DeepCopy()
	updated.Type, updated.Data = want.Type, want.Data
	maps.Copy(updated.Labels, want.Labels)
	// The cached resourceVersion is the precondition: a Secret changed since is retried
	// from the cache, never overwritten blind.
	if err := r.Client.Update(ctx, updated); err != nil {
		return false, fmt.Errorf("updating Secret %s/%s: %w", r.Namespace, want.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("repository credential updated", "secret", want.Name)
	return false, nil
}

// create creates the target; AlreadyExists means a Secret of that name exists that the
// cache (our Secrets only) does not hold: someone else's, unless the cache is behind.
func (r *Reconciler) create(ctx context.Context, want *corev1.Secret) (foreign bool, err error) {
	err = r.Client.Create(ctx, want)
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("repository credential created", "secret", want.Name)
		return false, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("creating Secret %s/%s: %w", r.Namespace, want.Name, err)
	}
	existing := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), existing); err != nil {
		return false, fmt.Errorf("reading Secret %s/%s, which exists: %w", r.Namespace, want.Name, err)
	}
	if existing.Labels[contract.LabelRepositoryCredential] == contract.RepositoryCredentialOwned {
		// Ours, created a moment ago: the cache's event brings it back here.
		return false, nil
	}
	return true, nil
}

// remove deletes one of our Secrets no staged copy asks for any more, only as the cache
// saw it (uid and resourceVersion preconditions): never a Secret recreated by someone
// else under the name since.
func (r *Reconciler) remove(ctx context.Context, owned *corev1.Secret) error {
	err := r.Client.Delete(ctx, owned, client.Preconditions{UID: &owned.UID, ResourceVersion: &owned.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s/%s, which no Application here uses any more: %w", owned.Namespace, owned.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("repository credential removed: no Application here uses it any more", "secret", owned.Name)
	return nil
}

func sameContent(have, want *corev1.Secret) bool {
	if have.Type != want.Type || len(have.Data) != len(want.Data) {
		return false
	}
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Data {
		if !bytes.Equal(have.Data[k], v) {
			return false
		}
	}
	return true
}

// noteForeign records a Warning Event for each name newly found held by a Secret we did
// not create, regarding that Secret.
func (r *Reconciler) noteForeign(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := map[string]bool{}
	for _, name := range names {
		now[name] = true
		if r.foreign[name] || r.Recorder == nil {
			continue
		}
		regarding := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}}
		regarding.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		r.Recorder.Eventf(regarding, nil, corev1.EventTypeWarning, contract.ReasonForeignSecret, "Materialise",
			"Secret %s/%s was not created by gitops-addon: the hub's repository credential of that name is not written over it; "+
				"the Applications pulled here that need it use this Secret as it is (delete or rename it to let gitops-addon keep the hub's)",
			r.Namespace, name)
	}
	r.foreign = now
}

// report sets the RepositoryCredentials condition.
func (r *Reconciler) report(kept int, foreign, failed []string, errs []error) {
	if r.Report == nil {
		return
	}
	c := metav1.Condition{Type: contract.ConditionRepositoryCredentials, Status: metav1.ConditionTrue, Reason: contract.ReasonCredentialsMaterialised,
		Message: fmt.Sprintf("%d repository credential(s) from the hub kept in %s for the Applications pulled here", kept, r.Namespace)}
	switch {
	case len(foreign) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, contract.ReasonForeignSecret
		c.Message = fmt.Sprintf("Secret(s) %s in %s were not created by gitops-addon and are not overwritten with the hub's repository "+
			"credentials of the same name; delete or rename them to let gitops-addon keep the hub's", strings.Join(foreign, ", "), r.Namespace)
	case len(failed) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, contract.ReasonWriteFailed
		c.Message = fmt.Sprintf("repository credential(s) %s: %v", strings.Join(failed, ", "), errs[0])
	}
	r.Report.Set(c)
}
