package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/repocreds"
	"github.com/gitops-addon/gitops-addon/test/agentchart"
)

// featureSecrets lists as the controller's cache does: the feature's Secrets only.
type featureSecrets struct{ client.Client }

func (f featureSecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return f.Client.List(ctx, list, append(opts, client.HasLabels{contract.LabelRepositoryCredential})...)
}

// TestRepositoryCredentialsOnARealAPIServer runs the spoke agent's repository credentials
// controller as the agent's identity, with the shipped RBAC and admission policy: the
// staged copies a work agent applied become Secrets Argo CD reads; a name held by a
// Secret the agent did not create is refused (AlreadyExists, read back, not ours) and left
// as it is; the credential goes when its last staged copy does.
func TestRepositoryCredentialsOnARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	config, admin := startAPIServer(t)
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentchart.InstallNamespace}}))
	applyRendered(t, ctx, admin, agentchart.MustRender(t, map[string]any{}))
	asAgent := impersonating(t, config, agentchart.InstallNamespace, contract.AgentDeployment)

	ns := contract.GitOpsNamespace
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken", Labels: map[string]string{"team": "a"}},
		Data: map[string][]byte{"password": []byte("theirs")}}
	require.NoError(t, admin.Create(ctx, foreign))
	staged := func(name, target string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels: map[string]string{contract.LabelRepositoryCredential: contract.RepositoryCredentialStaged},
				Annotations: map[string]string{contract.AnnotationCredentialTarget: target, contract.AnnotationCredentialType: "repo-creds",
					contract.AnnotationCredentialVersion: "1"}},
			Data: map[string][]byte{"url": []byte("https://git.example.com/team"), "password": []byte("hub")},
		}
	}
	// What OCM's work agent applies from the Applications' ManifestWorks.
	for _, s := range []*corev1.Secret{staged("copy-private", "private"), staged("copy-taken", "taken")} {
		require.NoError(t, admin.Create(ctx, s))
	}

	report := addonstatus.NewReport()
	r := &repocreds.Reconciler{Client: asAgent, Cache: featureSecrets{asAgent}, APIReader: asAgent, Recorder: events.NewFakeRecorder(10),
		Options: repocreds.Options{Namespace: ns, Report: report}}
	res, err := r.Reconcile(ctx, reconcile.Request{})
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter, "the refused name is tried again later")

	private := &corev1.Secret{}
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "private"}, private))
	assert.Equal(t, "repo-creds", private.Labels[contract.LabelArgoCDSecretType], "Argo CD reads it")
	assert.Equal(t, "hub", string(private.Data["password"]))
	theirs := &corev1.Secret{}
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(foreign), theirs))
	assert.Equal(t, "theirs", string(theirs.Data["password"]), "never overwritten")
	assert.Equal(t, map[string]string{"team": "a"}, theirs.Labels)
	c, ok := report.Condition(contract.ConditionRepositoryCredentials)
	require.True(t, ok)
	assert.Equal(t, contract.ReasonForeignSecret, c.Reason)
	assert.Contains(t, c.Message, "taken")

	// The Applications leave: their staged copies go (the work agent), and so does ours.
	for _, name := range []string{"copy-private", "copy-taken"} {
		require.NoError(t, admin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	_, err = r.Reconcile(ctx, reconcile.Request{})
	require.NoError(t, err)
	err = admin.Get(ctx, client.ObjectKeyFromObject(private), &corev1.Secret{})
	assert.True(t, apierrors.IsNotFound(err), "the credential goes with its last staged copy: %v", err)
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(foreign), theirs))
	assert.Equal(t, "theirs", string(theirs.Data["password"]), "the Secret the agent did not create stays")
	c, _ = report.Condition(contract.ConditionRepositoryCredentials)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
}
