package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// agentNamespace is where the klusterlet runs on a spoke.
const agentNamespace = "open-cluster-management-agent"

// Spoke is a managed cluster with its klusterlet.
type Spoke struct {
	*Cluster
	// HubKubeconfigDir is where the registration agent keeps its hub credential.
	HubKubeconfigDir string
}

// AddSpoke starts a cluster and its klusterlet, and joins it to the hub through OCM's
// bootstrap flow: the registration agent creates the ManagedCluster and a CSR with the
// bootstrap identity; the hub accepts the cluster and approves the CSR (as an
// administrator does with `clusteradm accept`); the hub's kube-controller-manager signs it.
func (f *Fleet) AddSpoke(ctx context.Context, name string) (*Spoke, error) {
	f.opts.Logf("spoke %s: kube-apiserver and kube-controller-manager", name)
	c, err := f.startCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	s := &Spoke{Cluster: c, HubKubeconfigDir: filepath.Join(c.Dir, "hub-kubeconfig")}
	crds, err := ocmCRDs(func(n string) bool { return spokeCRDNames[n] })
	if err != nil {
		return nil, err
	}
	if err := installCRDs(ctx, c, crds); err != nil {
		return nil, err
	}
	// The klusterlet operator creates both: its own namespace and the addons' default one.
	for _, ns := range []string{agentNamespace, "open-cluster-management-agent-addon"} {
		if err := createNamespace(ctx, c, ns); err != nil {
			return nil, err
		}
	}
	bootstrap, err := f.writeBootstrapKubeconfig(s)
	if err != nil {
		return nil, err
	}
	f.opts.Logf("spoke %s: klusterlet registration agent joins the hub", name)
	registration, err := f.start(name+"-registration-agent", []string{
		filepath.Join(f.opts.BinDir, "ocm-registration"), "agent",
		"--cluster-name=" + name, "--bootstrap-kubeconfig=" + bootstrap,
		"--hub-kubeconfig-dir=" + s.HubKubeconfigDir, "--hub-kubeconfig-secret=hub-kubeconfig-secret",
		"--spoke-kubeconfig=" + c.Kubeconfig, "--kubeconfig=" + c.Kubeconfig, "--namespace=" + agentNamespace,
		"--spoke-external-server-urls=" + c.URL, "--cluster-healthcheck-period=10s", "--listen=127.0.0.1:" + strconv.Itoa(freePort()), "--disable-leader-election",
	})
	if err != nil {
		return nil, err
	}
	if err := f.accept(ctx, name); err != nil {
		return nil, registration.failed(err)
	}
	if err := waitFile(ctx, filepath.Join(s.HubKubeconfigDir, "kubeconfig"), 2*time.Minute); err != nil {
		return nil, registration.failed(fmt.Errorf("spoke %s got no hub credential: %w", name, err))
	}
	f.opts.Logf("spoke %s: klusterlet work agent", name)
	work, err := f.start(name+"-work-agent", []string{
		filepath.Join(f.opts.BinDir, "ocm-work"), "agent",
		"--spoke-cluster-name=" + name, "--hub-kubeconfig=" + filepath.Join(s.HubKubeconfigDir, "kubeconfig"), "--hub-kubeconfig-dir=" + s.HubKubeconfigDir,
		"--workload-source-config=" + filepath.Join(s.HubKubeconfigDir, "kubeconfig"), "--kubeconfig=" + c.Kubeconfig, "--namespace=" + agentNamespace,
		"--listen=127.0.0.1:" + strconv.Itoa(freePort()), "--disable-leader-election",
	})
	if err != nil {
		return nil, err
	}
	if err := waitClusterAvailable(ctx, f.Hub, name); err != nil {
		return nil, work.failed(registration.failed(err))
	}
	if exited, _ := work.Exited(); exited {
		return nil, work.failed(fmt.Errorf("the work agent of %s stopped", name))
	}
	f.mu.Lock()
	f.Spokes[name] = s
	f.mu.Unlock()
	return s, nil
}

// writeBootstrapKubeconfig issues the spoke's bootstrap identity (a client certificate in
// the bootstrap group) and writes the kubeconfig a klusterlet is installed with.
func (f *Fleet) writeBootstrapKubeconfig(s *Spoke) (string, error) {
	dir := filepath.Join(s.Dir, "bootstrap")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	certFile, keyFile, err := f.Hub.ca.issue(dir, "bootstrap", "system:open-cluster-management:bootstrap:"+s.Name, []string{bootstrapGroup}, false)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "kubeconfig")
	return file, writeKubeconfig(file, f.Hub.URL, f.Hub.ca.CertPEM, certFile, keyFile)
}

// accept sets hubAcceptsClient on the new ManagedCluster and approves its CSRs.
func (f *Fleet) accept(ctx context.Context, name string) error {
	hub := f.Hub
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false, nil
		}
		if !mc.Spec.HubAcceptsClient {
			patch := client.MergeFrom(mc.DeepCopy())
			mc.Spec.HubAcceptsClient = true
			if err := hub.Client.Patch(ctx, mc, patch); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the registration agent of %s created no ManagedCluster: %w", name, err)
	}
	kube, err := kubernetes.NewForConfig(hub.Config)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		csrs, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: "open-cluster-management.io/cluster-name=" + name})
		if err != nil || len(csrs.Items) == 0 {
			return false, nil
		}
		for i := range csrs.Items {
			csr := &csrs.Items[i]
			if isApproved(csr) || csr.Labels["open-cluster-management.io/addon-name"] != "" {
				continue
			}
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
				Reason: "AcceptedByFleet", Message: "the fleet harness accepts " + name,
			})
			if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("no CSR of %s to approve: %w", name, err)
	}
	return nil
}

func isApproved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}

func waitClusterAvailable(ctx context.Context, hub *Cluster, name string) error {
	var last []metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false, nil
		}
		last = mc.Status.Conditions
		return meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) &&
			meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable), nil
	})
	if err != nil {
		return fmt.Errorf("ManagedCluster %s is not joined and available: %w (conditions: %+v)", name, err, last)
	}
	return nil
}

func waitFile(ctx context.Context, file string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		st, err := os.Stat(file)
		return err == nil && st.Size() > 0, nil
	})
}

// clusterSet is the ManagedClusterSet kind, for waitDefaultClusterSet.
type clusterSet struct{}

func (clusterSet) obj() client.Object { return &clusterv1beta2.ManagedClusterSet{} }
