package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// AgentNamespace is where a klusterlet runs its agents and keeps its hub credential
	// (Secret hub-kubeconfig-secret) on a spoke.
	AgentNamespace = "open-cluster-management-agent"
	// AddonNamespace is the default install namespace of addon agents, which a
	// klusterlet creates.
	AddonNamespace = "open-cluster-management-agent-addon"
	// HubKubeconfigSecret is the registration agent's hub credential in AgentNamespace.
	HubKubeconfigSecret = "hub-kubeconfig-secret"

	// clusterNameLabel and addonNameLabel mark the CSRs of OCM's registration agent.
	clusterNameLabel = "open-cluster-management.io/cluster-name"
	addonNameLabel   = "open-cluster-management.io/addon-name"
)

// spokeCRDFiles are the CRDs a klusterlet installs on its cluster.
var spokeCRDFiles = []string{
	"cluster/v1alpha1/0000_02_clusters.open-cluster-management.io_clusterclaims.crd.yaml",
	"work/v1/0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml",
}

// Spoke is a managed cluster with its klusterlet, joined to the hub.
type Spoke struct {
	*Cluster
	// BootstrapKubeconfig is the klusterlet's bootstrap identity on the hub (group
	// BootstrapGroup).
	BootstrapKubeconfig string
	// HubKubeconfigDir holds the hub credential the registration agent obtained through
	// its CSR (kubeconfig, tls.crt, tls.key, cluster-name, agent-name), a copy of Secret
	// HubKubeconfigSecret; the work agent uses it.
	HubKubeconfigDir string
	// RegistrationAgent and WorkAgent are the klusterlet's processes.
	RegistrationAgent, WorkAgent *Process
}

// AddSpoke starts a cluster and its klusterlet and joins it to the hub through OCM's
// flow: the registration agent creates the ManagedCluster and a CSR with its bootstrap
// identity; the harness accepts the cluster (hubAcceptsClient) and approves the CSR, as
// `clusteradm accept` does; the hub's kube-controller-manager signs it. It returns once
// the ManagedCluster is accepted, joined and available. Spokes may be added concurrently.
func (f *Fleet) AddSpoke(ctx context.Context, name string) (*Spoke, error) {
	if err := f.reserveSpoke(name); err != nil {
		return nil, err
	}
	s, err := f.addSpoke(ctx, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.joining, name)
	if err != nil {
		return nil, fmt.Errorf("joining spoke %s: %w", name, err)
	}
	f.Spokes[name] = s
	return s, nil
}

// AddSpokes adds spokes in parallel and returns them in the order given.
func (f *Fleet) AddSpokes(ctx context.Context, names ...string) ([]*Spoke, error) {
	spokes := make([]*Spoke, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { spokes[i], errs[i] = f.AddSpoke(ctx, name) })
	}
	wg.Wait()
	return spokes, errors.Join(errs...)
}

// reserveSpoke claims the name, so that concurrent AddSpoke calls cannot both use it.
func (f *Fleet) reserveSpoke(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("spoke name %q: %v", name, errs)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, taken := f.Spokes[name]; taken || f.joining[name] || name == f.Hub.Name {
		return fmt.Errorf("spoke name %q is taken", name)
	}
	f.joining[name] = true
	return nil
}

func (f *Fleet) addSpoke(ctx context.Context, name string) (*Spoke, error) {
	f.opts.Logf("spoke %s: kube-apiserver and kube-controller-manager", name)
	c, err := f.startCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	return f.join(ctx, name, c, c.Dir)
}

// JoinHubAs registers the hub itself as a managed cluster named name, with a klusterlet
// on the hub's own apiserver, as every Red Hat ACM hub is registered as local-cluster.
// The Spoke it returns is the hub's cluster; it is not one of Spokes.
func (f *Fleet) JoinHubAs(ctx context.Context, name string) (*Spoke, error) {
	if err := f.reserveSpoke(name); err != nil {
		return nil, err
	}
	defer func() {
		f.mu.Lock()
		delete(f.joining, name)
		f.mu.Unlock()
	}()
	// The hub's cluster under the managed cluster's name, its klusterlet's files apart.
	view := *f.Hub
	view.Name, view.Dir = name, filepath.Join(f.Hub.Dir, "klusterlet-"+name)
	if err := os.MkdirAll(view.Dir, 0o700); err != nil {
		return nil, err
	}
	s, err := f.join(ctx, name, &view, view.Dir)
	if err != nil {
		return nil, fmt.Errorf("joining the hub as %s: %w", name, err)
	}
	return s, nil
}

