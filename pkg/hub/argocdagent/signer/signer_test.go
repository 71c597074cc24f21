package signer

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// certificateRequest is what a klusterlet's registration agent sends for cluster.
type certificateRequest struct {
	requester string
	subject   pkix.Name
	dnsNames  []string
	usages    []certificatesv1.KeyUsage
}

func (r certificateRequest) csr(t *testing.T) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: r.subject, DNSNames: r.dnsNames}, key)
	require.NoError(t, err)
	usages := r.usages
	if usages == nil {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-c1-gitops-addon-x"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: SignerName, Username: r.requester, Usages: usages,
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		},
	}
}

func validRequest() certificateRequest {
	return certificateRequest{
		requester: "system:open-cluster-management:c1:9xk2p",
		subject:   pkix.Name{CommonName: "c1", Organization: []string{Group}},
	}
}

// addonInMode is the ManagedClusterAddOn of cluster c1 with the Argo CD Agent mode mode ("" for none).
func addonInMode(mode string) *addonv1beta1.ManagedClusterAddOn {
	a := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: contract.AddonName,
		Labels: map[string]string{
			contract.LabelManagedBy: contract.ManagedByValue, ownership.LabelNamespace: "team-a", ownership.LabelName: "fleet",
		}}}
	if mode != "" {
		a.Annotations = map[string]string{contract.ArgoCDAgentMode: mode}
	}
	return a
}

func TestApproveChecksWhoAsksAndForWhat(t *testing.T) {
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	baseCalled := false
	approve := Approve(func(context.Context, *clusterv1.ManagedCluster, *addonv1beta1.ManagedClusterAddOn, *certificatesv1.CertificateSigningRequest) bool {
		baseCalled = true
		return true
	})
	tests := []struct {
		name    string
		request func() certificateRequest
		mode    string
		want    bool
	}{
		{name: "the cluster's registration agent asks for the cluster's identity", request: validRequest, mode: "managed", want: true},
		{name: "autonomous mode", request: validRequest, mode: "autonomous", want: true},
		{name: "the cluster is not in Argo CD Agent mode", request: validRequest, mode: "", want: false},
		{name: "another cluster's identity", mode: "managed", request: func() certificateRequest {
			r := validRequest()
			r.subject.CommonName = "c2"
			return r
		}},
		{name: "requested by another cluster's registration agent", mode: "managed", request: func() certificateRequest {
			r := validRequest()
			r.requester = "system:open-cluster-management:c2:abcde"
			return r
		}},
		{name: "a cluster whose name extends this one's", mode: "managed", request: func() certificateRequest {
			r := validRequest()
			r.requester = "system:open-cluster-management:c1-evil:abcde"
			return r
		}},
		{name: "requested by a user", mode: "managed", request: func() certificateRequest {
			r := validRequest()
			r.requester = "alice"
			return r
		}},
		{name: "extra organizations", mode: "managed", request: func() certificateRequest {
			r := validRequest()
			r.subject.Organization = []string{Group, "system:masters"}
			return r
		}},
		{name: "OCM's own DNS name for the addon, as the klusterlet asks", mode: "managed", want: true, request: func() certificateRequest {
			r := validRequest()
			r.dnsNames = []string{"gitops-addon.addon.open-cluster-management.io"}
			return r
		}},
		{name: "another DNS name", mode: "managed", request: func() certificateRequest {
			r := validRequest()
			r.dnsNames = []string{"gitops-addon.addon.open-cluster-management.io", "principal.example.com"}
			return r
		}},
		{name: "server authentication", mode: "managed", request: func() certificateRequest {
			r := validRequest()
			r.usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, approve(context.Background(), cluster, addonInMode(tt.mode), tt.request().csr(t)))
		})
	}
	t.Run("other signers go to the base approver", func(t *testing.T) {
		csr := validRequest().csr(t)
		csr.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
		assert.True(t, approve(context.Background(), cluster, addonInMode(""), csr))
		assert.True(t, baseCalled)
	})
}

func TestConfigurationsAddTheArgoCDAgentCertificateInArgoCDAgentModeOnly(t *testing.T) {
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	configs := Configurations(agent.KubeClientSignerConfigurations(contract.AddonName, contract.AgentName))
	off, err := configs(context.Background(), cluster, addonInMode(""))
	require.NoError(t, err)
	assert.Len(t, off, 1, "the hub client certificate only")
	on, err := configs(context.Background(), cluster, addonInMode("managed"))
	require.NoError(t, err)
	require.Len(t, on, 2)
	api := on[1].RegistrationAPI()
	require.NotNil(t, api.CustomSigner)
	assert.Equal(t, SignerName, api.CustomSigner.SignerName)
	assert.Equal(t, "c1", api.CustomSigner.Subject.User, "the principal's auth pattern %s reads the argocd-agent's name from the CN", PrincipalAuth)
	assert.Equal(t, []string{Group}, api.CustomSigner.Subject.Groups)
}

