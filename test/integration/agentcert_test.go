package integration

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/render"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/argocdagent"
	"github.com/gitops-addon/gitops-addon/test/pki"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// grantAgentModeRBAC applies the agent's identity and the Roles the hub ships in Argo CD
// Agent mode, as `render --set argoCDAgent.mode=managed` prints them.
func grantAgentModeRBAC(t *testing.T, ctx context.Context, c client.Client) {
	grantNamespacedAgentRBAC(t, ctx, c, "argoCDAgent.mode=managed")
}

// grantNamespacedAgentRBAC applies the agent's identity and the Roles (in the addon and
// the Argo CD namespace) the hub ships with values, and the admission policy that holds
// its Secret writes in the Argo CD namespace to its own.
func grantNamespacedAgentRBAC(t *testing.T, ctx context.Context, c client.Client, values ...string) {
	t.Helper()
	objects, err := render.Objects(ctx, render.Options{Cluster: "spoke1", Values: values})
	require.NoError(t, err)
	for _, ns := range []string{addon.DefaultInstallNamespace, contract.GitOpsNamespace} {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	}
	for _, o := range objects {
		obj, ok := o.DeepCopyObject().(client.Object)
		if !ok {
			continue
		}
		switch o.(type) {
		case *corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding:
			if obj.GetNamespace() != addon.DefaultInstallNamespace && obj.GetNamespace() != contract.GitOpsNamespace {
				continue
			}
		case *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			// What holds the agent's Secret writes in the Argo CD namespace to its own.
			if obj.GetName() != agentSecretsPolicy {
				continue
			}
		default:
			continue
		}
		obj.SetResourceVersion("")
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, obj)), "%T %s", o, obj.GetName())
	}
}

// clientCertificate is a certificate and key as OCM's registration agent writes them,
// from a new CA each time (as a renewal brings a new certificate).
func clientCertificate(t *testing.T, commonName string) (certPEM, keyPEM []byte) {
	t.Helper()
	ca, err := pki.NewCA("argocd-agent-ca")
	require.NoError(t, err)
	pair, err := ca.Client(commonName, signer.Group)
	require.NoError(t, err)
	return pair.CertPEM, pair.KeyPEM
}

// argoCDAgentCertificateController is the argocd-agent certificate controller's name in
// controller-runtime's metrics (pkg/spoke/argocdagent).
const argoCDAgentCertificateController = "argocd-agent-certificate"