// join runs a klusterlet for cluster c under name, its files in dir, and joins it.
func (f *Fleet) join(ctx context.Context, name string, c *Cluster, dir string) (*Spoke, error) {
	var err error
	s := &Spoke{Cluster: c, HubKubeconfigDir: filepath.Join(dir, "hub-kubeconfig")}
	if err := prepareSpoke(ctx, c); err != nil {
		return nil, err
	}
	bootstrapUser := "harness:bootstrap:" + name
	if s.BootstrapKubeconfig, err = f.writeBootstrapKubeconfig(dir, bootstrapUser); err != nil {
		return nil, err
	}
	f.opts.Logf("spoke %s: klusterlet registration agent; accepting the cluster on the hub", name)
	agentID := string(uuid.NewUUID()) // a klusterlet gives both agents its own UID
	if s.RegistrationAgent, err = f.startRegistrationAgent(ctx, s, agentID); err != nil {
		return nil, err
	}
	if err := f.accept(ctx, name, bootstrapUser); err != nil {
		return nil, s.RegistrationAgent.explain(err)
	}
	hubKubeconfig := filepath.Join(s.HubKubeconfigDir, "kubeconfig")
	if err := waitFile(ctx, "the hub kubeconfig of "+name, hubKubeconfig, 2*time.Minute); err != nil {
		return nil, s.RegistrationAgent.explain(err)
	}
	f.opts.Logf("spoke %s: klusterlet work agent", name)
	s.WorkAgent, err = f.runOCMComponent(ctx, name+"-work-agent", c.Kubeconfig, AgentNamespace, []string{
		f.bin("ocm-work"), "agent", "--spoke-cluster-name=" + name, "--agent-id=" + agentID,
		"--workload-source-driver=kube", "--workload-source-config=" + hubKubeconfig,
		"--hub-kubeconfig-dir=" + s.HubKubeconfigDir, "--spoke-kubeconfig=" + c.Kubeconfig,
	})
	if err != nil {
		return nil, err
	}
	if err := f.waitJoined(ctx, name); err != nil {
		return nil, s.RegistrationAgent.explain(err)
	}
	return s, nil
}

// prepareSpoke installs what a klusterlet operator would: its CRDs and namespaces.
func prepareSpoke(ctx context.Context, c *Cluster) error {
	crds, err := loadCRDs(spokeCRDFiles)
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(ctx, crds); err != nil {
		return err
	}
	for _, ns := range []string{AgentNamespace, AddonNamespace} {
		if err := createNamespace(ctx, c, ns); err != nil {
			return err
		}
	}
	return nil
}

// writeBootstrapKubeconfig issues a client certificate of the hub for the bootstrap
// identity and writes the kubeconfig a klusterlet is installed with.
func (f *Fleet) writeBootstrapKubeconfig(dir, user string) (string, error) {
	cert, err := f.Hub.clientCA.client(dir, "bootstrap", user, BootstrapGroup)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "bootstrap.kubeconfig")
	return file, writeKubeconfig(file, f.hubURLForSpokes(), f.servingCA.CertPEM, cert)
}

// hubURLForSpokes is the hub address a klusterlet is installed with. OCM's registration
// agent passes it on in every addon agent's hub kubeconfig, so with real pods it must be
// the address pods reach the hub at, FleetIP, not loopback.
func (f *Fleet) hubURLForSpokes() string {
	if f.opts.RealPods {
		return f.Hub.fleetURL()
	}
	return f.Hub.URL
}

