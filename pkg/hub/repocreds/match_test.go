package repocreds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

func TestNormalizeURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://GitHub.com/Org/Repo.git", "https://github.com/org/repo"},
		{"  https://github.com/org/repo  ", "https://github.com/org/repo"},
		{"git@github.com:org/repo.git", "git@github.com/org/repo"},
		{"ssh://git@github.com/org/repo.git", "git@github.com/org/repo"},
		{"http://127.0.0.1:8080/apps.git", "http://127.0.0.1:8080/apps"},
		{"https://example.com/a%zz", ""}, // not parseable: matches nothing
	} {
		assert.Equal(t, tc.want, NormalizeURL(tc.in), tc.in)
	}
}

func secret(name, typ, url, project string) corev1.Secret {
	s := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{contract.LabelArgoCDSecretType: typ}},
		Data:       map[string][]byte{"url": []byte(url)},
	}
	if project != "" {
		s.Data["project"] = []byte(project)
	}
	return s
}

func names(ss []corev1.Secret) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func TestSelectMatchesAsArgoCD(t *testing.T) {
	secrets := []corev1.Secret{
		secret("exact", "repository", "https://github.com/org/app.git", ""),
		secret("exact-other-project", "repository", "https://github.com/org/app", "other"),
		secret("exact-team", "repository", "https://GITHUB.com/org/app", "team"),
		secret("org", "repo-creds", "https://github.com/org", ""),
		secret("org-sub", "repo-creds", "https://github.com/org/ap", ""),
		secret("host", "repo-creds", "https://github.com", ""),
		secret("ssh", "repo-creds", "git@github.com:org", ""),
		secret("broken", "repo-creds", "https://%zz", ""),
		secret("not-argo", "cluster", "https://github.com/org/app", ""),
	}
	for _, tc := range []struct {
		name    string
		urls    []string
		project string
		want    []string
	}{
		{"exact URL, case and .git ignored; the longest template prefix", []string{"https://github.com/org/app"}, "default", []string{"exact", "org-sub"}},
		{"the project's own repository Secret before the unscoped one", []string{"https://github.com/org/app.git"}, "team", []string{"exact-team", "org-sub"}},
		{"no repository Secret: the longest template only", []string{"https://github.com/org/other"}, "default", []string{"org"}},
		{"a prefix is a string prefix, as in Argo CD", []string{"https://github.com/org/apple"}, "default", []string{"org-sub"}},
		{"another host: nothing", []string{"https://gitlab.com/org/app"}, "default", nil},
		{"scp-like SSH against an SSH template", []string{"git@github.com:org/app.git"}, "default", []string{"ssh"}},
		{"several sources: the union, each once", []string{"https://github.com/org/app", "https://github.com/x/y", "https://github.com/org/app.git"},
			"default", []string{"exact", "host", "org-sub"}},
		{"no sources", nil, "default", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, names(Select(secrets, tc.urls, tc.project)))
		})
	}
}

func TestConcerns(t *testing.T) {
	org := secret("org", "repo-creds", "https://github.com/org", "")
	assert.True(t, Concerns(&org, []string{"https://github.com/org/app"}))
	assert.False(t, Concerns(&org, []string{"https://gitlab.com/org/app"}))
	exact := secret("exact", "repository", "https://github.com/org/app.git", "")
	assert.True(t, Concerns(&exact, []string{"https://GitHub.com/org/app"}))
}

func TestOptedIn(t *testing.T) {
	s := secret("a", "repository", "https://x", "")
	assert.False(t, OptedIn(&s), "off by default")
	s.Labels[contract.LabelPullCredentials] = "true"
	assert.True(t, OptedIn(&s))
	c := secret("c", "cluster", "https://x", "")
	c.Labels[contract.LabelPullCredentials] = "true"
	assert.False(t, OptedIn(&c), "only repository and repo-creds Secrets")
}

func TestStagedCopy(t *testing.T) {
	s := secret("private", "repository", "http://127.0.0.1/apps.git", "")
	s.Data["password"] = []byte("p")
	s.ResourceVersion = "42"
	s.Annotations = map[string]string{"hub-only": "x"}
	u := Staged(&s, "openshift-gitops", "openshift-gitops", "app")
	assert.Equal(t, StagedName("openshift-gitops", "app", "private"), u.GetName())
	assert.NotEqual(t, StagedName("openshift-gitops", "app2", "private"), u.GetName(), "one copy per Application")
	assert.Equal(t, map[string]string{contract.LabelRepositoryCredential: "staged", contract.LabelManagedBy: "gitops-addon"}, u.GetLabels(),
		"no Argo CD secret-type label: the spoke's Argo CD ignores the staged copy")
	assert.Equal(t, "private", u.GetAnnotations()[contract.AnnotationCredentialTarget])
	assert.Equal(t, "repository", u.GetAnnotations()[contract.AnnotationCredentialType])
	assert.Equal(t, "42", u.GetAnnotations()[contract.AnnotationCredentialVersion])
	pw, _, _ := unstructured.NestedString(u.Object, "data", "password")
	assert.Equal(t, "cA==", pw)
}

func TestRepoURLs(t *testing.T) {
	app := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"source":  map[string]any{"repoURL": "a"},
		"sources": []any{map[string]any{"repoURL": "b"}, map[string]any{"repoURL": "a"}, map[string]any{"chart": "x"}},
	}}}
	assert.Equal(t, []string{"a", "b"}, RepoURLs(app))
}
