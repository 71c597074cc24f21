package argocdagent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func argoCDAgentGitOpsCluster(namespace, name, argoNamespace, serverAddress string) *appsv1beta1.GitOpsCluster {
	return fixtures.GitOpsCluster(namespace, name, fixtures.ArgoNamespace(argoNamespace), func(gc *appsv1beta1.GitOpsCluster) {
		gc.Spec.GitOpsAddon = &appsv1beta1.GitOpsAddonSpec{Enabled: ptr.To(true)}
	}, fixtures.ArgoCDAgent(true, serverAddress))
}

// writes counts the writes a client makes.
type writes struct{ n int }

func newTrustReconciler(t *testing.T, w *writes, objs ...client.Object) (*TrustReconciler, client.Client, *events.FakeRecorder) {
	count := func() { w.n++ }
	c := fixtures.FakeHub(t, objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	recorder := events.NewFakeRecorder(50)
	return &TrustReconciler{Client: c, Keeper: &Keeper{Client: c, APIReader: c}, Recorder: recorder}, c, recorder
}

func keep(t *testing.T, r *TrustReconciler, ns string) (ctrl.Result, error) {
	t.Helper()
	return r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: ns}})
}

// TestOneTrustPerNamespaceForEveryGitOpsClusterSharingIt: the GitOpsClusters of two
// namespaces sharing one Argo CD namespace get one principal certificate naming every
// serverAddress, issued in one pass, with an Event on each; a second pass writes nothing.
func TestOneTrustPerNamespaceForEveryGitOpsClusterSharingIt(t *testing.T) {
	w := &writes{}
	a := argoCDAgentGitOpsCluster("team-a", "fleet", "argocd", "principal.example.com")
	b := argoCDAgentGitOpsCluster("team-b", "fleet", "argocd", "agents.example.com")
	r, c, recorder := newTrustReconciler(t, w, a, b)

	result, err := keep(t, r, "argocd")
	require.NoError(t, err)
	assert.Positive(t, result.RequeueAfter, "woken again when a certificate is due")
	for _, name := range []string{pki.CASecret, pki.PrincipalSecret, pki.ResourceProxySecret, pki.JWTSecret} {
		require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "argocd", Name: name}, &corev1.Secret{}), name)
	}
	assert.Subset(t, certOf(t, c, "argocd", pki.PrincipalSecret).DNSNames, []string{"principal.example.com", "agents.example.com", "argocd-agent-principal.argocd.svc"})
	assert.Len(t, recorder.Events, 8, "an Event per Secret issued on each of the two GitOpsClusters")

	before := w.n
	_, err = keep(t, r, "argocd")
	require.NoError(t, err)
	assert.Equal(t, before, w.n, "a steady state writes nothing")
}

// TestTrustLeavesOtherNamespacesAlone: no Argo CD Agent mode GitOpsCluster (or one not in
// that mode, or being deleted) points at the namespace, or it is outside the manager's
// namespaces: nothing is written there.
func TestTrustLeavesOtherNamespacesAlone(t *testing.T) {
	off := argoCDAgentGitOpsCluster("team-a", "off", "argocd", "p.example.com")
	off.Spec.GitOpsAddon.ArgoCDAgent.Enabled = ptr.To(false)
	deleting := argoCDAgentGitOpsCluster("team-a", "deleting", "argocd", "p.example.com")
	deleting.DeletionTimestamp, deleting.Finalizers = ptr.To(metav1.Now()), []string{"test"}
	elsewhere := argoCDAgentGitOpsCluster("team-a", "elsewhere", "not-allowed", "p.example.com")
	for name, tc := range map[string]struct {
		objs []client.Object
		ns   string
	}{
		"no GitOpsCluster":             {ns: "argocd"},
		"not in Argo CD Agent mode":    {objs: []client.Object{off}, ns: "argocd"},
		"being deleted":                {objs: []client.Object{deleting}, ns: "argocd"},
		"outside the manager's grants": {objs: []client.Object{elsewhere}, ns: "not-allowed"},
	} {
		t.Run(name, func(t *testing.T) {
			w := &writes{}
			r, _, _ := newTrustReconciler(t, w, tc.objs...)
			r.ArgoNamespaces = []string{"argocd"}
			_, err := keep(t, r, tc.ns)
			require.NoError(t, err)
			assert.Zero(t, w.n)
		})
	}
}

// TestTrustFailureIsAWarningOnEachGitOpsCluster: a trust Secret another tool created is
// never replaced; every GitOpsCluster sharing the principal is told why, and the reconcile
// fails (retried with backoff).
func TestTrustFailureIsAWarningOnEachGitOpsCluster(t *testing.T) {
	w := &writes{}
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: pki.PrincipalSecret}}
	a := argoCDAgentGitOpsCluster("team-a", "fleet", "argocd", "principal.example.com")
	b := argoCDAgentGitOpsCluster("team-b", "fleet", "argocd", "principal.example.com")
	r, c, recorder := newTrustReconciler(t, w, a, b, foreign)

	_, err := keep(t, r, "argocd")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "was not created by gitops-addon")
	warnings := 0
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; assert.Contains(t, e, appsv1beta1.ReasonTrustFailed) {
			warnings++
		}
	}
	assert.Equal(t, 2, warnings)
	got := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(foreign), got))
	assert.Empty(t, got.Data, "the foreign Secret is left as it was")
}

// TestTrustFollowsTheGitOpsClusters: a namespace is reconciled when a GitOpsCluster in
// Argo CD Agent mode points at it, and on a spec change at the one it pointed at before too;
// status writes wake nothing; the trust Secrets and the principal's objects map to their
// namespace.
func TestTrustFollowsTheGitOpsClusters(t *testing.T) {
	before := argoCDAgentGitOpsCluster("team-a", "fleet", "old", "p.example.com")
	after := before.DeepCopy()
	after.Spec.ArgoServer.ArgoNamespace, after.Generation = "new", 2
	statusOnly := before.DeepCopy()
	statusOnly.Status.Phase = "successful"

	handler := argoNamespacesOf()
	queued := func(fire func(q workqueue.TypedRateLimitingInterface[reconcile.Request])) []string {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		fire(q)
		var out []string
		for q.Len() > 0 {
			item, _ := q.Get()
			out = append(out, item.Name)
			q.Done(item)
		}
		return out
	}
	ctx := context.Background()
	assert.Equal(t, []string{"old"}, queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		handler.Create(ctx, event.CreateEvent{Object: before}, q)
	}))
	assert.ElementsMatch(t, []string{"old", "new"}, queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		handler.Update(ctx, event.UpdateEvent{ObjectOld: before, ObjectNew: after}, q)
	}))
	assert.Empty(t, queued(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		handler.Update(ctx, event.UpdateEvent{ObjectOld: before, ObjectNew: statusOnly}, q)
	}))

	trustSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: pki.CASecret}}
	assert.Equal(t, []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "argocd"}}}, trustSecretNamespace(ctx, trustSecret))
	assert.Empty(t, trustSecretNamespace(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "c1-cluster-secret"}}))
}
