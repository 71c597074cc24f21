package appsetaccess

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func gitOpsCluster(namespace, name, argoNamespace string) *appsv1beta1.GitOpsCluster {
	return fixtures.GitOpsCluster(namespace, name, fixtures.ArgoNamespace(argoNamespace),
		fixtures.GitOpsClusterMeta(fixtures.UID("uid-"+namespace+"-"+name)))
}

func adopting(gc *appsv1beta1.GitOpsCluster) *appsv1beta1.GitOpsCluster {
	fixtures.Annotations(map[string]string{appsv1beta1.AnnotationAdopt: "true"})(gc)
	return gc
}

func deleting(gc *appsv1beta1.GitOpsCluster) *appsv1beta1.GitOpsCluster {
	fixtures.Deleting(appsv1beta1.Finalizer)(gc)
	return gc
}

// foreign is obj as someone else (Red Hat ACM) created it: with their labels.
func foreign(obj client.Object, labels map[string]string) client.Object {
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetLabels(labels)
	return obj
}

// edited is one of our shared objects changed by hand.
func edited(o sharedObject) client.Object {
	obj := o.desired.DeepCopyObject().(client.Object)
	switch x := obj.(type) {
	case *corev1.ConfigMap:
		x.Data = map[string]string{"matchKey": "somethingElse"}
	case *rbacv1.Role:
		x.Rules = nil
	case *rbacv1.RoleBinding:
		x.Subjects = nil
	}
	return obj
}

// recordedEvent is an Event with the object it is about.
type recordedEvent struct{ regarding, reason, note string }

type recorder struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (r *recorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	obj := regarding.(client.Object)
	r.events = append(r.events, recordedEvent{fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName()), reason, fmt.Sprintf(note, args...)})
}

// fixture is a Reconciler over a fake apiserver: its Client sees, as the manager's
// label-filtered cache does, only objects with our managed-by label; APIReader sees all.
type fixture struct {
	r      *Reconciler
	c      client.Client // the apiserver, unfiltered
	writes *[]string
	events *recorder
}