// TestArgoCDAgentCertificateReachesArgoCDAgent: on a real apiserver, with only the RBAC
// the hub ships, the spoke agent copies the certificate OCM keeps into
// argocd-agent-client-tls and restarts argocd-agent on every renewal, and leaves a
// Secret someone else created alone.
func TestArgoCDAgentCertificateReachesArgoCDAgent(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDPaths(filepath.Join(testenv.RepoRoot(), "pkg", "spoke", "crdinstall", "crds", "argocds.argoproj.io.yaml")))
	ctx := context.Background()
	grantAgentModeRBAC(t, ctx, env.Client)
	// The Argo CD instance the addon delivers, which runs argocd-agent; a finalizer keeps
	// it Terminating when deleted, as the operator's does until it has cleaned up.
	instance := &unstructured.Unstructured{}
	instance.SetAPIVersion("argoproj.io/v1beta1")
	instance.SetKind("ArgoCD")
	instance.SetNamespace(contract.GitOpsNamespace)
	instance.SetName(contract.ArgoCDName)
	instance.SetFinalizers([]string{"argoproj.io/finalizer"})
	require.NoError(t, env.Client.Create(ctx, instance))
	sourceName := argocdagent.SourceSecretName(contract.AddonName, signer.SignerName)
	deploymentName := argocdagent.Deployment(contract.ArgoCDName)
	o := argocdagent.CertificateOptions{SourceNamespace: addon.DefaultInstallNamespace, SourceSecret: sourceName,
		ArgoNamespace: contract.GitOpsNamespace, Deployment: deploymentName, ArgoCD: contract.ArgoCDName, Report: addonstatus.NewReport()}

	mgr := newSpokeManager(t, asAgent(env.Config), o.CacheByObject())
	require.NoError(t, (&argocdagent.CertificateReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CertificateOptions: o}).SetupWithManager(mgr))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	condition := func(t *testing.T, reason string) metav1.Condition {
		t.Helper()
		var c metav1.Condition
		require.Eventually(t, func() bool {
			var ok bool
			c, ok = o.Report.Condition(argocdagent.ConditionCertificate)
			return ok && c.Reason == reason
		}, 30*time.Second, 100*time.Millisecond, "condition %s", reason)
		return c
	}
	clientTLS := func() *corev1.Secret {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: contract.GitOpsNamespace, Name: argocdagent.ClientTLSSecret}, s); err != nil {
			return nil
		}
		return s
	}
	// renew puts a new certificate where OCM keeps it, as a renewal does, and returns it.
	renew := func(t *testing.T) []byte {
		t.Helper()
		renewed, renewedKey := clientCertificate(t, "spoke1")
		source := &corev1.Secret{}
		require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Namespace: addon.DefaultInstallNamespace, Name: sourceName}, source))
		source.Data = map[string][]byte{corev1.TLSCertKey: renewed, corev1.TLSPrivateKeyKey: renewedKey}
		require.NoError(t, env.Client.Update(ctx, source))
		return renewed
	}
	// wake makes the controller reconcile without changing anything it reads (an
	// annotation on the Secret OCM keeps), and waits until it has: the positive control of
	// the checks that nothing was written.
	wake := func(t *testing.T) {
		t.Helper()
		waitReconcileAfter(t, argoCDAgentCertificateController, func() {
			source := &corev1.Secret{}
			require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Namespace: addon.DefaultInstallNamespace, Name: sourceName}, source))
			metav1.SetMetaDataAnnotation(&source.ObjectMeta, "test.example.com/wake", time.Now().String())
			require.NoError(t, env.Client.Update(ctx, source))
		})
	}
	restartedWith := func() string {
		d := &appsv1.Deployment{}
		require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Namespace: contract.GitOpsNamespace, Name: deploymentName}, d))
		return d.Spec.Template.Annotations[argocdagent.AnnotationCertificate]
	}

	t.Run("before OCM issued the certificate, the condition says what it waits for", func(t *testing.T) {
		c := condition(t, contract.ReasonWaitingForCertificate)
		assert.Contains(t, c.Message, sourceName)
	})

	first, firstKey := clientCertificate(t, "spoke1")
	t.Run("issued: copied to argocd-agent-client-tls; argocd-agent, not deployed yet, starts with it", func(t *testing.T) {
		require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: addon.DefaultInstallNamespace, Name: sourceName},
			Type:       corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: first, corev1.TLSPrivateKeyKey: firstKey},
		}))
		c := condition(t, contract.ReasonCertificateInPlace)
		assert.Contains(t, c.Message, "Certificate for spoke1")
		assert.Contains(t, c.Message, "is not deployed yet")
		s := clientTLS()
		require.NotNil(t, s)
		assert.Equal(t, corev1.SecretTypeTLS, s.Type)
		assert.Equal(t, first, s.Data[corev1.TLSCertKey])
		assert.Equal(t, firstKey, s.Data[corev1.TLSPrivateKeyKey])
	})

	t.Run("the operator deploys argocd-agent: its pod template records the certificate", func(t *testing.T) {
		labels := map[string]string{"app.kubernetes.io/name": deploymentName}
		require.NoError(t, env.Client.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: deploymentName},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "argocd-agent-agent", Image: "quay.io/argoprojlabs/argocd-agent:v0.7.0"}}},
				},
			},
		}))
		require.Eventually(t, func() bool { return restartedWith() != "" }, 30*time.Second, 100*time.Millisecond)
	})

	t.Run("renewed by OCM: the new certificate replaces the old one and argocd-agent restarts onto it", func(t *testing.T) {
		before := restartedWith()
		renewed := renew(t)
		require.Eventually(t, func() bool {
			s := clientTLS()
			return s != nil && bytes.Equal(s.Data[corev1.TLSCertKey], renewed) && restartedWith() != before
		}, 30*time.Second, 100*time.Millisecond, "argocd-agent-client-tls renewed and argocd-agent restarted")
		require.Eventually(t, func() bool {
			c, _ := o.Report.Condition(argocdagent.ConditionCertificate)
			return c.Reason == contract.ReasonCertificateInPlace && strings.Contains(c.Message, "runs with it")
		}, 30*time.Second, 100*time.Millisecond, "the report says argocd-agent runs with the renewed certificate")
	})

	t.Run("nothing is written while nothing changes", func(t *testing.T) {
		s, d := clientTLS(), restartedWith()
		wake(t)
		assert.Equal(t, s.ResourceVersion, clientTLS().ResourceVersion)
		assert.Equal(t, d, restartedWith())
	})

	t.Run("a Secret that is not gitops-addon's is left alone and named", func(t *testing.T) {
		// The user takes argocd-agent-client-tls over (our label removed), with their own
		// certificate in it.
		theirs := clientTLS()
		delete(theirs.Labels, contract.LabelManagedBy)
		theirs.Data = map[string][]byte{corev1.TLSCertKey: first, corev1.TLSPrivateKeyKey: firstKey}
		require.NoError(t, env.Client.Update(ctx, theirs))
		renew(t) // wakes the controller
		c := condition(t, contract.ReasonCertificateFailed)
		assert.Contains(t, c.Message, "was not created by gitops-addon")
		assert.Equal(t, first, clientTLS().Data[corev1.TLSCertKey], "theirs is kept")
	})

	t.Run("teardown: once the ArgoCD instance is being deleted, a deleted argocd-agent-client-tls is not written again", func(t *testing.T) {
		require.NoError(t, env.Client.Delete(ctx, instance.DeepCopy()))
		// The teardown hook deletes the Secret after the instance (here: theirs, which
		// the controller would otherwise keep naming; ours is removed the same way).
		require.NoError(t, env.Client.Delete(ctx, clientTLS()))
		renew(t) // wakes the controller
		c := condition(t, contract.ReasonNoArgoCDInstance)
		assert.Contains(t, c.Message, "being deleted")
		wake(t)
		assert.Nil(t, clientTLS(), "not written again while the instance goes")
	})
}