// testCA is a CA Secret as the trust keeper writes it, valid for lifetime.
func testCA(t *testing.T, namespace string, lifetime time.Duration) (*corev1.Secret, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "argocd-agent-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(lifetime),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "argocd-agent-ca"},
		Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		},
	}, cert
}

type caReader map[string]*corev1.Secret

func (c caReader) ReadCA(_ context.Context, namespace string) (*corev1.Secret, error) {
	return c[namespace], nil
}

func TestSignIssuesAShortLivedClientCertificateFromTheGitOpsClustersCA(t *testing.T) {
	gitOpsCluster := func(argoCDAgentMode bool) *appsv1beta1.GitOpsCluster {
		return fixtures.GitOpsCluster("team-a", "fleet", fixtures.ArgoNamespace("team-a-argocd"), fixtures.ArgoCDAgent(argoCDAgentMode, ""))
	}
	now := time.Now().UTC().Truncate(time.Second)
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	teamCA, teamCACert := testCA(t, "team-a-argocd", 365*24*time.Hour)
	otherCA, _ := testCA(t, "other-argocd", 365*24*time.Hour)
	cas := caReader{"team-a-argocd": teamCA, "other-argocd": otherCA}

	t.Run("signed by the CA of the cluster's GitOpsCluster, for the cluster, for client auth, for the lifetime", func(t *testing.T) {
		s := &Signer{Reader: fixtures.FakeHub(t, gitOpsCluster(true)).Build(), CAs: cas, Now: func() time.Time { return now }}
		certPEM, err := s.Sign(context.Background(), cluster, addonInMode("managed"), validRequest().csr(t))
		require.NoError(t, err)
		block, _ := pem.Decode(certPEM)
		require.NotNil(t, block)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		roots := x509.NewCertPool()
		roots.AddCert(teamCACert)
		_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now})
		require.NoError(t, err, "the chain verifies against argocd-agent-ca")
		assert.Equal(t, "c1", cert.Subject.CommonName)
		assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)
		assert.Equal(t, now.Add(DefaultLifetime), cert.NotAfter)
	})
	t.Run("never valid past the CA", func(t *testing.T) {
		shortCA, shortCACert := testCA(t, "team-a-argocd", 2*time.Hour)
		s := &Signer{Reader: fixtures.FakeHub(t, gitOpsCluster(true)).Build(), CAs: caReader{"team-a-argocd": shortCA}}
		certPEM, err := s.Sign(context.Background(), cluster, addonInMode("managed"), validRequest().csr(t))
		require.NoError(t, err)
		block, _ := pem.Decode(certPEM)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		assert.Equal(t, shortCACert.NotAfter, cert.NotAfter)
	})
	refusals := []struct {
		name    string
		objects []client.Object
		addon   *addonv1beta1.ManagedClusterAddOn
		csr     func() *certificatesv1.CertificateSigningRequest
		want    string
	}{
		{name: "the GitOpsCluster is not in Argo CD Agent mode, whatever the annotation says", objects: []client.Object{gitOpsCluster(false)},
			addon: addonInMode("managed"), csr: func() *certificatesv1.CertificateSigningRequest { return validRequest().csr(t) }, want: "not in Argo CD Agent mode"},
		{name: "an addon no GitOpsCluster created", objects: []client.Object{gitOpsCluster(true)},
			addon: func() *addonv1beta1.ManagedClusterAddOn { a := addonInMode("managed"); a.Labels = nil; return a }(),
			csr:   func() *certificatesv1.CertificateSigningRequest { return validRequest().csr(t) }, want: "not created by a GitOpsCluster"},
		{name: "approved by someone else for another identity", objects: []client.Object{gitOpsCluster(true)}, addon: addonInMode("managed"),
			csr: func() *certificatesv1.CertificateSigningRequest {
				r := validRequest()
				r.subject.CommonName = "c2"
				return r.csr(t)
			}, want: `asks for common name "c2"`},
	}
	for _, tt := range refusals {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			s := &Signer{Reader: fixtures.FakeHub(t, tt.objects...).Build(), CAs: cas}
			_, err := s.Sign(context.Background(), cluster, tt.addon, tt.csr())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
