package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const (
	// HubNamespace is where a cluster-manager runs OCM's hub components (the addon
	// manager looks for AddOnTemplate resources there).
	HubNamespace = "open-cluster-management-hub"
	// BootstrapGroup is the group of every spoke's bootstrap identity, bound to
	// BootstrapClusterRole, as the cluster-manager chart binds its bootstrap token.
	BootstrapGroup = "system:bootstrappers:managedcluster"
	// BootstrapClusterRole is what a joining klusterlet may do before it is accepted.
	BootstrapClusterRole = "open-cluster-management:bootstrap"
)

// hubCRDFiles are the OCM CRDs a cluster-manager installs, from the api module (paths
// relative to it). The addon CRDs come from addon/v1beta1: they store v1alpha1 and serve
// v1beta1 too, converted by OCM's addon webhook.
var hubCRDFiles = []string{
	"cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml",
	"cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml",
	"cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml",
	"cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml",
	"cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml",
	"cluster/v1alpha1/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml",
	"addon/v1beta1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml",
	"addon/v1beta1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml",
	"addon/v1beta1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml",
	"addon/v1alpha1/0000_03_addon.open-cluster-management.io_addontemplates.crd.yaml",
	"work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml",
	"work/v1alpha1/0000_00_work.open-cluster-management.io_manifestworkreplicasets.crd.yaml",
}

// conversionWebhookCRDs are the CRDs the cluster-manager wires to the addon conversion
// webhook (path /convert), as OCM's own manifests do; the others convert with None.
var conversionWebhookCRDs = map[string]bool{
	"clustermanagementaddons.addon.open-cluster-management.io": true,
	"managedclusteraddons.addon.open-cluster-management.io":    true,
}

func (f *Fleet) startHubComponents(ctx context.Context) error {
	hub := f.Hub
	for _, ns := range []string{HubNamespace, "open-cluster-management"} {
		if err := createNamespace(ctx, hub, ns); err != nil {
			return err
		}
	}
	f.opts.Logf("hub: OCM webhook server (registration, work, addon conversion)")
	if err := f.startWebhookServer(ctx); err != nil {
		return err
	}
	f.opts.Logf("hub: OCM CRDs, webhook configurations, bootstrap RBAC")
	crds, err := loadCRDs(hubCRDFiles)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if conversionWebhookCRDs[crd.Name] {
			crd.Spec.Conversion = f.conversionWebhook()
		}
	}
	if err := hub.InstallCRDs(ctx, crds); err != nil {
		return err
	}
	if err := f.registerAdmissionWebhooks(ctx); err != nil {
		return err
	}
	if err := createBootstrapRBAC(ctx, hub); err != nil {
		return err
	}
	if err := f.checkConversion(ctx); err != nil {
		return err
	}
	f.opts.Logf("hub: OCM registration controller, placement controller, addon manager")
	return f.startHubControllers(ctx)
}

