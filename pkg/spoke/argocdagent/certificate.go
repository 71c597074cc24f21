// Package argocdagent is the spoke side of Argo CD Agent mode: what the agent does for
// argocd-agent, the Argo CD Agent on its cluster.
//
// It hands argocd-agent its client certificate. OCM's registration agent keeps the
// certificate the hub signed (and renews it) in a Secret of the addon's namespace;
// argocd-agent reads its own Secret, argocd-agent-client-tls in the Argo CD namespace,
// once, when it starts. So the agent copies the certificate there on every issue and
// renewal, and restarts argocd-agent (a rollout of its Deployment, through a pod template
// annotation) so that it presents the new one: nobody has to (CertificateReconciler).
//
// It reports whether argocd-agent is connected to the hub's principal. argocd-agent keeps
// no Kubernetes object that says so: its only signal is its health endpoint, which answers
// 200 while it is connected to the principal and 503 while it is not. So this is a probe,
// like the kubelet's: one request per interval, and a write to the hub only when the
// answer changes (Prober).
//
// Out of Argo CD Agent mode it removes what it kept there (Retirement).
package argocdagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
)

const (
	// ClientTLSSecret is the Secret argocd-agent reads its client certificate from.
	ClientTLSSecret = "argocd-agent-client-tls" //nolint:gosec // G101: a Secret's name, not a credential
	// AnnotationCertificate, on argocd-agent's pod template, is the fingerprint of the
	// certificate it was started with; changing it restarts argocd-agent.
	AnnotationCertificate = "gitops-addon.open-cluster-management.io/argocd-agent-client-certificate"
	// ConditionCertificate reports, on the ManagedClusterAddOn, the certificate
	// argocd-agent has.
	ConditionCertificate = contract.ConditionArgoCDAgentCertificate
)

// SourceSecretName is the Secret in which OCM's registration agent keeps the certificate
// of signer for addon (ocm pkg/registration/spoke/addon: "<addon>-<signer, / as ->-client-cert").
func SourceSecretName(addon, signer string) string {
	return addon + "-" + strings.ReplaceAll(signer, "/", "-") + "-client-cert"
}

// Deployment is the Deployment the GitOps operator renders for argocd-agent from the
// ArgoCD CR named argoCD ("<name>-agent-agent").
func Deployment(argoCD string) string { return argoCD + "-agent-agent" }

// ServiceAccount is argocd-agent's ServiceAccount, which the GitOps operator names as its
// Deployment.
func ServiceAccount(argoCD string) string { return Deployment(argoCD) }

// CertificateOptions configures the certificate controller.
type CertificateOptions struct {
	// SourceNamespace and SourceSecret hold OCM's copy of the certificate.
	SourceNamespace, SourceSecret string
	// ArgoNamespace is where argocd-agent runs and reads ClientTLSSecret.
	ArgoNamespace string
	// Deployment is argocd-agent's Deployment in ArgoNamespace.
	Deployment string
	// ArgoCD is the ArgoCD instance in ArgoNamespace that runs argocd-agent: the
	// certificate is written only while it exists and is not being deleted.
	ArgoCD string
	// Report receives ConditionCertificate.
	Report *addonstatus.Report
}

// CacheByObject narrows the manager's cache to the three objects the controller reads:
// the agent's RBAC grants it these by name only.
func (o CertificateOptions) CacheByObject() map[client.Object]cache.ByObject {
	byName := func(name string) cache.Config {
		return cache.Config{FieldSelector: fields.OneTermEqualSelector("metadata.name", name)}
	}
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{
			o.SourceNamespace: byName(o.SourceSecret),
			o.ArgoNamespace:   byName(ClientTLSSecret),
		}},
		&appsv1.Deployment{}: {Namespaces: map[string]cache.Config{o.ArgoNamespace: byName(o.Deployment)}},
	}
}

