package e2e

import (
	"context"
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// privateGit serves a bare copy of the fleet's repository over HTTP on loopback, through
// git's own http-backend run as CGI, to clients that give the password it holds now.
type privateGit struct {
	url      string
	user     string
	mu       sync.Mutex
	password string
	// authenticated counts the requests that gave the right password: proof that a
	// client used the credential.
	authenticated atomic.Int64
}

// servePrivateGit clones the fleet's repository (a bare copy) into a directory of the
// test and serves it at <url>/apps.git until the test ends.
func servePrivateGit(t *testing.T, sourceURL, user, password string) *privateGit {
	t.Helper()
	root := t.TempDir()
	out, err := exec.Command("git", "clone", "--quiet", "--bare", sourceURL, filepath.Join(root, "apps.git")).CombinedOutput()
	require.NoError(t, err, "cloning the fleet's repository: %s", out)
	gitPath, err := exec.LookPath("git")
	require.NoError(t, err)
	g := &privateGit{user: user, password: password}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		g.authenticated.Add(1)
		backend.ServeHTTP(w, r)
	})}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	g.url = "http://" + listener.Addr().String() + "/git"
	return g
}

func (g *privateGit) authorized(r *http.Request) bool {
	user, password, ok := r.BasicAuth()
	g.mu.Lock()
	defer g.mu.Unlock()
	return ok && user == g.user && subtle.ConstantTimeCompare([]byte(password), []byte(g.password)) == 1
}

func (g *privateGit) setPassword(p string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.password = p
}

// hubCredential is an Argo CD repository (or repo-creds) Secret in the hub's Argo CD
// namespace.
func hubCredential(name, secretType, url, user, password string, optIn bool) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: name,
			Labels: map[string]string{contract.LabelArgoCDSecretType: secretType}},
		StringData: map[string]string{"type": "git", "url": url, "username": user, "password": password},
	}
	if optIn {
		s.Labels[contract.LabelPullCredentials] = "true"
	}
	return s
}

// watchNeverReceives polls a spoke's apiserver until stop for the named Secrets and for
// any staged copy; it returns what it saw, if anything.
func watchNeverReceives(ctx context.Context, c client.Client, names ...string) (stop func() []string) {
	var seen []string
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			for _, name := range names {
				if exists(ctx, c, &corev1.Secret{}, contract.GitOpsNamespace+"/"+name) {
					seen = append(seen, "Secret "+name)
				}
			}
			staged := &corev1.SecretList{}
			if c.List(ctx, staged, client.HasLabels{contract.LabelRepositoryCredential}) == nil {
				for _, s := range staged.Items {
					seen = append(seen, "Secret "+s.Namespace+"/"+s.Name+" labelled "+s.Labels[contract.LabelRepositoryCredential])
				}
			}
			select {
			case <-done:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(done)
		<-finished
		return seen
	}
}