// TestOutOfArgoCDAgentModeTheClientCertificateGoes: on a real apiserver, with only the
// RBAC the hub ships outside agent mode, the agent deletes the argocd-agent-client-tls it
// wrote when the cluster was in agent mode, and never one it did not write.
func TestOutOfArgoCDAgentModeTheClientCertificateGoes(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	grantNamespacedAgentRBAC(t, ctx, env.Client)
	agentClient, err := client.New(asAgent(env.Config), client.Options{Scheme: env.Client.Scheme()})
	require.NoError(t, err)
	certPEM, keyPEM := clientCertificate(t, "spoke1")
	clientTLS := func(labels map[string]string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: argocdagent.ClientTLSSecret, Labels: labels},
			Type:       corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
	}
	retire := func(t *testing.T) *addonstatus.Report {
		t.Helper()
		report := addonstatus.NewReport()
		report.Set(metav1.Condition{Type: contract.ConditionArgoCDAgentConnected, Status: metav1.ConditionTrue, Reason: "Connected"})
		runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		r := &argocdagent.Retirement{Client: agentClient, ArgoNamespace: contract.GitOpsNamespace, Report: report, RetryInterval: 100 * time.Millisecond}
		require.NoError(t, r.Start(runCtx))
		require.NoError(t, runCtx.Err(), "it finished (a failure retries until the agent stops)")
		return report
	}

	t.Run("the Secret gitops-addon wrote goes, and the agent-mode conditions are withdrawn", func(t *testing.T) {
		require.NoError(t, env.Client.Create(ctx, clientTLS(map[string]string{contract.LabelManagedBy: contract.ManagedByValue})))
		report := retire(t)
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(clientTLS(nil)), &corev1.Secret{})
		assert.True(t, apierrors.IsNotFound(err), "argocd-agent-client-tls deleted, got %v", err)
		_, reported := report.Condition(contract.ConditionArgoCDAgentConnected)
		assert.False(t, reported)
		assert.ElementsMatch(t, argocdagent.Conditions, report.Withdrawn())
	})

	t.Run("a Secret of that name someone else wrote stays", func(t *testing.T) {
		require.NoError(t, env.Client.Create(ctx, clientTLS(nil)))
		retire(t)
		assert.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(clientTLS(nil)), &corev1.Secret{}))
	})

	// RBAC lets the agent delete Secrets of the Argo CD namespace (the repository
	// credentials); the admission policy holds it to its own and this one.
	t.Run("the agent may delete only that Secret", func(t *testing.T) {
		ok, why := testenv.Allowed(t, ctx, env.Client, agentUser, []string{"system:serviceaccounts"}, testenv.Access{
			Resource: authorizationv1.ResourceAttributes{Verb: "delete", Resource: "secrets", Namespace: contract.GitOpsNamespace, Name: argocdagent.ClientTLSSecret}})
		assert.True(t, ok, "delete Secret %s: %s", argocdagent.ClientTLSSecret, why)
		waitAgentSecretsPolicy(t, ctx, env.Client, agentClient)
		for _, name := range []string{"argocd-secret", "argocd-agent-ca"} {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: name}}
			require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, secret.DeepCopy())))
			err := agentClient.Delete(ctx, secret.DeepCopy())
			assert.True(t, apierrors.IsForbidden(err), "the agent deleting Secret %s is refused, got %v", name, err)
			assert.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}), "Secret %s stays", name)
		}
	})
}

// agentSecretsPolicy is the agent chart's ValidatingAdmissionPolicy (and binding) that holds
// the agent's Secret writes in the Argo CD namespace to its own.
const agentSecretsPolicy = "gitops-addon-agent-secrets"

// waitAgentSecretsPolicy waits until the apiserver enforces the agent's Secrets policy (it
// loads a new policy asynchronously): until a Secret the agent may not create is refused.
func waitAgentSecretsPolicy(t *testing.T, ctx context.Context, admin, agent client.Client) {
	t.Helper()
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: contract.GitOpsNamespace, Name: "not-the-agents"}}
	require.Eventually(t, func() bool {
		err := agent.Create(ctx, probe.DeepCopy())
		if err == nil {
			require.NoError(t, admin.Delete(ctx, probe.DeepCopy()))
			return false
		}
		return apierrors.IsForbidden(err)
	}, 30*time.Second, 200*time.Millisecond, "the apiserver enforces %s", agentSecretsPolicy)
}
