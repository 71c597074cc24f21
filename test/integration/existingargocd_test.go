package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/existingargocd"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/teardown"
	"github.com/gitops-addon/gitops-addon/test/agentchart"
	"github.com/gitops-addon/gitops-addon/test/olm"
)

// TestExistingArgoCDOnARealAPIServer runs the spoke agent's detector as the agent's
// identity, with the RBAC the chart ships before the hub knows anything (stack
// agentOnly), on a real apiserver: an empty cluster is verified empty once; Red Hat ACM's
// acm-openshift-gitops, an OLM Subscription of OpenShift GitOps (its CRD installed while
// the agent runs) and another operator watching every namespace are each found and named,
// event-driven; the instance the work agent creates once the cluster was found empty is
// recorded by UID. Then the pre-delete hook, as the agent, leaves an ArgoCD it did not
// create even with our label on it, and deletes only the recorded one.
func TestExistingArgoCDOnARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	config, admin := startAPIServer(t)
	for _, ns := range []string{agentchart.InstallNamespace, contract.GitOpsNamespace, "openshift-gitops-operator"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	applyRendered(t, ctx, admin, agentchart.MustRender(t, map[string]any{"stack": "agentOnly"}))

	report := addonstatus.NewReport()
	agentConfig := rest.CopyConfig(config)
	agentConfig.Impersonate = rest.ImpersonationConfig{
		UserName: serviceAccountUser(agentchart.InstallNamespace, contract.AgentDeployment), Groups: []string{"system:serviceaccounts", "system:authenticated"},
	}
	mgr := newSpokeManager(t, agentConfig, nil)
	_, err := existingargocd.SetupWithManager(mgr, agentConfig, existingargocd.Options{AddonNamespace: agentchart.InstallNamespace, Report: report})
	require.NoError(t, err)
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() { stop(); <-done })

	waitFor := func(status metav1.ConditionStatus, reason, mentions string) metav1.Condition {
		t.Helper()
		var c metav1.Condition
		require.Eventually(t, func() bool {
			var ok bool
			c, ok = report.Condition(contract.ConditionExistingArgoCD)
			return ok && c.Status == status && c.Reason == reason && strings.Contains(c.Message, mentions)
		}, 30*time.Second, 50*time.Millisecond, "want ExistingArgoCD %s/%s mentioning %q; last: %+v", status, reason, mentions, c)
		return c
	}
	record := func() existingargocd.Record {
		r, err := existingargocd.ReadRecord(ctx, admin, agentchart.InstallNamespace)
		require.NoError(t, err)
		return r
	}

	waitFor(metav1.ConditionFalse, contract.ExistingArgoCDNone, "No Argo CD")
	verified := record().VerifiedAbsentAt
	require.False(t, verified.IsZero(), "an empty cluster is recorded as verified empty")

	acm := argoCD(contract.GitOpsNamespace, "acm-openshift-gitops", nil)
	require.NoError(t, admin.Create(ctx, acm))
	waitFor(metav1.ConditionTrue, contract.ExistingArgoCDInstance, "ArgoCD openshift-gitops/acm-openshift-gitops (not created by gitops-addon)")
	require.NoError(t, admin.Delete(ctx, acm))
	waitFor(metav1.ConditionFalse, contract.ExistingArgoCDNone, "No Argo CD")

	// OLM arrives while the agent runs: its CRDs, then OpenShift GitOps' Subscription.
	for _, crd := range olm.CRDs() {
		require.NoError(t, admin.Create(ctx, crd))
		waitEstablished(t, ctx, admin, crd.Name)
	}
	sub := olm.Subscription("openshift-gitops-operator", "openshift-gitops-operator", "openshift-gitops-operator")
	require.NoError(t, admin.Create(ctx, sub))
	waitFor(metav1.ConditionTrue, contract.ExistingArgoCDOLM, "OpenShift GitOps via OLM (Subscription openshift-gitops-operator/openshift-gitops-operator)")
	require.NoError(t, admin.Delete(ctx, sub))
	waitFor(metav1.ConditionFalse, contract.ExistingArgoCDNone, "No Argo CD")

	operator := operatorDeployment("argocd-operator-system", "argocd-operator-controller-manager")
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operator.Namespace}}))
	require.NoError(t, admin.Create(ctx, operator))
	waitFor(metav1.ConditionTrue, contract.ExistingArgoCDOperator, "operator Deployment argocd-operator-system/argocd-operator-controller-manager")
	require.NoError(t, admin.Delete(ctx, operator))
	waitFor(metav1.ConditionFalse, contract.ExistingArgoCDNone, "No Argo CD")

	// The hub ships the stack; the work agent creates our instance: recorded by UID.
	ours := argoCD(contract.GitOpsNamespace, contract.ArgoCDName, map[string]string{contract.LabelManagedBy: contract.ManagedByValue})
	require.NoError(t, admin.Create(ctx, ours))
	waitFor(metav1.ConditionFalse, contract.ExistingArgoCDNone, "is gitops-addon's")
	assert.Equal(t, ours.GetUID(), record().ArgoCDUID)
	assert.Equal(t, verified, record().VerifiedAbsentAt, "the first verification stays")

	t.Run("the pre-delete hook deletes only the recorded instance", func(t *testing.T) {
		asAgent, err := client.NewWithWatch(agentConfig, client.Options{})
		require.NoError(t, err)
		logf := func(format string, args ...any) { t.Logf(format, args...) }
		o := teardown.Options{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName, RecordNamespace: agentchart.InstallNamespace,
			Timeout: 30 * time.Second, Logf: logf}

		// From here the agent is gone, as when the hook runs; else it would record the next
		// labelled instance created after its verification, as the work agent's.
		stop()
		// The hook's Roles in openshift-gitops, as the full stack ships them: RBAC alone
		// would let it delete any openshift-gitops instance.
		for _, o := range agentchart.MustRender(t, map[string]any{}) {
			if o.GetNamespace() == contract.GitOpsNamespace && (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") {
				require.NoError(t, admin.Create(ctx, o))
			}
		}
		// Someone else's instance under our name, with our label merged into it.
		require.NoError(t, admin.Delete(ctx, ours, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(ours), argoCD("", "", nil)))
		},
			10*time.Second, 50*time.Millisecond)
		theirs := argoCD(contract.GitOpsNamespace, contract.ArgoCDName, map[string]string{contract.LabelManagedBy: contract.ManagedByValue})
		require.NoError(t, admin.Create(ctx, theirs))
		require.NoError(t, teardown.Run(ctx, asAgent, o))
		stays := argoCD("", "", nil)
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(theirs), stays), "an instance not in the record stays")
		assert.Equal(t, theirs.GetUID(), stays.GetUID())

		// Recorded (what the detector does for the instance it saw the work agent create).
		require.NoError(t, admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: agentchart.InstallNamespace, Name: contract.CreationRecordConfigMap}}))
		require.NoError(t, admin.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: agentchart.InstallNamespace, Name: contract.CreationRecordConfigMap},
			Data:       map[string]string{"argocd-uid": string(theirs.GetUID())},
		}))
		require.NoError(t, teardown.Run(ctx, asAgent, o))
		err = admin.Get(ctx, client.ObjectKeyFromObject(theirs), argoCD("", "", nil))
		assert.True(t, apierrors.IsNotFound(err), "the recorded instance is deleted: %v", err)
	})
}

func argoCD(namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetGroupVersionKind(contract.ArgoCDGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func operatorDeployment(namespace, name string) *appsv1.Deployment {
	labels := map[string]string{"control-plane": "argocd-operator"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "manager", Image: "quay.io/argoprojlabs/argocd-operator:v0.18.0", Env: []corev1.EnvVar{{Name: "WATCH_NAMESPACE"}},
				}}},
			},
		},
	}
}