// CertificateReconciler keeps ClientTLSSecret equal to OCM's certificate and argocd-agent
// started with it.
type CertificateReconciler struct {
	Client client.Client
	// APIReader reads the ArgoCD instance uncached, only before a write: its CRD may not
	// be served yet when the agent starts, which a cache would wait for.
	APIReader client.Reader
	CertificateOptions
}

// errInstanceAbsent: the ArgoCD instance is missing or being deleted, so nothing runs
// argocd-agent; the spoke's teardown deletes ClientTLSSecret then, which must stay deleted.
var errInstanceAbsent = errors.New("no ArgoCD instance to run argocd-agent")

// waitForInstance is how soon a hand-over held for a missing instance is tried again.
const waitForInstance = 10 * time.Second

// SetupWithManager registers the controller: one reconcile at start (so that a missing
// certificate is reported too), and one on any change of the three objects.
func (r *CertificateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.SourceNamespace, Name: r.SourceSecret}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{key}
	})
	atStart := source.Func(func(_ context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		queue.Add(key)
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("argocd-agent-certificate").
		Watches(&corev1.Secret{}, one).
		Watches(&appsv1.Deployment{}, one).
		WatchesRawSource(atStart).
		Complete(r)
}

// Reconcile copies the certificate and restarts argocd-agent when it changed, and says
// so on the report.
func (r *CertificateReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	source := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.SourceNamespace, Name: r.SourceSecret}, source)
	if apierrors.IsNotFound(err) || (err == nil && (len(source.Data[corev1.TLSCertKey]) == 0 || len(source.Data[corev1.TLSPrivateKeyKey]) == 0)) {
		r.report(metav1.ConditionFalse, contract.ReasonWaitingForCertificate, fmt.Sprintf(
			"Waiting for OCM's registration agent to write the certificate the hub signs into Secret %s/%s (the hub approves it once the GitOpsCluster's "+
				"argocd-agent-ca exists).",
			r.SourceNamespace, r.SourceSecret))
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, r.fail(fmt.Errorf("reading Secret %s/%s: %w", r.SourceNamespace, r.SourceSecret, err))
	}
	cert, err := parseCertificate(source.Data[corev1.TLSCertKey])
	if err != nil {
		return reconcile.Result{}, r.fail(fmt.Errorf("secret %s/%s: %w", r.SourceNamespace, r.SourceSecret, err))
	}
	if err := r.ensureClientTLS(ctx, source); errors.Is(err, errInstanceAbsent) {
		r.report(metav1.ConditionFalse, contract.ReasonNoArgoCDInstance, fmt.Sprintf(
			"ArgoCD %s/%s is missing or being deleted: the certificate is not handed to argocd-agent until it is there.", r.ArgoNamespace, r.ArgoCD))
		return reconcile.Result{RequeueAfter: waitForInstance}, nil
	} else if err != nil {
		return reconcile.Result{}, r.fail(err)
	}
	restarted, err := r.ensureStartedWith(ctx, fingerprint(source.Data[corev1.TLSCertKey]))
	if err != nil {
		return reconcile.Result{}, r.fail(err)
	}
	r.report(metav1.ConditionTrue, contract.ReasonCertificateInPlace, fmt.Sprintf("Certificate for %s issued by %s, valid until %s, in Secret %s/%s; %s.",
		cert.Subject.CommonName, cert.Issuer.CommonName, cert.NotAfter.UTC().Format(time.RFC3339), r.ArgoNamespace, ClientTLSSecret, restarted))
	return reconcile.Result{}, nil
}

