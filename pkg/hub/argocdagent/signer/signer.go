// Package signer issues each spoke's argocd-agent client certificate through OCM's addon
// registration, so that no one hands certificates around: for every cluster in Argo CD
// Agent mode the addon registers a second client certificate with a signer of ours; the
// klusterlet's registration agent sends the certificate request to the hub, the manager
// approves it after checking who asks and for which identity, signs it with the
// argocd-agent-ca of the cluster's GitOpsCluster, and the registration agent renews it
// before it expires.
package signer

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

const (
	// SignerName is the signer of Argo CD Agent client certificates.
	SignerName = "gitops-addon.open-cluster-management.io/argocd-agent"
	// Group is the organization of every argocd-agent certificate.
	Group = "gitops-addon:argocd-agents"
	// DefaultLifetime is how long an argocd-agent certificate is valid; OCM's
	// registration agent renews it before then.
	DefaultLifetime = 24 * time.Hour
	// PrincipalAuth is the principal's mTLS authentication setting that reads the
	// argocd-agent's name out of these certificates: their common name is the cluster's name.
	PrincipalAuth = "mtls:CN=([^,]+)"
)

// Signer decides, approves and signs the Argo CD Agent client certificates.
type Signer struct {
	// Reader reads GitOpsClusters (the manager's cache).
	Reader client.Reader
	// CAs reads the argocd-agent-ca Secret of an Argo CD namespace.
	CAs interface {
		ReadCA(ctx context.Context, namespace string) (*corev1.Secret, error)
	}
	// Lifetime of an issued certificate; 0 means DefaultLifetime.
	Lifetime time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// argoCDAgentMode is the cluster's Argo CD Agent mode as its GitOpsCluster wrote it on
// the ManagedClusterAddOn; "" when Argo CD Agent mode is off.
func argoCDAgentMode(addon *addonv1beta1.ManagedClusterAddOn) string {
	if settings := contract.SettingsOf(addon.Annotations).ArgoCDAgent; settings != nil {
		return settings.Mode
	}
	return ""
}

// registration is the client certificate the argocd-agent of a cluster in Argo CD Agent
// mode gets.
func registration(cluster string) *agent.CustomSignerRegistration {
	return &agent.CustomSignerRegistration{SignerName: SignerName, User: cluster, Groups: []string{Group}}
}

// Configurations adds the argocd-agent certificate to the base registrations of a
// cluster in Argo CD Agent mode.
func Configurations(base agent.RegistrationConfigurationsFunc) agent.RegistrationConfigurationsFunc {
	return func(ctx context.Context, cluster *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn) ([]agent.RegistrationConfig, error) {
		configs, err := base(ctx, cluster, addon)
		if err != nil || argoCDAgentMode(addon) == "" {
			return configs, err
		}
		return append(configs, registration(cluster.Name)), nil
	}
}

// Approve approves the requests of our signer after its own checks and passes every
// other request to base.
func Approve(base agent.CSRApproveFunc) agent.CSRApproveFunc {
	return func(ctx context.Context, cluster *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn,
		csr *certificatesv1.CertificateSigningRequest) bool {
		if csr.Spec.SignerName != SignerName {
			return base(ctx, cluster, addon, csr)
		}
		if _, err := check(cluster.Name, addon, csr); err != nil {
			ctrl.LoggerFrom(ctx).Info("not approving an Argo CD Agent certificate request", "csr", csr.Name, "cluster", cluster.Name, "reason", err.Error())
			return false
		}
		return true
	}
}

// check tells why a request of our signer must not be approved: the cluster is not in
// Argo CD Agent mode, the request does not come from that cluster's registration agent, or it
// asks for another identity than the cluster's. It returns the parsed request.
func check(cluster string, addon *addonv1beta1.ManagedClusterAddOn, csr *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, error) {
	if argoCDAgentMode(addon) == "" {
		return nil, errors.New("the cluster is not in Argo CD Agent mode")
	}
	// A klusterlet authenticates as system:open-cluster-management:<cluster>:<agent id>;
	// the separator matters: cluster "a" must not pass for cluster "a-b".
	if !strings.HasPrefix(csr.Spec.Username, "system:open-cluster-management:"+cluster+":") {
		return nil, fmt.Errorf("requested by %q, not by the registration agent of cluster %s", csr.Spec.Username, cluster)
	}
	req, err := parseRequest(csr)
	if err != nil {
		return nil, err
	}
	if req.Subject.CommonName != cluster {
		return nil, fmt.Errorf("asks for common name %q: an argocd-agent's certificate names its own cluster, %s", req.Subject.CommonName, cluster)
	}
	if !slices.Equal(req.Subject.Organization, []string{Group}) {
		return nil, fmt.Errorf("asks for organizations %v, not [%s]", req.Subject.Organization, Group)
	}
	// OCM's registration agent puts one DNS name in every addon request
	// (<addon>.addon.open-cluster-management.io); anything else is not ours to sign.
	ocmName := addon.Name + ".addon.open-cluster-management.io"
	for _, name := range req.DNSNames {
		if name != ocmName {
			return nil, fmt.Errorf("asks for DNS name %q; a client certificate needs none but OCM's own %s", name, ocmName)
		}
	}
	if len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return nil, errors.New("asks for IP, email or URI subject alternative names, which a client certificate does not need")
	}
	for _, usage := range csr.Spec.Usages {
		if usage != certificatesv1.UsageClientAuth && usage != certificatesv1.UsageDigitalSignature && usage != certificatesv1.UsageKeyEncipherment {
			return nil, fmt.Errorf("asks for usage %q; only client auth is signed", usage)
		}
	}
	return req, nil
}