// loadCRDs reads CRD files of the open-cluster-management.io/api module of go.mod.
func loadCRDs(files []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	// OCMCRDPaths()[0] is <api module>/cluster/v1/<file>.
	apiDir := filepath.Dir(filepath.Dir(filepath.Dir(testenv.OCMCRDPaths()[0])))
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, rel := range files {
		file := filepath.Join(apiDir, rel)
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading CRD: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD %s: %w", file, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// InstallCRDs creates the CRDs that are not there yet and waits until each is
// Established: only then does the apiserver serve its kind (on a loaded 2-core machine
// that took more than 30 s for Argo CD's large CRDs).
func (c *Cluster) InstallCRDs(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		if err := client.IgnoreAlreadyExists(c.Client.Create(ctx, crd.DeepCopy())); err != nil {
			return fmt.Errorf("creating CRD %s on %s: %w", crd.Name, c.Name, err)
		}
	}
	for _, crd := range crds {
		err := poll(ctx, "CRD "+crd.Name+" established on "+c.Name, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, string) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, err.Error()
			}
			if apihelpers.IsCRDConditionTrue(got, apiextensionsv1.Established) {
				return true, ""
			}
			return false, "not established"
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startWebhookServer runs ocm-webhooks on a free port of 127.0.0.1 with a serving
// certificate of the fleet's CA, and waits until it serves TLS.
func (f *Fleet) startWebhookServer(ctx context.Context) error {
	dir := filepath.Join(f.Hub.Dir, "webhook-serving")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	// controller-runtime's webhook server reads tls.crt and tls.key from --certdir.
	if _, err := f.servingCA.serving(dir, "tls"); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	f.webhookPort = port
	p, err := f.run("hub-ocm-webhooks", []string{
		f.bin("ocm-webhooks"), "--port=" + strconv.Itoa(f.webhookPort), "--certdir=" + dir,
	}, []string{"KUBECONFIG=" + f.Hub.Kubeconfig}, tierClient)
	if err != nil {
		return err
	}
	if err := waitTLS(ctx, "the OCM webhook server", loopback(f.webhookPort), f.servingCA.CertPEM, time.Minute); err != nil {
		return p.explain(err)
	}
	return nil
}

func (f *Fleet) webhookURL(path string) *string {
	return ptr.To("https://" + loopback(f.webhookPort) + path)
}

func (f *Fleet) conversionWebhook() *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: f.webhookURL("/convert"), CABundle: f.servingCA.CertPEM},
			ConversionReviewVersions: []string{"v1", "v1beta1"},
		},
	}
}

// registerAdmissionWebhooks registers what the cluster-manager registers (its manifests
// under cluster-manager/hub/{registration,work}), reached by URL instead of a Service.
func (f *Fleet) registerAdmissionWebhooks(ctx context.Context) error {
	hook := func(path, group string, versions []string, resource string) (
		admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations) {
		return admissionregistrationv1.WebhookClientConfig{URL: f.webhookURL(path), CABundle: f.servingCA.CertPEM},
			[]admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: versions, Resources: []string{resource}},
			}}
	}
	validating := func(name, path, group string, versions []string, resource string) client.Object {
		cc, rules := hook(path, group, versions, resource)
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: name, ClientConfig: cc, Rules: rules, FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1beta1", "v1"},
				TimeoutSeconds: ptr.To[int32](10),
			}},
		}
	}
	cc, rules := hook("/mutate-cluster-open-cluster-management-io-v1-managedcluster", "cluster.open-cluster-management.io", []string{"*"}, "managedclusters")
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "managedclustermutators.admission.cluster.open-cluster-management.io"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "managedclustermutators.admission.cluster.open-cluster-management.io", ClientConfig: cc, Rules: rules,
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1beta1", "v1"}, TimeoutSeconds: ptr.To[int32](10),
		}},
	}
	objs := []client.Object{
		validating("managedclustervalidators.admission.cluster.open-cluster-management.io",
			"/validate-cluster-open-cluster-management-io-v1-managedcluster", "cluster.open-cluster-management.io", []string{"*"}, "managedclusters"),
		validating(
			"managedclustersetbindingvalidators.admission.cluster.open-cluster-management.io",
			"/validate-cluster-open-cluster-management-io-v1beta2-managedclustersetbinding",
			"cluster.open-cluster-management.io",
			[]string{"v1beta2"},
			"managedclustersetbindings",
		),
		validating("manifestworkvalidators.admission.work.open-cluster-management.io",
			"/validate-work-open-cluster-management-io-v1-manifestwork", "work.open-cluster-management.io", []string{"*"}, "manifestworks"),
		mutating,
	}
	for _, obj := range objs {
		if err := f.Hub.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("registering admission webhook %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

// createBootstrapRBAC is the cluster-manager chart's bootstrap role and binding: a
// joining klusterlet may create its ManagedCluster and CSRs, and join the default set.
func createBootstrapRBAC(ctx context.Context, hub *Cluster) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: BootstrapClusterRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
			{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "create", "list", "watch"}},
			{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersets/join"}, Verbs: []string{"create"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: BootstrapClusterRole + ":managedcluster"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: BootstrapGroup}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := client.IgnoreAlreadyExists(hub.Client.Create(ctx, obj)); err != nil {
			return fmt.Errorf("creating the bootstrap RBAC %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

// checkConversion writes and reads a ClusterManagementAddOn as v1beta1: kube-apiserver
// converts it to and from the v1alpha1 storage version through the webhook, so a broken
// wiring fails here, with the webhook server's log, rather than later in a test. The hub
// controllers do not run yet, so the object leaves no trace.
func (f *Fleet) checkConversion(ctx context.Context) error {
	key := client.ObjectKey{Name: "harness-conversion-check"}
	err := poll(ctx, "the addon conversion webhook", 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, string) {
		cma := &addonv1beta1.ClusterManagementAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name},
			Spec:       addonv1beta1.ClusterManagementAddOnSpec{InstallStrategy: addonv1beta1.InstallStrategy{Type: addonv1beta1.AddonInstallStrategyManual}},
		}
		if err := client.IgnoreAlreadyExists(f.Hub.Client.Create(ctx, cma)); err != nil {
			return false, "creating: " + err.Error()
		}
		if err := f.Hub.Client.Get(ctx, key, cma); err != nil {
			return false, "reading: " + err.Error()
		}
		if err := f.Hub.Client.Delete(ctx, cma); err != nil {
			return false, "deleting: " + err.Error()
		}
		return true, ""
	})
	if err != nil {
		return f.process("hub-ocm-webhooks").explain(err)
	}
	return nil
}