// ensureClientTLS writes OCM's certificate and key into ClientTLSSecret when they differ.
func (r *CertificateReconciler) ensureClientTLS(ctx context.Context, source *corev1.Secret) error {
	want := map[string][]byte{corev1.TLSCertKey: source.Data[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: source.Data[corev1.TLSPrivateKeyKey]}
	current := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.ArgoNamespace, Name: ClientTLSSecret}, current)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.instancePresent(ctx); err != nil {
			return err
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.ArgoNamespace, Name: ClientTLSSecret,
				Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByValue}},
			Type: corev1.SecretTypeTLS,
			Data: want,
		}
		if err := r.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", r.ArgoNamespace, ClientTLSSecret, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading Secret %s/%s: %w", r.ArgoNamespace, ClientTLSSecret, err)
	}
	if current.Labels[contract.LabelManagedBy] != contract.ManagedByValue {
		return fmt.Errorf("secret %s/%s exists and was not created by gitops-addon: it is left as it is and argocd-agent uses it. "+
			"Fix: delete it to let gitops-addon keep the certificate OCM issues there", r.ArgoNamespace, ClientTLSSecret)
	}
	if bytes.Equal(current.Data[corev1.TLSCertKey], want[corev1.TLSCertKey]) &&
		bytes.Equal(current.Data[corev1.TLSPrivateKeyKey], want[corev1.TLSPrivateKeyKey]) {
		return nil
	}
	if err := r.instancePresent(ctx); err != nil {
		return err
	}
	current.Data = want
	if err := r.Client.Update(ctx, current); err != nil {
		return fmt.Errorf("updating Secret %s/%s with the renewed certificate: %w", r.ArgoNamespace, ClientTLSSecret, err)
	}
	return nil
}

// instancePresent returns errInstanceAbsent unless the ArgoCD instance exists and is not
// being deleted.
func (r *CertificateReconciler) instancePresent(ctx context.Context) error {
	instance := &metav1.PartialObjectMetadata{}
	instance.SetGroupVersionKind(contract.ArgoCDGVK)
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: r.ArgoNamespace, Name: r.ArgoCD}, instance)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return errInstanceAbsent
	case err != nil:
		return fmt.Errorf("reading ArgoCD %s/%s: %w", r.ArgoNamespace, r.ArgoCD, err)
	case !instance.DeletionTimestamp.IsZero():
		return errInstanceAbsent
	}
	return nil
}

// ensureStartedWith restarts argocd-agent when its pod template does not carry the
// certificate's fingerprint (argocd-agent reads its certificate only when it starts), and
// says what it did.
func (r *CertificateReconciler) ensureStartedWith(ctx context.Context, print string) (string, error) {
	d := &appsv1.Deployment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.ArgoNamespace, Name: r.Deployment}, d)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("argocd-agent (Deployment %s) is not deployed yet and will start with it", r.Deployment), nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Deployment %s/%s: %w", r.ArgoNamespace, r.Deployment, err)
	}
	if d.Spec.Template.Annotations[AnnotationCertificate] == print {
		return "argocd-agent runs with it", nil
	}
	// A merge patch of one annotation: the operator owns the rest of the Deployment and
	// does not reconcile pod template annotations, so nobody fights over it.
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, AnnotationCertificate, print))
	if err := r.Client.Patch(ctx, d, patch); err != nil {
		return "", fmt.Errorf("restarting argocd-agent (Deployment %s/%s) onto the new certificate: %w", r.ArgoNamespace, r.Deployment, err)
	}
	ctrl.LoggerFrom(ctx).Info("restarted argocd-agent onto its new client certificate", "deployment", r.Deployment, "fingerprint", print)
	return "argocd-agent restarted onto it", nil
}

func (r *CertificateReconciler) fail(err error) error {
	r.report(metav1.ConditionFalse, contract.ReasonCertificateFailed, err.Error()+".")
	return err
}

func (r *CertificateReconciler) report(status metav1.ConditionStatus, reason, message string) {
	if r.Report != nil {
		r.Report.Set(metav1.Condition{Type: ConditionCertificate, Status: status, Reason: reason, Message: message})
	}
}

func parseCertificate(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("tls.crt holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing tls.crt: %w", err)
	}
	return cert, nil
}

// fingerprint is a short SHA-256 of a certificate, for the pod template annotation.
func fingerprint(certPEM []byte) string {
	sum := sha256.Sum256(certPEM)
	return hex.EncodeToString(sum[:12])
}
