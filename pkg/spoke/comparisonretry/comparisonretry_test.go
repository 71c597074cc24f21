package comparisonretry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// unreachable is the ComparisonError Argo CD 3.2's application controller wrote in `make
// demo REAL_PODS=1` when an Application arrived before its repo-server listened.
const unreachable = `Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unavailable ` +
	`desc = connection error: desc = "transport: Error while dialing: dial tcp 10.96.28.219:8081: connect: connection refused"`

// gitError is an error the repo-server itself returned: a refresh would only repeat it.
const gitError = `Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown ` +
	`desc = failed to list refs: dial tcp 10.77.0.1:45195: connect: connection refused`

// noProject is the InvalidSpecError Argo CD 3.2's application controller writes on an
// Application delivered before its project (argocd-server creates `default` at its start).
const noProject = "Application referencing project default which does not exist"

// withoutProject is an Application whose comparison found no AppProject `default`.
func withoutProject(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	return application(t, "", func(u *unstructured.Unstructured) {
		require.NoError(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "InvalidSpecError", "message": noProject}},
			"status", "conditions"))
	})
}

func project(name string, created time.Time) *metav1.PartialObjectMetadata {
	p := newProject()
	p.Namespace, p.Name, p.CreationTimestamp = contract.GitOpsNamespace, name, metav1.NewTime(created)
	return p
}

