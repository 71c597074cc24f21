package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/constants"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/hub/agentsigner"
	"github.com/gitops-addon/gitops-addon/pkg/hub/agenttrust"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/agentcert"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
)

// agentModeGitOpsCluster puts the cluster labelled bare=true (Placement "bare") in Argo CD
// Agent mode, managed, with the principal at principal.example.com.
const agentModeGitOpsCluster = `
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: agent-fleet, namespace: openshift-gitops}
spec:
  argoServer: {argoNamespace: openshift-gitops}
  placementRef: {kind: Placement, name: bare}
  gitopsAddon:
    enabled: true
    argoCDAgent: {enabled: true, mode: managed, serverAddress: principal.example.com, serverPort: "8443"}
`

// argoCDAgentMode: a spoke in Argo CD Agent mode gets argocd-agent's client certificate
// from OCM's real registration flow (the klusterlet asks, the manager approves and signs
// with the hub's argocd-agent-ca), the real GitOps operator renders argocd-agent from the
// delivered ArgoCD CR with the Secrets gitops-addon provides, and a renewal reaches it
// with no manual action. The cluster is taken out of agent mode again at the end.
func argoCDAgentMode(t *testing.T, ctx context.Context, a *argoFleet) {
	s := a.spokes[bare]
	require.NoError(t, install.ApplyYAML(ctx, a.f.Hub.Client, []byte(placementByLabel("bare", "bare"))))
	require.NoError(t, install.LabelCluster(ctx, a.f.Hub, bare, "bare", "true"))
	require.NoError(t, install.ApplyYAML(ctx, a.f.Hub.Client, []byte(agentModeGitOpsCluster)))
	var operator *harness.Process
	defer func() {
		// Out of agent mode and out of the addon; the operator runs until the addon's
		// teardown hook has had it finalize the ArgoCD CR.
		gc := &appsv1beta1.GitOpsCluster{}
		gc.Namespace, gc.Name = constants.GitOpsNamespace, "agent-fleet"
		assert.NoError(t, client.IgnoreNotFound(a.f.Hub.Client.Delete(ctx, gc)))
		assert.Eventually(t, func() bool {
			return !exists(ctx, a.f.Hub.Client, &addonv1beta1.ManagedClusterAddOn{}, bare+"/"+constants.AddonName)
		}, 3*time.Minute, time.Second, "bare leaves the gitops addon again")
		for _, p := range []*harness.Process{operator, a.p.Agent(bare)} {
			if p != nil {
				assert.NoError(t, p.Stop())
			}
		}
	}()
	start := time.Now()
	require.NoError(t, <-startAgentsWhenDelivered(ctx, a.p, map[string]*harness.Spoke{bare: s}))
	operator, err := argocd.StartOperator(ctx, a.f, s, a.p.Binary)
	require.NoError(t, err)

	source := client.ObjectKey{Namespace: addon.DefaultInstallNamespace, Name: agentcert.SourceSecretName(constants.AddonName, agentsigner.SignerName)}
	clientTLS := client.ObjectKey{Namespace: constants.GitOpsNamespace, Name: agentcert.ClientTLSSecret}
	deployment := client.ObjectKey{Namespace: constants.GitOpsNamespace, Name: agentcert.AgentDeployment(constants.ArgoCDName)}
	secretCert := func(key client.ObjectKey) *x509.Certificate {
		secret := &corev1.Secret{}
		if s.Client.Get(ctx, key, secret) != nil {
			return nil
		}
		block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
		if block == nil {
			return nil
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil
		}
		return cert
	}
	startedWith := func() string {
		d := &appsv1.Deployment{}
		if s.Client.Get(ctx, deployment, d) != nil {
			return ""
		}
		return d.Spec.Template.Annotations[agentcert.AnnotationCertificate]
	}

	// OCM issues the certificate, the agent hands it over, the operator renders argocd-agent.
	var issued *x509.Certificate
	require.Eventually(t, func() bool {
		issued = secretCert(clientTLS)
		return issued != nil && secretCert(source) != nil && startedWith() != ""
	}, 5*time.Minute, time.Second, "argocd-agent-client-tls holds OCM's certificate and argocd-agent's Deployment records it")
	t.Logf("certificate issued, handed over and argocd-agent rendered %v after the GitOpsCluster was applied", time.Since(start).Round(time.Second))
	assert.Equal(t, bare, issued.Subject.CommonName, "the agent's name, as the principal's auth %s reads it", agentsigner.PrincipalAuth)
	hubCA := &corev1.Secret{}
	require.NoError(t, a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: constants.GitOpsNamespace, Name: agenttrust.CASecret}, hubCA))
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(hubCA.Data[corev1.TLSCertKey]))
	_, err = issued.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "signed by the hub's argocd-agent-ca")
	spokeCA := &corev1.Secret{}
	require.NoError(t, s.Client.Get(ctx, client.ObjectKey{Namespace: constants.GitOpsNamespace, Name: agenttrust.CASecret}, spokeCA))
	assert.Equal(t, map[string][]byte{"ca.crt": hubCA.Data[corev1.TLSCertKey]}, spokeCA.Data, "the CA's certificate, never its key")

	d := &appsv1.Deployment{}
	require.NoError(t, s.Client.Get(ctx, deployment, d))
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "principal.example.com", env["ARGOCD_AGENT_REMOTE_SERVER"])
	assert.Equal(t, "8443", env["ARGOCD_AGENT_REMOTE_PORT"])
	assert.Equal(t, "managed", env["ARGOCD_AGENT_MODE"])
	assert.Equal(t, agentcert.ClientTLSSecret, env["ARGOCD_AGENT_TLS_SECRET_NAME"])
	assert.Equal(t, agenttrust.CASecret, env["ARGOCD_AGENT_TLS_ROOT_CA_SECRET_NAME"])

	// OCM renews the certificate (forced here, as the registration agent does near expiry).
	before := startedWith()
	renewedAt := time.Now()
	require.NoError(t, s.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: source.Namespace, Name: source.Name}}))
	require.Eventually(t, func() bool {
		renewed := secretCert(clientTLS)
		return renewed != nil && renewed.SerialNumber.Cmp(issued.SerialNumber) != 0 && startedWith() != before
	}, 3*time.Minute, 500*time.Millisecond, "the renewed certificate reaches argocd-agent-client-tls and argocd-agent restarts onto it")
	t.Logf("renewal reached argocd-agent in %v", time.Since(renewedAt).Round(100*time.Millisecond))

	require.Eventually(t, func() bool {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: bare, Name: constants.AddonName}, mca) != nil {
			return false
		}
		c := meta.FindStatusCondition(mca.Status.Conditions, constants.ConditionArgoCDAgentCertificate)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "runs with it")
	}, time.Minute, time.Second, "the agent reports the certificate in place on its ManagedClusterAddOn")
	require.Eventually(t, func() bool {
		gc := &appsv1beta1.GitOpsCluster{}
		if a.f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: constants.GitOpsNamespace, Name: "agent-fleet"}, gc) != nil {
			return false
		}
		c := meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionAddOnsReady)
		return c != nil && strings.Contains(c.Message, "Argo CD Agent client certificate in place on 1 of 1")
	}, time.Minute, time.Second, "the GitOpsCluster counts it")
}
