package argocdagent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
)

// operatorPrincipalServices are the GitOps operator's Services of a principal (argocd-operator
// controllers/argocdagent/service.go): the one argocd-agents connect to, and the resource proxy's.
func operatorPrincipalServices(ns string) []*corev1.Service {
	labels := map[string]string{labelPartOf: "argocd-agent", labelComponent: "principal", labelName: "openshift-gitops-agent-principal"}
	return []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "openshift-gitops-agent-principal", Labels: labels},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "principal", Port: 443}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "openshift-gitops-agent-principal-resource-proxy", Labels: labels},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "resource-proxy", Port: 9090}}}},
	}
}

// The cluster Secrets and the resource proxy's certificate name the resource proxy Service
// that runs: the GitOps operator's when it made one, argocd-agent's own install's else.
func TestResourceProxyIsTheServiceThatRuns(t *testing.T) {
	for _, tc := range []struct {
		name      string
		operator  bool
		wantURL   string
		wantNames []string
	}{
		{name: "the GitOps operator's principal", operator: true,
			wantURL: "https://openshift-gitops-agent-principal-resource-proxy.agent-argocd.svc:9090?agentName=c1",
			wantNames: []string{"argocd-agent-resource-proxy", "argocd-agent-resource-proxy.agent-argocd.svc",
				"openshift-gitops-agent-principal-resource-proxy", "openshift-gitops-agent-principal-resource-proxy.agent-argocd.svc"}},
		{name: "argocd-agent's own install", wantURL: "https://argocd-agent-resource-proxy.agent-argocd.svc:9090?agentName=c1",
			wantNames: []string{"argocd-agent-resource-proxy", "argocd-agent-resource-proxy.agent-argocd.svc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gc := argoCDAgentGitOpsCluster("team", "gc", "agent-argocd", "principal.example.com")
			objs := []client.Object{gc}
			if tc.operator {
				for _, s := range operatorPrincipalServices("agent-argocd") {
					objs = append(objs, s)
				}
			}
			r, c, _ := newTrustReconciler(t, &writes{}, objs...)
			_, err := keep(t, r, "agent-argocd")
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.wantNames, certOf(t, c, "agent-argocd", pki.ResourceProxySecret).DNSNames)

			trust, err := TrustReader{Finder: Finder{Reader: c}, Keeper: r.Keeper}.Read(context.Background(), gc)
			require.NoError(t, err)
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-argocd", Labels: map[string]string{}, Annotations: map[string]string{}},
				Data: map[string][]byte{}}
			require.NoError(t, FormatClusterSecret(secret, "c1", nil, trust, time.Now()))
			assert.Equal(t, tc.wantURL, string(secret.Data["server"]))
		})
	}
}
