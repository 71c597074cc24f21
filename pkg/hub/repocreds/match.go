// Package repocreds decides which of the hub's Argo CD repository credentials a pulled
// Application uses, the way Argo CD itself decides it, and makes the staged copies its
// ManifestWork carries to the spoke (pkg/contract names their labels and annotations;
// pkg/spoke/repocreds materialises them there).
package repocreds

import (
	"cmp"
	"net/url"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// scpLike matches the SSH forms Argo CD recognises: "user@host:path" and
// "ssh://user@host/path" (anything with a user before an '@' and no second '@').
var scpLike = regexp.MustCompile(`^(ssh://)?[^/:]*?@[^@]+$`)

// NormalizeURL is a repository URL in the form Argo CD compares (its util/git
// normalisation, re-implemented): trimmed and lower-cased, an scp-like SSH address
// turned into a path, a trailing ".git" dropped, re-encoded by net/url, without the
// "ssh://" scheme. An address net/url cannot parse gives "": it matches nothing.
func NormalizeURL(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if scpLike.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		// "git@host:org/repo": the first ':' separates host and path, not a port.
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	repo = strings.TrimSuffix(repo, ".git")
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

// SameURL says whether two repository URLs name one repository, as Argo CD decides
// which `repository` Secret belongs to an Application's repoURL. An address that does
// not parse is compared as written.
func SameURL(a, b string) bool {
	na, nb := orRaw(NormalizeURL(a), a), orRaw(NormalizeURL(b), b)
	return na != "" && na == nb
}

func orRaw(normalized, raw string) string {
	if normalized == "" {
		return raw
	}
	return normalized
}

// Select returns the hub Secrets an Application uses, by name: for each repoURL of its
// sources, the `repository` Secret of that exact URL (one scoped to the Application's
// project first, else an unscoped one), and the `repo-creds` template whose URL is the
// longest prefix of it. Argo CD may use both (a repository Secret without a password
// takes the template's), so both go. Ties, which Argo CD breaks by list order, are
// broken by name, so that the choice does not change between reconciles.
func Select(secrets []corev1.Secret, repoURLs []string, project string) []corev1.Secret {
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b corev1.Secret) int { return cmp.Compare(a.Name, b.Name) })
	var out []corev1.Secret
	add := func(s *corev1.Secret) {
		if s != nil && !slices.ContainsFunc(out, func(o corev1.Secret) bool { return o.Name == s.Name }) {
			out = append(out, *s)
		}
	}
	for _, repo := range repoURLs {
		if repo == "" {
			continue
		}
		add(repository(sorted, repo, project))
		add(longestTemplate(sorted, repo))
	}
	slices.SortFunc(out, func(a, b corev1.Secret) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// repository is the `repository` Secret for repo: the project's own before an
// unscoped one; a Secret scoped to another project is never used.
func repository(secrets []corev1.Secret, repo, project string) *corev1.Secret {
	var unscoped *corev1.Secret
	for i := range secrets {
		s := &secrets[i]
		if typeOf(s) != contract.ArgoCDSecretTypeRepository || !SameURL(string(s.Data["url"]), repo) {
			continue
		}
		switch scope := string(s.Data["project"]); {
		case scope != "" && scope == project:
			return s
		case scope == "" && unscoped == nil:
			unscoped = s
		}
	}
	return unscoped
}

// longestTemplate is the `repo-creds` Secret whose normalised URL is the longest prefix
// of repo's; a template whose URL does not parse matches nothing.
func longestTemplate(secrets []corev1.Secret, repo string) *corev1.Secret {
	target := NormalizeURL(repo)
	var best *corev1.Secret
	for i := range secrets {
		s := &secrets[i]
		if typeOf(s) != contract.ArgoCDSecretTypeRepoCreds {
			continue
		}
		prefix := NormalizeURL(string(s.Data["url"]))
		if prefix == "" || !strings.HasPrefix(target, prefix) {
			continue
		}
		if best == nil || len(prefix) > len(NormalizeURL(string(best.Data["url"]))) {
			best = s
		}
	}
	return best
}

// Concerns says whether a Secret can be used by an Application with these repoURLs:
// whether a change of it may change what the Application's ManifestWork carries.
func Concerns(s *corev1.Secret, repoURLs []string) bool {
	u := string(s.Data["url"])
	prefix := NormalizeURL(u)
	for _, repo := range repoURLs {
		if SameURL(u, repo) || (prefix != "" && strings.HasPrefix(NormalizeURL(repo), prefix)) {
			return true
		}
	}
	return false
}

func typeOf(s *corev1.Secret) string { return s.Labels[contract.LabelArgoCDSecretType] }

// OptedIn says whether a hub Secret is an Argo CD repository credential whose owner let
// it follow pulled Applications.
func OptedIn(s *corev1.Secret) bool {
	t := typeOf(s)
	return s.Labels[contract.LabelPullCredentials] == "true" &&
		(t == contract.ArgoCDSecretTypeRepository || t == contract.ArgoCDSecretTypeRepoCreds)
}
