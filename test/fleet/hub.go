package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// hubNamespace is where the cluster-manager runs OCM's hub components.
const hubNamespace = "open-cluster-management-hub"

// bootstrapGroup is the group of every spoke's bootstrap identity.
const bootstrapGroup = "system:bootstrappers:managedcluster"

// Hub CRDs: every OCM API the hub components serve, from the pinned api module.
var hubCRDDirs = []string{"cluster/v1", "cluster/v1alpha1", "cluster/v1beta1", "cluster/v1beta2", "addon/v1beta1", "addon/v1alpha1", "work/v1", "work/v1alpha1"}

// Spoke CRDs: what the klusterlet reads and writes on its own cluster.
var spokeCRDNames = map[string]bool{"clusterclaims.cluster.open-cluster-management.io": true, "appliedmanifestworks.work.open-cluster-management.io": true}

func (f *Fleet) startHubComponents(ctx context.Context) error {
	hub := f.Hub
	f.opts.Logf("hub: OCM CRDs, webhooks (registration, work, addon conversion)")
	if err := f.startWebhooks(ctx); err != nil {
		return err
	}
	crds, err := ocmCRDs(func(string) bool { return true })
	if err != nil {
		return err
	}
	f.wireConversionWebhook(crds)
	if err := installCRDs(ctx, hub, crds); err != nil {
		return err
	}
	if err := f.registerAdmissionWebhooks(ctx); err != nil {
		return err
	}
	if err := createNamespace(ctx, hub, hubNamespace); err != nil {
		return err
	}
	if err := createBootstrapRBAC(ctx, hub); err != nil {
		return err
	}
	f.opts.Logf("hub: registration controller, placement controller, addon-manager")
	common := []string{"--kubeconfig=" + hub.Kubeconfig, "--namespace=" + hubNamespace, "--disable-leader-election"}
	for _, c := range []struct{ name, bin, sub string }{
		{"registration-controller", "ocm-registration", "controller"},
		{"placement-controller", "ocm-placement", "controller"},
		{"addon-manager", "ocm-addon", "manager"},
	} {
		args := append([]string{filepath.Join(f.opts.BinDir, c.bin), c.sub, "--listen=127.0.0.1:" + strconv.Itoa(freePort())}, common...)
		if _, err := f.start("hub-"+c.name, args); err != nil {
			return err
		}
	}
	return waitDefaultClusterSet(ctx, hub)
}

// ocmCRDs reads the OCM CRDs of the api module, each name once.
func ocmCRDs(keep func(name string) bool) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	root := filepath.Dir(filepath.Dir(filepath.Dir(testenv.OCMCRDPaths()[0]))) // <api>/cluster/v1/x.yaml -> <api>
	seen := map[string]bool{}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, d := range hubCRDDirs {
		files, err := filepath.Glob(filepath.Join(root, d, "*.crd.yaml"))
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(b, crd); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", file, err)
			}
			if seen[crd.Name] || !keep(crd.Name) {
				continue
			}
			seen[crd.Name] = true
			out = append(out, crd)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no OCM CRD found under %s", root)
	}
	return out, nil
}

// wireConversionWebhook points the addon CRDs that serve two versions at ocm's
// conversion webhook, as the cluster-manager operator does.
func (f *Fleet) wireConversionWebhook(crds []*apiextensionsv1.CustomResourceDefinition) {
	for _, crd := range crds {
		if crd.Spec.Group != "addon.open-cluster-management.io" || len(crd.Spec.Versions) < 2 {
			continue
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(f.webhookURL("/convert")), CABundle: f.Hub.ca.CertPEM},
				ConversionReviewVersions: []string{"v1", "v1beta1"},
			},
		}
	}
}

func (f *Fleet) webhookURL(path string) string {
	return "https://127.0.0.1:" + strconv.Itoa(f.webhookPort) + path
}

func installCRDs(ctx context.Context, c *Cluster, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		crd = crd.DeepCopy()
		if err := client.IgnoreAlreadyExists(c.Client.Create(ctx, crd)); err != nil {
			return fmt.Errorf("creating CRD %s on %s: %w", crd.Name, c.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s on %s is not established: %w", crd.Name, c.Name, err)
		}
	}
	return nil
}