func newFixture(t *testing.T, argoNamespaces []string, objs ...client.Object) *fixture {
	t.Helper()
	apiserver := fixtures.FakeHub(t, objs...).
		WithIndex(&appsv1beta1.GitOpsCluster{}, indexArgoNamespace, argoNamespaceOf).Build()
	var mu sync.Mutex
	writes := new([]string)
	write := func(verb string, obj client.Object) {
		mu.Lock()
		defer mu.Unlock()
		*writes = append(*writes, fmt.Sprintf("%s %s", verb, keyOf(obj)))
	}
	// The cache holds ConfigMaps of the argoNamespaces only and fails for others' namespaces.
	uncached := func(obj runtime.Object, namespace string) error {
		switch obj.(type) {
		case *corev1.ConfigMap, *corev1.ConfigMapList:
			if len(argoNamespaces) > 0 && !slices.Contains(argoNamespaces, namespace) {
				return fmt.Errorf("unable to get: %s because of unknown namespace for the cache", namespace)
			}
		}
		return nil
	}
	cached := interceptor.NewClient(apiserver, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := uncached(list, (&client.ListOptions{}).ApplyOptions(opts).Namespace); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := uncached(obj, key.Namespace); err != nil {
				return err
			}
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if isSharedKind(obj) && obj.GetLabels()[contract.LabelManagedBy] != contract.ManagedByValue {
				return apierrors.NewNotFound(schema.GroupResource{Resource: keyOf(obj).kind}, key.Name)
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			write("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			write("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			write("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			write("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
	})
	events := &recorder{}
	return &fixture{
		r:      &Reconciler{Client: cached, APIReader: apiserver, Recorder: events, ArgoNamespaces: argoNamespaces},
		c:      apiserver,
		writes: writes,
		events: events,
	}
}

func isSharedKind(obj client.Object) bool {
	switch obj.(type) {
	case *corev1.ConfigMap, *rbacv1.Role, *rbacv1.RoleBinding:
		return true
	}
	return false
}

func (f *fixture) reconcile(t *testing.T, namespaces ...string) error {
	t.Helper()
	var errs []error
	for _, ns := range namespaces {
		_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: ns}})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// read reads from the apiserver the object of like's kind, namespace and name; nil when
// it is not there.
func (f *fixture) read(t *testing.T, like client.Object) client.Object {
	t.Helper()
	obj := reflect.New(reflect.TypeOf(like).Elem()).Interface().(client.Object)
	err := f.c.Get(context.Background(), client.ObjectKeyFromObject(like), obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return obj
}

// content is what an object says to ApplicationSets, and its labels.
func content(obj client.Object) []any {
	switch x := obj.(type) {
	case *corev1.ConfigMap:
		return []any{x.Labels, x.Data}
	case *rbacv1.Role:
		return []any{x.Labels, x.Rules}
	case *rbacv1.RoleBinding:
		return []any{x.Labels, x.RoleRef, x.Subjects}
	}
	return nil
}

// TestWantedIn: a namespace's desired set is, of the objects each live GitOpsCluster
// needs, those in that namespace.
func TestWantedIn(t *testing.T) {
	team := gitOpsCluster("team", "a", "argocd")
	teamSecond := gitOpsCluster("team", "b", "argocd")
	teamOwnArgo := gitOpsCluster("team", "c", "")
	other := gitOpsCluster("other", "d", "argocd")
	tests := []struct {
		name    string
		ns      string
		gcs     []*appsv1beta1.GitOpsCluster
		allowed []string
		want    map[string][]string // object -> the GitOpsClusters that need it
	}{
		{name: "no GitOpsCluster: nothing", ns: "argocd", want: map[string][]string{}},
		{name: "the Argo CD namespace: the ConfigMap, for every GitOpsCluster using it", ns: "argocd", gcs: []*appsv1beta1.GitOpsCluster{other, team},
			want: map[string][]string{"ConfigMap argocd/acm-placement": {"other/d", "team/a"}}},
		{name: "the GitOpsClusters' namespace: the Role, and a RoleBinding per Argo CD namespace", ns: "team",
			gcs: []*appsv1beta1.GitOpsCluster{team, teamSecond, teamOwnArgo},
			want: map[string][]string{
				"ConfigMap team/acm-placement":                           {"team/c"},
				"Role team/" + PlacementReaderName:                       {"team/a", "team/b", "team/c"},
				"RoleBinding team/" + PlacementReaderName + "-argocd":    {"team/a", "team/b"},
				"RoleBinding team/" + placementReaderBindingName("team"): {"team/c"},
			}},
		{name: "a GitOpsCluster being deleted needs nothing", ns: "team", gcs: []*appsv1beta1.GitOpsCluster{deleting(gitOpsCluster("team", "a", "argocd"))},
			want: map[string][]string{}},
		{name: "an argoNamespace the manager may not work in: nothing, in either namespace", ns: "team", gcs: []*appsv1beta1.GitOpsCluster{team},
			allowed: []string{"openshift-gitops"}, want: map[string][]string{}},
		{name: "an allowed argoNamespace", ns: "argocd", gcs: []*appsv1beta1.GitOpsCluster{team}, allowed: []string{"argocd"},
			want: map[string][]string{"ConfigMap argocd/acm-placement": {"team/a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{ArgoNamespaces: tt.allowed}
			got := map[string][]string{}
			for key, w := range wantedIn(tt.ns, tt.gcs, r.allowed) {
				assert.Equal(t, key, w.key)
				for _, gc := range w.users {
					got[key.String()] = append(got[key.String()], gc.Namespace+"/"+gc.Name)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestReconcile: the objects a namespace's GitOpsClusters need are created, ours are
// brought back when edited, someone else's are left unchanged (reported when they
// differ) unless a GitOpsCluster that needs them adopts, and ours that nobody needs any
// more are removed; a second reconcile of the result writes nothing.
func TestReconcile(t *testing.T) {
	acm := map[string]string{"app.kubernetes.io/managed-by": "acm"}
	team := gitOpsCluster("team", "a", "argocd")
	configMap, role, binding := placementConfigMap("argocd"), placementReaderRole("team"), placementReaderBinding("team", "argocd")
	tests := []struct {
		name       string
		allowed    []string
		objs       []client.Object
		namespaces []string
		wantWrites []string
		// want are the objects that must be as ApplicationSets need them afterwards, gone
		// those that must not exist, kept those that must be exactly as they were.
		want, gone []sharedObject
		kept       []client.Object
		problems   map[string][]string // GitOpsCluster -> the problems Problems returns
		events     []recordedEvent
	}{
		{
			name: "created where missing", objs: []client.Object{team}, namespaces: []string{"argocd", "team"},
			wantWrites: []string{"create " + configMap.key.String(), "create " + role.key.String(), "create " + binding.key.String()},
			want:       []sharedObject{configMap, role, binding},
		},
		{
			name: "ours edited by hand: brought back", objs: []client.Object{team, edited(configMap), edited(role), edited(binding)},
			namespaces: []string{"argocd", "team"},
			wantWrites: []string{"update " + configMap.key.String(), "update " + role.key.String(), "update " + binding.key.String()},
			want:       []sharedObject{configMap, role, binding},
		},
		{
			name: "someone else's, as needed: left alone, nothing to report", objs: []client.Object{team, foreign(configMap.desired, acm)},
			namespaces: []string{"argocd"}, wantWrites: []string{"create " + configMap.key.String()},
			kept: []client.Object{foreign(configMap.desired, acm)},
		},
		{
			name: "someone else's, different: left unchanged, reported with the fix to every GitOpsCluster that needs it",
			objs: []client.Object{team, gitOpsCluster("other", "b", "argocd"), foreign(edited(configMap), acm)}, namespaces: []string{"argocd"},
			wantWrites: []string{"create " + configMap.key.String()}, kept: []client.Object{foreign(edited(configMap), acm)},
			problems: map[string][]string{
				"team/a": {"ConfigMap argocd/acm-placement exists, was not created by gitops-addon and differs from what ApplicationSets need; it is left " +
					"unchanged. Fix: annotate GitOpsCluster team/a with " + appsv1beta1.AnnotationAdopt + "=true to adopt it, or delete it and gitops-addon recreates it."},
				"other/b": {"ConfigMap argocd/acm-placement exists, was not created by gitops-addon and differs from what ApplicationSets need; it is left " +
					"unchanged. Fix: annotate GitOpsCluster other/b with " + appsv1beta1.AnnotationAdopt + "=true to adopt it, or delete it and gitops-addon recreates it."},
			},
		},
		{
			name:       "someone else's, different, a GitOpsCluster that needs it adopts: taken over in place, other tools' labels kept",
			objs:       []client.Object{gitOpsCluster("other", "b", "argocd"), adopting(gitOpsCluster("team", "a", "argocd")), foreign(edited(configMap), acm)},
			namespaces: []string{"argocd"}, wantWrites: []string{"create " + configMap.key.String(), "update " + configMap.key.String()},
			want:   []sharedObject{configMap},
			events: []recordedEvent{{"*v1beta1.GitOpsCluster team/a", "Adopted", "Adopted ConfigMap argocd/acm-placement (it was not created by gitops-addon; " + appsv1beta1.AnnotationAdopt + " is \"true\")"}},
		},
		{
			name: "the last GitOpsCluster is being deleted: ours removed, an Event on it", objs: []client.Object{deleting(gitOpsCluster("team", "a", "argocd")),
				configMap.desired, role.desired, binding.desired},
			namespaces: []string{"argocd", "team"},
			wantWrites: []string{"delete " + configMap.key.String(), "delete " + role.key.String(), "delete " + binding.key.String()},
			gone:       []sharedObject{configMap, role, binding},
			events: []recordedEvent{
				{"*v1.ConfigMap argocd/acm-placement", "SharedObjectRemoved", "Removed ConfigMap argocd/acm-placement, which no GitOpsCluster needs any more"},
				{"*v1.Role team/" + PlacementReaderName, "SharedObjectRemoved", "Removed Role team/" + PlacementReaderName + ", which no GitOpsCluster needs any more"},
				{"*v1.RoleBinding team/" + binding.key.name, "SharedObjectRemoved", "Removed RoleBinding team/" + binding.key.name + ", which no GitOpsCluster needs any more"},
			},
		},
		{
			name: "the last GitOpsCluster is gone; someone else's and a GitOpsCluster's own objects of these names stay",
			objs: []client.Object{configMap.desired, foreign(role.desired, acm), foreign(binding.desired, ownership.Labels(team))}, namespaces: []string{"argocd", "team"},
			wantWrites: []string{"delete " + configMap.key.String()}, gone: []sharedObject{configMap},
			kept:   []client.Object{foreign(role.desired, acm), foreign(binding.desired, ownership.Labels(team))},
			events: []recordedEvent{{"*v1.ConfigMap argocd/acm-placement", "SharedObjectRemoved", "Removed ConfigMap argocd/acm-placement, which no GitOpsCluster needs any more"}},
		},
		{
			name:       "argoNamespace changed: the old namespace's ConfigMap and RoleBinding removed, the Role kept",
			objs:       []client.Object{gitOpsCluster("team", "a", "argocd-2"), configMap.desired, role.desired, binding.desired},
			namespaces: []string{"argocd", "argocd-2", "team"},
			wantWrites: []string{"delete " + configMap.key.String(), "create ConfigMap argocd-2/acm-placement",
				"create RoleBinding team/" + placementReaderBindingName("argocd-2"), "delete " + binding.key.String()},
			want: []sharedObject{placementConfigMap("argocd-2"), role, placementReaderBinding("team", "argocd-2")}, gone: []sharedObject{configMap, binding},
			events: []recordedEvent{
				{"*v1.ConfigMap argocd/acm-placement", "SharedObjectRemoved", "Removed ConfigMap argocd/acm-placement, which no GitOpsCluster needs any more"},
				{"*v1.RoleBinding team/" + binding.key.name, "SharedObjectRemoved", "Removed RoleBinding team/" + binding.key.name + ", which no GitOpsCluster needs any more"},
			},
		},
		{
			name: "an argoNamespace the manager may not work in: nothing written, ConfigMaps there not even listed", allowed: []string{"openshift-gitops"},
			objs: []client.Object{team}, namespaces: []string{"argocd", "team"}, gone: []sharedObject{configMap, role, binding},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.allowed, tt.objs...)
			require.NoError(t, f.reconcile(t, tt.namespaces...))
			assert.Equal(t, tt.wantWrites, *f.writes)
			for _, o := range tt.want {
				got := f.read(t, o.desired)
				require.NotNil(t, got, "%s", o.key)
				assert.False(t, o.update(got, o.desired), "%s is as ApplicationSets need it", o.key)
				assert.Equal(t, contract.ManagedByValue, got.GetLabels()[contract.LabelManagedBy], "%s", o.key)
			}
			for _, o := range tt.gone {
				assert.Nil(t, f.read(t, o.desired), "%s", o.key)
			}
			for _, obj := range tt.kept {
				got := f.read(t, obj)
				require.NotNil(t, got, "%s", keyOf(obj))
				assert.Equal(t, content(obj), content(got), "%s unchanged", keyOf(obj))
			}
			assert.Equal(t, tt.events, f.events.events)
			for _, obj := range tt.objs {
				if gc, ok := obj.(*appsv1beta1.GitOpsCluster); ok && gc.DeletionTimestamp.IsZero() {
					problems, failed := f.r.Problems(gc)
					require.NoError(t, failed)
					assert.Equal(t, tt.problems[gc.Namespace+"/"+gc.Name], problems, "%s/%s", gc.Namespace, gc.Name)
				}
			}

			*f.writes = nil
			require.NoError(t, f.reconcile(t, tt.namespaces...))
			assert.Empty(t, *f.writes, "a second reconcile of the steady state writes nothing")
		})
	}
}

// TestProblemsWakeTheGitOpsClustersConcerned: a GitOpsCluster is woken when a problem of
// an object it needs appears or goes, never when nothing changed.
func TestProblemsWakeTheGitOpsClustersConcerned(t *testing.T) {
	acm := map[string]string{"app.kubernetes.io/managed-by": "acm"}
	team, unrelated := gitOpsCluster("team", "a", "argocd"), gitOpsCluster("elsewhere", "b", "argocd-2")
	different := foreign(edited(placementConfigMap("argocd")), acm)
	f := newFixture(t, nil, team, unrelated, different)
	changed := f.r.Changed()
	woken := func() []string {
		var out []string
		for {
			select {
			case e := <-changed:
				out = append(out, e.Object.GetNamespace()+"/"+e.Object.GetName())
			default:
				return out
			}
		}
	}

	require.NoError(t, f.reconcile(t, "argocd", "argocd-2"))
	assert.Equal(t, []string{"team/a"}, woken(), "the problem appeared")
	require.NoError(t, f.reconcile(t, "argocd", "argocd-2"))
	assert.Empty(t, woken(), "nothing changed")

	require.NoError(t, f.c.Delete(context.Background(), different))
	require.NoError(t, f.reconcile(t, "argocd"))
	assert.Equal(t, []string{"team/a"}, woken(), "the problem went")
	problems, failed := f.r.Problems(team)
	assert.Empty(t, problems)
	require.NoError(t, failed)
	created := f.read(t, placementConfigMap("argocd").desired)
	require.NotNil(t, created, "ours created once the name is free")
	assert.Equal(t, content(placementConfigMap("argocd").desired), content(created))
}

// TestFailuresReachTheGitOpsClusters: a write that fails is returned (retried with
// backoff) and told to the GitOpsClusters that need the object, with the API error; a
// conflict (a stale read, retried at once) is not.
func TestFailuresReachTheGitOpsClusters(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantFailed string
	}{
		{name: "forbidden", err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "acm-placement", errors.New("no")),
			wantFailed: `creating ConfigMap argocd/acm-placement: configmaps "acm-placement" is forbidden: no`},
		{name: "conflict", err: apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "acm-placement", errors.New("stale"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			team := gitOpsCluster("team", "a", "argocd")
			f := newFixture(t, nil, team)
			failing := f.r.Client
			f.r.Client = interceptor.NewClient(failing.(client.WithWatch), interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*corev1.ConfigMap); ok {
						return tt.err
					}
					return c.Create(ctx, obj, opts...)
				},
			})
			changed := f.r.Changed()
			err := f.reconcile(t, "argocd")
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.err, "returned: retried with backoff")
			_, failed := f.r.Problems(team)
			if tt.wantFailed == "" {
				require.NoError(t, failed)
				assert.Empty(t, changed)
				return
			}
			require.Error(t, failed)
			assert.Equal(t, tt.wantFailed, failed.Error())
			assert.True(t, apierrors.IsForbidden(failed), "the API error stays readable, for the fix on the status")
			assert.Len(t, changed, 1, "the GitOpsCluster is woken to say it")

			f.r.Client = failing
			require.NoError(t, f.reconcile(t, "argocd"))
			_, failed = f.r.Problems(team)
			require.NoError(t, failed, "gone once the retry succeeds")
		})
	}
}

// TestGitOpsClusterEventsWakeItsNamespaces: a GitOpsCluster's events wake its own
// namespace and its Argo CD's; an update also the ones it had before, so that what it
// left behind is removed.
func TestGitOpsClusterEventsWakeItsNamespaces(t *testing.T) {
	before, after := gitOpsCluster("team", "a", "argocd"), gitOpsCluster("team", "a", "argocd-2")
	tests := []struct {
		name string
		send func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request])
		want []string
	}{
		{name: "created", want: []string{"argocd", "team"}, send: func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: before}, q)
		}},
		{name: "its own namespace is its Argo CD's: once", want: []string{"team"},
			send: func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				h.Create(context.Background(), event.CreateEvent{Object: gitOpsCluster("team", "a", "")}, q)
			}},
		{name: "argoNamespace changed: the old one too", want: []string{"argocd", "argocd-2", "team"},
			send: func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: before, ObjectNew: after}, q)
			}},
		{name: "deleted", want: []string{"argocd-2", "team"}, send: func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: after}, q)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tt.send(handler.EnqueueRequestsFromMapFunc(namespacesOf), q)
			var got []string
			for q.Len() > 0 {
				req, _ := q.Get()
				got = append(got, req.Name)
				q.Done(req)
			}
			slices.Sort(got)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestRemovalIsToldToTheGitOpsClustersThatNeededIt: once the last GitOpsCluster that