func application(t *testing.T, comparisonError string, edit func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: openshift-gitops
  uid: app-1
  ownerReferences: [{apiVersion: work.open-cluster-management.io/v1, kind: AppliedManifestWork, name: abc-guestbook, uid: u1}]
spec: {project: default}
status:
  reconciledAt: "2026-11-27T19:12:47Z"
  sync: {status: Unknown}
`), &u.Object))
	if comparisonError != "" {
		require.NoError(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "ComparisonError", "message": comparisonError}},
			"status", "conditions"))
	}
	if edit != nil {
		edit(u)
	}
	return u
}

func repoServer(available bool, since time.Time) *appsv1.Deployment {
	status := corev1.ConditionFalse
	if available {
		status = corev1.ConditionTrue
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: "openshift-gitops-repo-server",
			Labels: map[string]string{"app.kubernetes.io/component": "repo-server", "app.kubernetes.io/part-of": "argocd"}},
		Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: status, LastTransitionTime: metav1.NewTime(since)},
		}},
	}
}

// fixture is a reconciler over a fake cluster holding objs, counting refresh writes.
type fixture struct {
	r      *Reconciler
	c      client.Client
	writes int
	now    time.Time
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{now: time.Date(2026, 11, 27, 19, 13, 0, 0, time.UTC)}
	f.c = fixtures.FakeSpoke(t, objs...).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			f.writes++
			return c.Patch(ctx, o, p, opts...)
		}}).Build()
	f.r = &Reconciler{Apps: f.c, RepoServers: f.c, Projects: f.c, Client: f.c, Namespace: contract.GitOpsNamespace, Now: func() time.Time { return f.now }}
	return f
}

var guestbook = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: contract.GitOpsNamespace, Name: "guestbook"}}

func (f *fixture) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	result, err := f.r.Reconcile(context.Background(), guestbook)
	require.NoError(t, err)
	return result
}

// argoCDRefreshed is what Argo CD does with a refresh request: it compares, then removes
// the annotation (here the comparison fails again the same way).
func (f *fixture) argoCDRefreshed(t *testing.T) {
	t.Helper()
	app := pulledapps.New()
	require.NoError(t, f.c.Get(context.Background(), guestbook.NamespacedName, app))
	annotations := app.GetAnnotations()
	delete(annotations, contract.AnnotationArgoCDRefresh)
	app.SetAnnotations(annotations)
	require.NoError(t, f.c.Update(context.Background(), app))
}

func (f *fixture) refreshRequested(t *testing.T) string {
	t.Helper()
	app := pulledapps.New()
	require.NoError(t, f.c.Get(context.Background(), guestbook.NamespacedName, app))
	return app.GetAnnotations()[contract.AnnotationArgoCDRefresh]
}

func TestRefreshIsRequestedOnlyWhenWhatTheComparisonMissedIsThereNow(t *testing.T) {
	availableAt := time.Date(2026, 11, 27, 19, 12, 57, 0, time.UTC)
	tests := []struct {
		name        string
		app         *unstructured.Unstructured
		repoServer  *appsv1.Deployment
		project     client.Object
		wantRefresh bool
	}{
		{name: "no project before, there now: refreshed",
			app: withoutProject(t), project: project("default", availableAt), wantRefresh: true},
		{name: "the project is still missing: its creation wakes us", app: withoutProject(t), project: project("other", availableAt)},
		{name: "another InvalidSpecError: a refresh would only repeat it", project: project("default", availableAt),
			app: application(t, "", func(u *unstructured.Unstructured) {
				require.NoError(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "InvalidSpecError",
					"message": "application destination server 'https://x' and namespace 'y' do not match any of the allowed destinations in project 'default'"}},
					"status", "conditions"))
			})},
		{name: "unreachable before, Available now: refreshed",
			app: application(t, unreachable, nil), repoServer: repoServer(true, availableAt), wantRefresh: true},
		{name: "the repo-server is not Available yet: its Deployment's update wakes us",
			app: application(t, unreachable, nil), repoServer: repoServer(false, availableAt)},
		{name: "no repo-server at all", app: application(t, unreachable, nil)},
		{name: "an error the repo-server returned (Git): a refresh would only repeat it",
			app: application(t, gitError, nil), repoServer: repoServer(true, availableAt)},
		{name: "compared fine", app: application(t, "", nil), repoServer: repoServer(true, availableAt)},
		{name: "an Application nobody pulled is not ours to touch", repoServer: repoServer(true, availableAt),
			app: application(t, unreachable, func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) })},
		{name: "a refresh is pending already", repoServer: repoServer(true, availableAt),
			app: application(t, unreachable, func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{contract.AnnotationArgoCDRefresh: "hard"})
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{tt.app}
			if tt.repoServer != nil {
				objs = append(objs, tt.repoServer)
			}
			if tt.project != nil {
				objs = append(objs, tt.project)
			}
			f := newFixture(t, objs...)
			f.reconcile(t)
			if !tt.wantRefresh {
				assert.Zero(t, f.writes)
				return
			}
			assert.Equal(t, 1, f.writes)
			assert.Equal(t, "normal", f.refreshRequested(t))
			stored := pulledapps.New()
			require.NoError(t, f.c.Get(context.Background(), guestbook.NamespacedName, stored))
			spec, _, _ := unstructured.NestedMap(stored.Object, "spec")
			assert.Equal(t, map[string]any{"project": "default"}, spec, "nothing but the annotation changed")
		})
	}
}

func TestRetriesBackOffAndStopWhereArgoCDsOwnTimeoutTakesOver(t *testing.T) {
	f := newFixture(t, application(t, unreachable, nil), repoServer(true, time.Date(2026, 11, 27, 19, 12, 57, 0, time.UTC)))
	f.reconcile(t)
	require.Equal(t, 1, f.writes, "the first at once")
	for i, delay := range retryDelays[1:] {
		f.argoCDRefreshed(t) // compared again, unreachable again (kube-proxy had no endpoint yet)
		result := f.reconcile(t)
		assert.Equal(t, delay, result.RequeueAfter, "retry %d waits", i+2)
		assert.Equal(t, i+1, f.writes, "no write before the delay")
		f.now = f.now.Add(delay)
		f.reconcile(t)
		assert.Equal(t, i+2, f.writes, "retry %d after its delay", i+2)
	}
	f.argoCDRefreshed(t)
	f.now = f.now.Add(time.Hour)
	result := f.reconcile(t)
	assert.Equal(t, len(retryDelays), f.writes, "no more than %d per time the repo-server becomes Available", len(retryDelays))
	assert.Zero(t, result.RequeueAfter, "nothing left to wait for")

	// The Application deleted and delivered again under the same name: its retries start
	// over, and a deleted one's are forgotten.
	again := f.writes
	stored := pulledapps.New()
	require.NoError(t, f.c.Get(context.Background(), guestbook.NamespacedName, stored))
	require.NoError(t, f.c.Delete(context.Background(), stored))
	f.reconcile(t)
	assert.Empty(t, f.r.attempts, "a deleted Application's retries are forgotten")
	require.NoError(t, f.c.Create(context.Background(), application(t, unreachable, func(u *unstructured.Unstructured) { u.SetUID("app-2") })))
	f.reconcile(t)
	assert.Equal(t, again+1, f.writes, "a new Application under the same name is retried at once")
	f.argoCDRefreshed(t)

	// The repo-server restarts and becomes Available again: the retries start over.
	rs := &appsv1.Deployment{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "openshift-gitops-repo-server"}, rs))
	rs.Status.Conditions[0].LastTransitionTime = metav1.NewTime(f.now)
	require.NoError(t, f.c.Status().Update(context.Background(), rs))
	f.reconcile(t)
	assert.Equal(t, again+2, f.writes)
}

func TestTheRepoServerBecomingAvailableWakesOnlyTheApplicationsWaitingForIt(t *testing.T) {
	other := application(t, gitError, nil)
	other.SetName("other")
	notPulled := application(t, unreachable, func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) })
	notPulled.SetName("not-pulled")
	f := newFixture(t, application(t, unreachable, nil), other, notPulled)
	requests := f.r.waitingForTheRepoServer(context.Background(), repoServer(true, f.now))
	assert.Equal(t, []ctrl.Request{guestbook}, requests)
}

func TestTheProjectsCreationWakesOnlyTheApplicationsWaitingForIt(t *testing.T) {
	other := withoutProject(t)
	other.SetName("other")
	require.NoError(t, unstructured.SetNestedField(other.Object,
		[]any{map[string]any{"type": "InvalidSpecError", "message": "Application referencing project team-a which does not exist"}}, "status", "conditions"))
	unreachableOne := application(t, unreachable, nil)
	unreachableOne.SetName("unreachable")
	notPulled := withoutProject(t)
	notPulled.SetName("not-pulled")
	notPulled.SetOwnerReferences(nil)
	f := newFixture(t, withoutProject(t), other, unreachableOne, notPulled)
	requests := f.r.waitingForTheProject(context.Background(), project("default", f.now))
	assert.Equal(t, []ctrl.Request{guestbook}, requests)
}

func TestMissingProject(t *testing.T) {
	for message, want := range map[string]string{
		noProject: "default",
		"Application referencing project team-a which does not exist": "team-a",
		"Application referencing project  which does not exist":       "",
		"application destination server 'https://x' do not match":     "",
		"": "",
	} {
		got, ok := MissingProject(message)
		assert.Equal(t, want, got, message)
		assert.Equal(t, want != "", ok, message)
	}
}

func TestRepoServerUnreachable(t *testing.T) {
	assert.True(t, RepoServerUnreachable(unreachable))
	assert.False(t, RepoServerUnreachable(gitError))
	assert.False(t, RepoServerUnreachable(""))
}
