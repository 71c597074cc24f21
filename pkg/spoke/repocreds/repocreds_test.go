package repocreds

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

const ns = "openshift-gitops"

func staged(name, target, version, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{contract.LabelRepositoryCredential: contract.RepositoryCredentialStaged},
			Annotations: map[string]string{contract.AnnotationCredentialTarget: target, contract.AnnotationCredentialType: "repository",
				contract.AnnotationCredentialVersion: version}},
		Data: map[string][]byte{"url": []byte("http://127.0.0.1/apps"), "password": []byte(password)},
	}
}

func fixture(t *testing.T, objs ...client.Object) (*Reconciler, client.Client, *events.FakeRecorder) {
	t.Helper()
	c := fixtures.FakeSpoke(t, objs...).Build()
	rec := events.NewFakeRecorder(10)
	return &Reconciler{Client: c, Cache: c, APIReader: c, Recorder: rec, Options: Options{Namespace: ns, Report: addonstatus.NewReport()}}, c, rec
}

func get(t *testing.T, c client.Client, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return s
}

func reconcileOnce(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), everything)
	require.NoError(t, err)
	return res
}

// TestCreatedUpdatedAndRemovedWithTheStagedCopies: the lifecycle of one credential two
// Applications share.
func TestCreatedUpdatedAndRemovedWithTheStagedCopies(t *testing.T) {
	a, b := staged("copy-a", "private", "10", "old"), staged("copy-b", "private", "10", "old")
	r, c, _ := fixture(t, a, b)
	ctx := context.Background()

	reconcileOnce(t, r)
	s := get(t, c, "private")
	require.NotNil(t, s)
	assert.Equal(t, "repository", s.Labels[contract.LabelArgoCDSecretType], "Argo CD reads it")
	assert.Equal(t, contract.RepositoryCredentialOwned, s.Labels[contract.LabelRepositoryCredential])
	assert.Equal(t, "old", string(s.Data["password"]))
	cond, _ := r.Report.Condition(contract.ConditionRepositoryCredentials)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	rv := s.ResourceVersion
	reconcileOnce(t, r)
	assert.Equal(t, rv, get(t, c, "private").ResourceVersion, "nothing changed, nothing written")

	// The hub Secret changed; one Application's work is applied first: the newer copy wins.
	a = get(t, c, "copy-a")
	a.Annotations[contract.AnnotationCredentialVersion], a.Data["password"] = "11", []byte("new")
	require.NoError(t, c.Update(ctx, a))
	reconcileOnce(t, r)
	assert.Equal(t, "new", string(get(t, c, "private").Data["password"]))

	// Drift on the spoke is put back.
	s = get(t, c, "private")
	s.Data["password"] = []byte("edited")
	require.NoError(t, c.Update(ctx, s))
	reconcileOnce(t, r)
	assert.Equal(t, "new", string(get(t, c, "private").Data["password"]))

	// One Application leaves: the other still uses it.
	require.NoError(t, c.Delete(ctx, get(t, c, "copy-a")))
	reconcileOnce(t, r)
	require.NotNil(t, get(t, c, "private"))
	assert.Equal(t, "old", string(get(t, c, "private").Data["password"]), "what the remaining copy says")
	// The last one leaves: the credential goes.
	require.NoError(t, c.Delete(ctx, get(t, c, "copy-b")))
	reconcileOnce(t, r)
	assert.Nil(t, get(t, c, "private"), "no Application here uses it any more")
}

// TestAForeignSecretIsNeverOverwritten: a Secret of the target's name we did not create
// keeps its data and is not deleted; the condition and an Event say so.
func TestAForeignSecretIsNeverOverwritten(t *testing.T) {
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private", Labels: map[string]string{"team": "x"}},
		Data: map[string][]byte{"password": []byte("theirs")}}
	r, c, rec := fixture(t, foreign, staged("copy-a", "private", "10", "hub"))
	// The cache holds only the feature's Secrets: the foreign one is not in it.
	r.Cache = onlyOurs{c}

	res := reconcileOnce(t, r)
	assert.Equal(t, foreignRetry, res.RequeueAfter, "tried again: its owner may remove it")
	assert.Equal(t, "theirs", string(get(t, c, "private").Data["password"]))
	cond, _ := r.Report.Condition(contract.ConditionRepositoryCredentials)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, contract.ReasonForeignSecret, cond.Reason)
	assert.Contains(t, cond.Message, "private")
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, "Warning ForeignSecret")
	reconcileOnce(t, r)
	assert.Empty(t, rec.Events, "one Event per refusal, not per reconcile")

	// The staged copy goes: the foreign Secret stays.
	require.NoError(t, c.Delete(context.Background(), get(t, c, "copy-a")))
	reconcileOnce(t, r)
	assert.NotNil(t, get(t, c, "private"))
	cond, _ = r.Report.Condition(contract.ConditionRepositoryCredentials)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
}

// onlyOurs lists as the controller's cache does: the feature's Secrets only.
type onlyOurs struct{ client.Client }

func (o onlyOurs) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := o.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	l := list.(*corev1.SecretList)
	var kept []corev1.Secret
	for _, s := range l.Items {
		if _, ok := s.Labels[contract.LabelRepositoryCredential]; ok {
			kept = append(kept, s)
		}
	}
	l.Items = kept
	return nil
}

func TestNewerPrefersTheLaterHubVersion(t *testing.T) {
	assert.False(t, newer(staged("a", "t", "9", ""), staged("b", "t", "10", "")))
	assert.True(t, newer(staged("b", "t", "10", ""), staged("a", "t", "9", "")))
	assert.True(t, newer(staged("a", "t", "10", ""), staged("b", "t", "10", "")), "then by name")
}