func parseRequest(csr *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("holds no PEM certificate request")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate request: %w", err)
	}
	return req, nil
}

// Sign signs an approved request of our signer with the argocd-agent-ca of the cluster's
// GitOpsCluster; the checks are made again, since anyone allowed to approve could have
// approved it.
func (s *Signer) Sign(
	ctx context.Context,
	cluster *clusterv1.ManagedCluster,
	addon *addonv1beta1.ManagedClusterAddOn,
	csr *certificatesv1.CertificateSigningRequest,
) ([]byte, error) {
	if csr.Spec.SignerName != SignerName {
		return nil, fmt.Errorf("signer %s is not gitops-addon's", csr.Spec.SignerName)
	}
	req, err := check(cluster.Name, addon, csr)
	if err != nil {
		return nil, fmt.Errorf("refusing to sign %s: %w", csr.Name, err)
	}
	namespace, err := s.caNamespace(ctx, addon)
	if err != nil {
		return nil, fmt.Errorf("signing %s for cluster %s: %w", csr.Name, cluster.Name, err)
	}
	ca, err := s.CAs.ReadCA(ctx, namespace)
	if err != nil {
		return nil, err
	}
	if ca == nil {
		return nil, fmt.Errorf("signing %s for cluster %s: Secret %s/%s does not exist yet", csr.Name, cluster.Name, namespace, pki.CASecret)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	lifetime := s.Lifetime
	if lifetime <= 0 {
		lifetime = DefaultLifetime
	}
	return signClientRequest(ca, req, now(), lifetime)
}

// signClientRequest signs req with the CA of caSecret, which must hold a CA and its key
// that has not expired.
func signClientRequest(caSecret *corev1.Secret, req *x509.CertificateRequest, now time.Time, lifetime time.Duration) ([]byte, error) {
	ca, err := pki.ParsePair(caSecret.Data[corev1.TLSCertKey], caSecret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", caSecret.Namespace, caSecret.Name, err)
	}
	if !ca.CanSign() {
		return nil, fmt.Errorf("secret %s/%s must hold a CA certificate and its key (tls.crt, tls.key) to sign argocd-agent certificates",
			caSecret.Namespace, caSecret.Name)
	}
	if !now.Before(ca.Certificate().NotAfter) {
		return nil, fmt.Errorf("the CA of Secret %s/%s expired on %s", caSecret.Namespace, caSecret.Name, ca.Certificate().NotAfter.Format(time.RFC3339))
	}
	return pki.SignClientRequest(ca, req, now, lifetime)
}

// caNamespace is the Argo CD namespace of the GitOpsCluster that created the cluster's
// ManagedClusterAddOn, which must be in Argo CD Agent mode: the spec decides which CA signs, never
// an annotation alone.
func (s *Signer) caNamespace(ctx context.Context, addon *addonv1beta1.ManagedClusterAddOn) (string, error) {
	owner, ok := ownership.KeyOf(addon)
	if !ok {
		return "", errors.New("its ManagedClusterAddOn was not created by a GitOpsCluster")
	}
	gc := &appsv1beta1.GitOpsCluster{}
	if err := s.Reader.Get(ctx, owner, gc); err != nil {
		return "", fmt.Errorf("reading GitOpsCluster %s: %w", owner, err)
	}
	if !gc.ArgoCDAgentEnabled() {
		return "", fmt.Errorf("GitOpsCluster %s is not in Argo CD Agent mode", owner)
	}
	return gc.ArgoNamespace(), nil
}