// repositoryCredentialsScenario: an Application pulled to vanilla from a repository that
// needs a password syncs with the credential defined only on the hub; the credential
// reaches vanilla (and a change of it too) and leaves with the Application; openshift, where
// no Application uses it, never receives it; a Secret of vanilla we did not create is never
// overwritten, and the agent's condition says so.
func repositoryCredentialsScenario(t *testing.T, ctx context.Context, a *argoFleet) {
	hub, spoke := a.f.Hub.Client, a.spokes[vanilla]
	git := servePrivateGit(t, a.argo.Repo.URL(), "fleet", "first-password")
	repoURL := git.url + "/apps.git"
	neverOnOpenShift := watchNeverReceives(ctx, a.spokes[openshift].Client, "private-apps", "private-template")

	// A Secret of vanilla's Argo CD namespace with the name of a hub template: not ours.
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: "private-template",
		Labels: map[string]string{"team": "platform"}}, StringData: map[string]string{"note": "the spoke's own"}}
	require.NoError(t, spoke.Client.Create(ctx, foreign))

	// The credentials, on the hub only; not opted in yet.
	repo := hubCredential("private-apps", contract.ArgoCDSecretTypeRepository, repoURL, "fleet", "first-password", false)
	template := hubCredential("private-template", contract.ArgoCDSecretTypeRepoCreds, git.url, "fleet", "first-password", true)
	require.NoError(t, hub.Create(ctx, repo))
	require.NoError(t, hub.Create(ctx, template))

	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "private-guestbook", "namespace": contract.GitOpsNamespace,
			"labels":      map[string]any{pullnames.LabelPull: "true"},
			"annotations": map[string]any{pullnames.AnnotationCluster: vanilla, pullnames.AnnotationSkipReconcile: "true"}},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": repoURL, "path": "guestbook", "targetRevision": "HEAD"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "private-guestbook"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}, "syncOptions": []any{"CreateNamespace=true"}},
		},
	}}
	require.NoError(t, hub.Create(ctx, app))

	t.Run("without the opt-in the repository Secret stays on the hub", func(t *testing.T) {
		// The template, opted in, travels but is held by vanilla's own Secret; the
		// repository Secret, not opted in, does not travel: the spoke cannot authenticate.
		last := waitApp(t, ctx, spoke.Cluster, contract.GitOpsNamespace, "private-guestbook", 3*time.Minute, func(u *unstructured.Unstructured) bool {
			return strings.Contains(appSummary(u), "ComparisonError")
		}, "want a ComparisonError: no credential on the spoke")
		t.Logf("spoke Application without the credential: %s", last)
		assert.False(t, exists(ctx, spoke.Client, &corev1.Secret{}, contract.GitOpsNamespace+"/private-apps"), "not opted in: not on vanilla")
		waitAddonCondition(t, ctx, a.f.Hub, vanilla, contract.ConditionRepositoryCredentials, func(c metav1.Condition) bool {
			return c.Reason == contract.ReasonForeignSecret && strings.Contains(c.Message, "private-template")
		}, "the agent names the Secret it did not overwrite")
		stored := &corev1.Secret{}
		require.NoError(t, spoke.Client.Get(ctx, client.ObjectKeyFromObject(foreign), stored))
		assert.Equal(t, map[string][]byte{"note": []byte("the spoke's own")}, stored.Data, "vanilla's own Secret is untouched")
		assert.Equal(t, map[string]string{"team": "platform"}, stored.Labels)
	})

	t.Run("opted in: the credential reaches vanilla only, and the Application syncs with it", func(t *testing.T) {
		since := time.Now()
		require.NoError(t, hub.Get(ctx, client.ObjectKeyFromObject(repo), repo))
		repo.Labels[contract.LabelPullCredentials] = "true"
		require.NoError(t, hub.Update(ctx, repo))
		onSpoke := &corev1.Secret{}
		require.Eventually(t, func() bool {
			return spoke.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "private-apps"}, onSpoke) == nil
		}, time.Minute, 200*time.Millisecond, "the repository Secret reaches vanilla")
		t.Logf("on vanilla %v after the opt-in", time.Since(since).Round(100*time.Millisecond))
		assert.Equal(t, contract.ArgoCDSecretTypeRepository, onSpoke.Labels[contract.LabelArgoCDSecretType])
		assert.Equal(t, "first-password", string(onSpoke.Data["password"]))
		waitAppStatusIn(t, ctx, spoke.Cluster, contract.GitOpsNamespace, "private-guestbook", "Synced", "Healthy", 3*time.Minute)
		waitAppStatus(t, ctx, a.f.Hub, "private-guestbook", "Synced", "Healthy", time.Minute)
		t.Logf("Synced/Healthy on vanilla %v after the opt-in; %d authenticated Git requests", time.Since(since).Round(time.Second), git.authenticated.Load())
		assert.True(t, exists(ctx, spoke.Client, &corev1.ConfigMap{}, "private-guestbook/guestbook-ui"), "deployed from the private repository")
		assert.Positive(t, git.authenticated.Load(), "the spoke's Argo CD authenticated")
	})

	t.Run("the hub Secret changes: so does vanilla's", func(t *testing.T) {
		git.setPassword("second-password")
		require.NoError(t, hub.Get(ctx, client.ObjectKeyFromObject(repo), repo))
		repo.Data["password"] = []byte("second-password")
		require.NoError(t, hub.Update(ctx, repo))
		require.Eventually(t, func() bool {
			s := &corev1.Secret{}
			return spoke.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "private-apps"}, s) == nil &&
				string(s.Data["password"]) == "second-password"
		}, time.Minute, 200*time.Millisecond, "the new password reaches vanilla")
	})

	t.Run("the Application goes: so does the credential, from vanilla; vanilla's own Secret stays", func(t *testing.T) {
		require.NoError(t, hub.Delete(ctx, app))
		require.Eventually(t, func() bool {
			return !exists(ctx, spoke.Client, application("", ""), contract.GitOpsNamespace+"/private-guestbook")
		}, 2*time.Minute, time.Second, "the spoke Application goes")
		require.Eventually(t, func() bool {
			return !exists(ctx, spoke.Client, &corev1.Secret{}, contract.GitOpsNamespace+"/private-apps")
		}, time.Minute, 200*time.Millisecond, "the credential leaves vanilla once no Application there uses it")
		staged := &corev1.SecretList{}
		require.NoError(t, spoke.Client.List(ctx, staged, client.HasLabels{contract.LabelRepositoryCredential}))
		assert.Empty(t, staged.Items, "no staged copy or credential of ours is left on vanilla")
		stored := &corev1.Secret{}
		require.NoError(t, spoke.Client.Get(ctx, client.ObjectKeyFromObject(foreign), stored))
		assert.Equal(t, map[string][]byte{"note": []byte("the spoke's own")}, stored.Data, "vanilla's own Secret is still untouched")
		waitAddonCondition(t, ctx, a.f.Hub, vanilla, contract.ConditionRepositoryCredentials, func(c metav1.Condition) bool {
			return c.Status == metav1.ConditionTrue
		}, "nothing refused any more")
	})

	t.Run("openshift, where no Application uses them, never received the credentials (its apiserver, polled throughout)", func(t *testing.T) {
		assert.Empty(t, neverOnOpenShift())
	})
	_ = hub.Delete(ctx, repo)
	_ = hub.Delete(ctx, template)
	_ = spoke.Client.Delete(ctx, foreign)
}