// startRegistrationAgent runs OCM's registration agent on the spoke's side: it reads and
// writes the spoke with the administrator kubeconfig, keeps its hub credential in
// Secret HubKubeconfigSecret (and HubKubeconfigDir), reports the spoke's ClusterClaims
// and registers addons (AddonManagement, on by default: CSRs for addon agents and their
// <addon>-hub-kubeconfig Secrets).
func (f *Fleet) startRegistrationAgent(ctx context.Context, s *Spoke, agentID string) (*Process, error) {
	return f.runOCMComponent(ctx, s.Name+"-registration-agent", s.Kubeconfig, AgentNamespace, []string{
		f.bin("ocm-registration"), "agent", "--spoke-cluster-name=" + s.Name, "--agent-id=" + agentID,
		"--bootstrap-kubeconfig=" + s.BootstrapKubeconfig,
		"--hub-kubeconfig-secret=" + HubKubeconfigSecret, "--hub-kubeconfig-dir=" + s.HubKubeconfigDir,
		"--spoke-kubeconfig=" + s.Kubeconfig,
		// The hub learns the spoke's API address and CA (ManagedCluster
		// spec.managedClusterClientConfigs), as with a klusterlet's externalServerURLs.
		"--spoke-external-server-urls=" + s.URL,
	})
}

// accept accepts the spoke on the hub as `clusteradm accept` does: hubAcceptsClient on
// its ManagedCluster, approval of its bootstrap CSR.
func (f *Fleet) accept(ctx context.Context, name, bootstrapUser string) error {
	kube, err := kubernetes.NewForConfig(f.Hub.Config)
	if err != nil {
		return fmt.Errorf("creating a hub client: %w", err)
	}
	return poll(ctx, "the ManagedCluster and CSR of "+name, 250*time.Millisecond, 2*time.Minute, func(ctx context.Context) (bool, string) {
		accepted, why := f.setHubAcceptsClient(ctx, name)
		if !accepted {
			return false, why
		}
		approved, err := approveBootstrapCSRs(ctx, kube, name, bootstrapUser)
		if err != nil {
			return false, err.Error()
		}
		return approved, "no CSR from " + bootstrapUser + " yet"
	})
}

func (f *Fleet) setHubAcceptsClient(ctx context.Context, name string) (bool, string) {
	mc := &clusterv1.ManagedCluster{}
	if err := f.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return false, err.Error()
	}
	if mc.Spec.HubAcceptsClient {
		return true, ""
	}
	// A merge patch without resourceVersion: the agent may update the object meanwhile.
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Spec.HubAcceptsClient = true
	if err := f.Hub.Client.Patch(ctx, mc, patch); err != nil {
		return false, "accepting: " + err.Error()
	}
	return true, ""
}

// approveBootstrapCSRs approves the pending registration CSRs the bootstrap identity
// made for the cluster (never an addon's CSR: that is the addon manager's job) and
// tells whether one is approved.
func approveBootstrapCSRs(ctx context.Context, kube kubernetes.Interface, cluster, bootstrapUser string) (bool, error) {
	csrs, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		LabelSelector: clusterNameLabel + "=" + cluster + "," + "!" + addonNameLabel,
	})
	if err != nil {
		return false, fmt.Errorf("listing CSRs: %w", err)
	}
	approved := false
	for i := range csrs.Items {
		csr := &csrs.Items[i]
		if csr.Spec.Username != bootstrapUser || hasCondition(csr, certificatesv1.CertificateDenied) {
			continue
		}
		if hasCondition(csr, certificatesv1.CertificateApproved) {
			approved = true
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: "HarnessAccepted", Message: "the test harness accepts cluster " + cluster,
		})
		if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return false, fmt.Errorf("approving CSR %s: %w", csr.Name, err)
		}
		approved = true
	}
	return approved, nil
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

// waitJoined waits until the ManagedCluster is accepted, joined and available.
func (f *Fleet) waitJoined(ctx context.Context, name string) error {
	return poll(ctx, "ManagedCluster "+name+" accepted, joined and available", 250*time.Millisecond, 3*time.Minute,
		func(ctx context.Context) (bool, string) {
			mc := &clusterv1.ManagedCluster{}
			if err := f.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
				return false, err.Error()
			}
			for _, t := range []string{
				clusterv1.ManagedClusterConditionHubAccepted, clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable,
			} {
				if !meta.IsStatusConditionTrue(mc.Status.Conditions, t) {
					return false, fmt.Sprintf("condition %s is not True: %v", t, mc.Status.Conditions)
				}
			}
			return true, ""
		})
}