// needed an object is being deleted, and again once it is gone, the object goes and the
// Event is on that GitOpsCluster.
func TestRemovalIsToldToTheGitOpsClustersThatNeededIt(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(map[bool]string{false: "being deleted", true: "gone"}[gone], func(t *testing.T) {
			ctx := context.Background()
			gc := gitOpsCluster("team", "a", "argocd")
			gc.Finalizers = []string{"example.com/hold"}
			f := newFixture(t, nil, gc)
			require.NoError(t, f.reconcile(t, "argocd", "team"))
			require.NoError(t, f.c.Delete(ctx, gc))
			if gone {
				require.NoError(t, f.c.Get(ctx, client.ObjectKeyFromObject(gc), gc))
				gc.Finalizers = nil
				require.NoError(t, f.c.Update(ctx, gc))
			}
			require.NoError(t, f.reconcile(t, "argocd", "team"))
			for _, o := range needs(gc) {
				assert.Nil(t, f.read(t, o.desired), "%s", o.key)
			}
			var regarding []string
			for _, e := range f.events.events {
				require.Equal(t, "SharedObjectRemoved", e.reason)
				regarding = append(regarding, e.regarding)
			}
			assert.Equal(t, slices.Repeat([]string{"*v1beta1.GitOpsCluster team/a"}, 3), regarding)
		})
	}
}