// startWebhooks runs ocm-webhooks with a serving certificate from the hub CA.
func (f *Fleet) startWebhooks(ctx context.Context) error {
	dir := filepath.Join(f.Hub.Dir, "webhook-certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	certFile, keyFile, err := f.Hub.ca.issue(dir, "serving", "ocm-webhooks", nil, true)
	if err != nil {
		return err
	}
	// controller-runtime's webhook server reads tls.crt and tls.key.
	if err := os.Rename(certFile, filepath.Join(dir, "tls.crt")); err != nil {
		return err
	}
	if err := os.Rename(keyFile, filepath.Join(dir, "tls.key")); err != nil {
		return err
	}
	f.webhookPort = freePort()
	p, err := f.start("hub-ocm-webhooks", []string{
		filepath.Join(f.opts.BinDir, "ocm-webhooks"), "--port=" + strconv.Itoa(f.webhookPort), "--certdir=" + dir,
	}, "KUBECONFIG="+f.Hub.Kubeconfig)
	if err != nil {
		return err
	}
	if err := waitTLS(ctx, "127.0.0.1:"+strconv.Itoa(f.webhookPort), f.Hub.ca.CertPEM, 60*time.Second); err != nil {
		return p.failed(fmt.Errorf("the OCM webhooks are not serving: %w", err))
	}
	return nil
}

// registerAdmissionWebhooks registers ocm's registration and work admission webhooks, as
// the cluster-manager operator does, reached by URL on loopback.
func (f *Fleet) registerAdmissionWebhooks(ctx context.Context) error {
	rule := func(group string, versions []string, resource string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: versions, Resources: []string{resource}},
		}}
	}
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(f.webhookURL(path)), CABundle: f.Hub.ca.CertPEM}
	}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "ocm-hub-validators"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "managedclustervalidators.admission.cluster.open-cluster-management.io", SideEffects: none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: clientConfig("/validate-cluster-open-cluster-management-io-v1-managedcluster"),
				Rules:        rule("cluster.open-cluster-management.io", []string{"*"}, "managedclusters")},
			{Name: "managedclustersetbindingvalidators.admission.cluster.open-cluster-management.io", SideEffects: none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: clientConfig("/validate-cluster-open-cluster-management-io-v1beta2-managedclustersetbinding"),
				Rules:        rule("cluster.open-cluster-management.io", []string{"v1beta2"}, "managedclustersetbindings")},
			{Name: "manifestworkvalidators.admission.work.open-cluster-management.io", SideEffects: none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: clientConfig("/validate-work-open-cluster-management-io-v1-manifestwork"),
				Rules:        rule("work.open-cluster-management.io", []string{"*"}, "manifestworks")},
		},
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "ocm-hub-mutators"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "managedclustermutators.admission.cluster.open-cluster-management.io", SideEffects: none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: clientConfig("/mutate-cluster-open-cluster-management-io-v1-managedcluster"),
				Rules:        rule("cluster.open-cluster-management.io", []string{"*"}, "managedclusters")},
		},
	}
	for _, obj := range []client.Object{validating, mutating} {
		if err := f.Hub.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("registering the OCM admission webhooks: %w", err)
		}
	}
	return nil
}

// createBootstrapRBAC is the cluster-manager's bootstrap role: what a joining klusterlet
// may do before the hub accepts it.
func createBootstrapRBAC(ctx context.Context, hub *Cluster) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:bootstrap"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
			{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "create", "list", "watch"}},
			{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersets/join"}, Verbs: []string{"create"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:bootstrap:managedcluster"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: bootstrapGroup}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := client.IgnoreAlreadyExists(hub.Client.Create(ctx, obj)); err != nil {
			return fmt.Errorf("creating the bootstrap RBAC: %w", err)
		}
	}
	return nil
}

func createNamespace(ctx context.Context, c *Cluster, name string) error {
	err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err = client.IgnoreAlreadyExists(err); err != nil {
		return fmt.Errorf("creating namespace %s on %s: %w", name, c.Name, err)
	}
	return nil
}

// waitDefaultClusterSet waits for the registration controller's default ManagedClusterSet.
func waitDefaultClusterSet(ctx context.Context, hub *Cluster) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u := &clusterSet{}
		return hub.Client.Get(ctx, client.ObjectKey{Name: "default"}, u.obj()) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the registration controller did not create the default ManagedClusterSet: %w", err)
	}
	return nil
}

// waitTCP waits until addr accepts connections.
func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
}

// waitTLS waits until addr completes a TLS handshake with a certificate of caPEM.
func waitTLS(ctx context.Context, addr string, caPEM []byte, timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: strings.Split(addr, ":")[0], MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
}
