package install

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

// RotateAgentHubCredential makes OCM issue the spoke agent a new hub client certificate,
// as its registration agent does when the certificate nears its expiry: the
// gitops-addon-hub-kubeconfig secret is deleted, the registration agent sends a new CSR,
// the manager (addon-framework) approves it and the hub's kube-controller-manager signs it.
// The new secret is then written where the Deployment mounts it, as the kubelet updates a
// secret volume. It returns the certificate before and after.
func (p *Product) RotateAgentHubCredential(ctx context.Context, spoke *harness.Spoke) (before, after *x509.Certificate, err error) {
	deployment, err := waitAgentDeployment(ctx, spoke.Cluster)
	if err != nil {
		return nil, nil, err
	}
	key := client.ObjectKey{Namespace: deployment.Namespace, Name: contract.HubKubeconfigSecret}
	if before, err = hubCertificate(ctx, spoke.Cluster, key); err != nil {
		return nil, nil, err
	}
	if err := spoke.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		return nil, nil, fmt.Errorf("deleting %s on %s: %w", key, spoke.Name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cert, err := hubCertificate(ctx, spoke.Cluster, key)
		if err != nil {
			return false, nil // not re-issued yet
		}
		after = cert
		return cert.SerialNumber.Cmp(before.SerialNumber) != 0, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("waiting for OCM to issue %s on %s again: %w", key, spoke.Name, err)
	}
	hubDir := filepath.Join(spoke.Dir, "gitops-addon-hub-kubeconfig")
	if err := copySecret(ctx, spoke.Cluster, key.Namespace, key.Name, hubDir); err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// hubCertificate is the client certificate in the agent's hub kubeconfig secret.
func hubCertificate(ctx context.Context, c *harness.Cluster, key client.ObjectKey) (*x509.Certificate, error) {
	secret := &corev1.Secret{}
	if err := c.Client.Get(ctx, key, secret); err != nil {
		return nil, err
	}
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	if block == nil {
		return nil, fmt.Errorf("%s has no certificate yet", key)
	}
	return x509.ParseCertificate(block.Bytes)
}

// AgentHealthy is what the kubelet's liveness probe of the agent sees: true on 200 from
// /healthz.
func (p *Product) AgentHealthy(ctx context.Context, spoke string) (bool, error) {
	p.mu.Lock()
	addr := p.agentProbes[spoke]
	p.mu.Unlock()
	if addr == "" {
		return false, errors.New("no agent runs on " + spoke)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}