// startHubControllers runs OCM's hub controllers as the hub administrator and waits
// until each is healthy and the registration controller made the default cluster sets.
func (f *Fleet) startHubControllers(ctx context.Context) error {
	for _, c := range []struct{ name, bin, command string }{
		{"registration-controller", "ocm-registration", "controller"},
		{"placement-controller", "ocm-placement", "controller"},
		{"addon-manager", "ocm-addon", "manager"},
	} {
		if _, err := f.runOCMComponent(ctx, "hub-"+c.name, f.Hub.Kubeconfig, HubNamespace, []string{f.bin(c.bin), c.command}); err != nil {
			return err
		}
	}
	return f.waitClusterSets(ctx)
}

// runOCMComponent runs one of OCM's library-go commands with its health endpoint on a
// free port of 127.0.0.1 and waits until /healthz answers 200. No leader election: one
// replica, and no 2-minute wait for a lease of a previous run.
func (f *Fleet) runOCMComponent(ctx context.Context, name, kubeconfig, namespace string, args []string) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args = append(args, "--kubeconfig="+kubeconfig, "--namespace="+namespace,
		"--listen="+loopback(port), "--disable-leader-election")
	p, err := f.run(name, args, nil, tierClient)
	if err != nil {
		return nil, err
	}
	if err := waitHTTPS(ctx, name+" /healthz", "https://"+loopback(port)+"/healthz", nil, 2*time.Minute); err != nil {
		return nil, p.explain(err)
	}
	return p, nil
}

// waitClusterSets waits for the "default" and "global" ManagedClusterSets the
// registration controller creates (feature gate DefaultClusterSet, on by default).
func (f *Fleet) waitClusterSets(ctx context.Context) error {
	for _, name := range []string{"default", "global"} {
		err := poll(ctx, "ManagedClusterSet "+name, 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, string) {
			err := f.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, &clusterv1beta2.ManagedClusterSet{})
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		if err != nil {
			return f.process("hub-registration-controller").explain(err)
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

// Process returns the fleet's process of that name (the latest if several): "etcd",
// "hub-kube-apiserver", "hub-addon-manager", ... as its log file is named.
func (f *Fleet) Process(name string) *Process { return f.process(name) }

// EtcdURL is the client URL of the fleet's etcd (its /metrics too).
func (f *Fleet) EtcdURL() string { return f.etcdURL }

// process returns the fleet's process of that name (the latest if several).
func (f *Fleet) process(name string) *Process {
	procs := f.Processes()
	for i := len(procs) - 1; i >= 0; i-- {
		if procs[i].Name == name {
			return procs[i]
		}
	}
	return newProcess(name, filepath.Join(f.WorkDir, "logs", name+".log"), nil, nil, tierClient)
}
