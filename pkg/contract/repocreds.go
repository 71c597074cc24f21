package contract

// Repository credentials that follow a pulled Application (issue 32, item 2). The hub
// carries a copy of each Argo CD repository or repo-creds Secret an Application uses in
// that Application's ManifestWork, "staged": in the spoke's Argo CD namespace, under a
// name of its own, without Argo CD's secret-type label (so the spoke's Argo CD ignores
// it). The spoke agent materialises the union of the staged copies under the hub
// Secret's name, and owns only what it created. The labels and annotations below are
// the whole contract between the two sides.
const (
	// LabelPullCredentials opts a hub Secret in, set to "true" by someone who may write
	// it: without it the Secret never leaves the hub.
	LabelPullCredentials = "gitops-addon.open-cluster-management.io/pull-credentials" //nolint:gosec // G101: a name, not a credential

	// LabelRepositoryCredential marks the spoke Secrets of this feature: a staged copy
	// (RepositoryCredentialStaged) or one the agent created (RepositoryCredentialOwned).
	// The agent's cache is filtered on the key.
	LabelRepositoryCredential  = "gitops-addon.open-cluster-management.io/repository-credential" //nolint:gosec // G101: a name, not a credential
	RepositoryCredentialStaged = "staged"
	RepositoryCredentialOwned  = "owned"

	// AnnotationCredentialTarget is the name of the Secret a staged copy stands for (the
	// hub Secret's name), in the staged copy's own namespace.
	AnnotationCredentialTarget = "gitops-addon.open-cluster-management.io/credential-target" //nolint:gosec // G101: a name, not a credential
	// AnnotationCredentialType is the Argo CD secret type (LabelArgoCDSecretType's value)
	// the materialised Secret gets.
	AnnotationCredentialType = "gitops-addon.open-cluster-management.io/credential-type" //nolint:gosec // G101: a name, not a credential
	// AnnotationCredentialVersion is the hub Secret's resourceVersion a staged copy was
	// made from: when two Applications' copies differ for a moment (one ManifestWork
	// applied before the other), the newest wins.
	AnnotationCredentialVersion = "gitops-addon.open-cluster-management.io/credential-version" //nolint:gosec // G101: a name, not a credential

	// LabelArgoCDSecretType is Argo CD's label that makes a Secret a repository or a
	// credential template.
	LabelArgoCDSecretType = "argocd.argoproj.io/secret-type" //nolint:gosec // G101: a name, not a credential
	// ArgoCDSecretTypeRepository and ArgoCDSecretTypeRepoCreds are its two values this
	// feature carries.
	ArgoCDSecretTypeRepository = "repository"
	ArgoCDSecretTypeRepoCreds  = "repo-creds" //nolint:gosec // G101: a name, not a credential
)