// TestALaggingCacheIsNotMistakenForSomeoneElses: our object that the cache does not show
// yet is found ours on the apiserver, and neither reported nor written again.
func TestALaggingCacheIsNotMistakenForSomeoneElses(t *testing.T) {
	team := gitOpsCluster("team", "a", "argocd")
	configMap := placementConfigMap("argocd")
	f := newFixture(t, nil, team, configMap.desired)
	lagging := f.r.Client
	f.r.Client = interceptor.NewClient(lagging.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.ConfigMap); ok {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	require.NoError(t, f.reconcile(t, "argocd"))
	assert.Equal(t, []string{"create " + configMap.key.String()}, *f.writes, "one refused create, then read: no update, no adoption")
	problems, failed := f.r.Problems(team)
	assert.Empty(t, problems)
	require.NoError(t, failed)
}

// TestAFailedRemovalIsAWarningEvent: no GitOpsCluster's status names an object nobody
// needs any more, so a removal that fails is a Warning Event, on the GitOpsCluster that
// needed it, and retried.
func TestAFailedRemovalIsAWarningEvent(t *testing.T) {
	ctx := context.Background()
	gc := gitOpsCluster("team", "a", "argocd")
	gc.Finalizers = []string{"example.com/hold"}
	f := newFixture(t, nil, gc)
	require.NoError(t, f.reconcile(t, "argocd"))
	require.NoError(t, f.c.Delete(ctx, gc))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "acm-placement", errors.New("no"))
	f.r.Client = interceptor.NewClient(f.r.Client.(client.WithWatch), interceptor.Funcs{
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return forbidden },
	})

	notRemoved := recordedEvent{"*v1beta1.GitOpsCluster team/a", "SharedObjectNotRemoved", "Could not remove ConfigMap argocd/acm-placement, which no " +
		`GitOpsCluster needs any more: configmaps "acm-placement" is forbidden: no. Retrying with backoff.`}
	for range 2 {
		assert.ErrorIs(t, f.reconcile(t, "argocd"), forbidden, "returned: retried with backoff")
	}
	assert.Equal(t, []recordedEvent{notRemoved, notRemoved}, f.events.events, "the retry still knows whom it concerns")
	assert.NotNil(t, f.read(t, placementConfigMap("argocd").desired))
}
