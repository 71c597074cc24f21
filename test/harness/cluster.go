package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster is one control plane on 127.0.0.1: a kube-apiserver storing into the fleet's
// etcd under its own prefix, and a kube-controller-manager (CSR signing, garbage
// collection, namespace deletion, service accounts, workload controllers). There are no
// nodes: pods are created but never run.
type Cluster struct {
	Name string
	// Dir holds the cluster's certificates, kubeconfigs and other files.
	Dir string
	// URL is the kube-apiserver's address, https://127.0.0.1:<port>.
	URL string
	// CAData is the PEM CA that signs every serving certificate of the fleet.
	CAData []byte
	// Kubeconfig is a self-contained administrator (system:masters) kubeconfig file.
	Kubeconfig string
	// Config reaches the kube-apiserver as the administrator.
	Config *rest.Config
	// Client is an uncached administrator client with Scheme().
	Client client.Client
	// AuditLog is kube-apiserver's audit log of writes (JSON lines, metadata level); see Writes.
	AuditLog string

	// APIServer and ControllerManager are the cluster's processes, for tests that restart
	// them (then call WaitReady).
	APIServer, ControllerManager *Process

	port     int
	clientCA *authority // authenticates client certificates; kube-controller-manager signs CSRs with it
	saPublic string
	saKey    string
}

// serviceCIDR is every cluster's service range; clusters share nothing but etcd.
const serviceCIDR = "10.96.0.0/16"

// auditPolicy records who wrote what, and nothing about reads.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: Metadata
`

// startCluster creates a cluster's credentials and starts its kube-apiserver and
// kube-controller-manager, returning once both are healthy.
func (f *Fleet) startCluster(ctx context.Context, name string) (*Cluster, error) {
	dir := filepath.Join(f.WorkDir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	c := &Cluster{Name: name, Dir: dir, CAData: f.servingCA.CertPEM, AuditLog: filepath.Join(dir, "audit.log")}
	if err := c.writeCredentials(f.servingCA); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	if err := f.startAPIServer(ctx, c); err != nil {
		return nil, err
	}
	if err := f.startControllerManager(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// writeCredentials creates the client CA, the administrator's certificate, kubeconfig and
// client, and the service-account key.
func (c *Cluster) writeCredentials(servingCA *authority) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.port, c.URL = port, "https://"+loopback(port)
	if c.clientCA, err = newAuthority(c.Dir, "client-ca"); err != nil {
		return err
	}
	admin, err := c.clientCA.client(c.Dir, "admin", "harness-admin", "system:masters")
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.URL, servingCA.CertPEM, admin); err != nil {
		return err
	}
	c.Config = &rest.Config{Host: c.URL, QPS: 100, Burst: 200, TLSClientConfig: rest.TLSClientConfig{
		CAData: servingCA.CertPEM, CertData: admin.CertPEM, KeyData: admin.KeyPEM,
	}}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: Scheme()}); err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	c.saPublic, c.saKey, err = writeServiceAccountKey(c.Dir)
	return err
}

func (f *Fleet) startAPIServer(ctx context.Context, c *Cluster) error {
	names := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	if f.opts.RealPods {
		names = append(names, FleetIP, kubernetesServiceIP, "kubernetes.default.svc.cluster.local")
	}
	serving, err := f.servingCA.serving(c.Dir, "apiserver", names...)
	if err != nil {
		return err
	}
	// The front proxy's client certificate lets the aggregator reach aggregated API
	// servers (tests register one on spokes) as a trusted proxy.
	proxyClient, err := f.frontProxyCA.client(c.Dir, "front-proxy-client", "front-proxy-client")
	if err != nil {
		return err
	}
	policy := filepath.Join(c.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return fmt.Errorf("writing the audit policy: %w", err)
	}
	args := f.apiServerArgs(c, serving, proxyClient, policy)
	if f.opts.RealPods {
		// kubectl logs and exec: the kube-apiserver authenticates to kubelets with this.
		kubeletClient, err := c.clientCA.client(c.Dir, "kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
		if err != nil {
			return err
		}
		args = append(realPodsAPIServerArgs(args), "--kubelet-client-certificate="+kubeletClient.CertFile, "--kubelet-client-key="+kubeletClient.KeyFile)
	}
	if c.APIServer, err = f.run(c.Name+"-kube-apiserver", args, nil, tierAPIServer); err != nil {
		return err
	}
	return c.WaitReady(ctx)
}

// apiServerArgs are kube-apiserver's flags: loopback only, RBAC, the cluster's own
// client CA and service-account key, API aggregation, an audit log of writes.
func (f *Fleet) apiServerArgs(c *Cluster, serving, proxyClient *keyPair, policy string) []string {
	return []string{
		f.bin("kube-apiserver"),
		"--etcd-servers=" + f.etcdURL, "--etcd-prefix=/" + c.Name,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.port),
		"--cert-dir=" + c.Dir, "--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
		"--client-ca-file=" + c.clientCA.CertFile,
		"--service-account-issuer=" + c.URL, "--service-account-key-file=" + c.saPublic,
		"--service-account-signing-key-file=" + c.saKey,
		// The default/kubernetes Endpoints would be 127.0.0.1, which validation refuses
		// (an error logged every 10s); nothing in the fleet runs pods that need them.
		"--endpoint-reconciler-type=none",
		// Without a grace period for watches, an apiserver with clients connected waits on
		// them and only dies of SIGKILL (15s); with it, SIGTERM ends it in about a second.
		"--shutdown-watch-termination-grace-period=2s",
		"--service-cluster-ip-range=" + serviceCIDR, "--authorization-mode=Node,RBAC", "--allow-privileged=true",
		// Aggregated API servers are reached through their Service (type ExternalName
		// to localhost in tests), not through Endpoints, which may not be loopback.
		"--enable-aggregator-routing=false",
		"--requestheader-client-ca-file=" + f.frontProxyCA.CertFile,
		"--proxy-client-cert-file=" + proxyClient.CertFile, "--proxy-client-key-file=" + proxyClient.KeyFile,
		"--requestheader-allowed-names=front-proxy-client", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group", "--requestheader-username-headers=X-Remote-User",
		"--audit-policy-file=" + policy, "--audit-log-path=" + c.AuditLog, "--audit-log-format=json",
		"--audit-log-mode=blocking",
		// Never rotated (0 would mean lumberjack's default of 100 MB): Writes reads the
		// one file, and a fleet benchmark at 1,000 clusters writes more than that.
		"--audit-log-maxsize=1000000",
	}
}

// realPodsAPIServerArgs: nodes and pods reach the kube-apiserver at FleetIP (the
// kubernetes Service's endpoint), and it reaches kubelets at their InternalIP.
func realPodsAPIServerArgs(args []string) []string {
	args = slices.DeleteFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--bind-address=") || strings.HasPrefix(a, "--advertise-address=") || strings.HasPrefix(a, "--endpoint-reconciler-type=")
	})
	return append(args, "--bind-address=0.0.0.0", "--advertise-address="+FleetIP, "--kubelet-preferred-address-types=InternalIP")
}

// WaitReady waits until kube-apiserver answers /readyz: all its post-start hooks ran
// (RBAC bootstrap roles, APIService registration) and etcd is reachable.
func (c *Cluster) WaitReady(ctx context.Context) error {
	err := waitHTTPSWithConfig(ctx, c.Name+" kube-apiserver /readyz", c.Config, "/readyz", 2*time.Minute)
	if err != nil {
		return c.APIServer.explain(err)
	}
	return nil
}

func (f *Fleet) startControllerManager(ctx context.Context, c *Cluster) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	serving, err := f.servingCA.serving(c.Dir, "controller-manager")
	if err != nil {
		return err
	}
	args := []string{
		f.bin("kube-controller-manager"),
		"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
		"--leader-elect=false", "--cluster-name=" + c.Name,
		// Signs CSRs (OCM's registration and addon client certificates, signer
		// kubernetes.io/kube-apiserver-client) with the CA kube-apiserver trusts.
		"--cluster-signing-cert-file=" + c.clientCA.CertFile, "--cluster-signing-key-file=" + c.clientCA.KeyFile,
		"--service-account-private-key-file=" + c.saKey, "--root-ca-file=" + f.servingCA.CertFile,
		"--use-service-account-credentials=false",
	}
	enabled, err := f.controllers()
	if err != nil {
		return err
	}
	args = append(args, "--controllers="+strings.Join(enabled, ","))
	if c.ControllerManager, err = f.run(c.Name+"-kube-controller-manager", args, nil, tierControllerManager); err != nil {
		return err
	}
	err = waitHTTPS(ctx, c.Name+" kube-controller-manager /healthz", "https://"+loopback(port)+"/healthz", f.servingCA.CertPEM, 2*time.Minute)
	if err != nil {
		return c.ControllerManager.explain(err)
	}
	return nil
}

// notNeeded are kube-controller-manager's on-by-default controllers that need nodes,
// volumes, a cloud or metrics, which this fleet has none of: less CPU on small machines,
// less noise in the logs. Releases add and drop controllers (1.37 dropped the cloud ones
// from providerless builds), and kube-controller-manager refuses a name it does not know:
// only those its --help lists are turned off.
var notNeeded = []string{
	"node-ipam-controller", "node-lifecycle-controller", "node-route-controller", "cloud-node-lifecycle-controller",
	"service-lb-controller", "taint-eviction-controller", "device-taint-eviction-controller", "ttl-controller",
	"persistentvolume-attach-detach-controller", "persistentvolume-binder-controller",
	"persistentvolume-expander-controller", "ephemeral-volume-controller", "horizontal-pod-autoscaler-controller",
	"resourceclaim-controller", "storage-version-migrator-controller",
}

// controllers are kube-controller-manager's controllers for this fleet: with real pods,
// the node lifecycle controller too, which lifts the not-ready taint kubelet registers
// its Node with once the Node is Ready.
func (f *Fleet) controllers() ([]string, error) {
	known, err := f.knownControllers()
	if err != nil {
		return nil, err
	}
	enabled := []string{"*"}
	for _, name := range notNeeded {
		keepForRealPods := f.opts.RealPods && name == "node-lifecycle-controller"
		if known[name] && !keepForRealPods {
			enabled = append(enabled, "-"+name)
		}
	}
	return enabled, nil
}

// knownControllers are the controllers the fleet's kube-controller-manager knows, read
// from its --help once for the hub and every spoke.
func (f *Fleet) knownControllers() (map[string]bool, error) {
	f.controllersOnce.Do(func() {
		help, err := exec.Command(f.bin("kube-controller-manager"), "--help").CombinedOutput()
		if err != nil {
			f.controllersErr = fmt.Errorf("kube-controller-manager --help: %w: %s", err, help)
			return
		}
		if f.controllersKnown = controllersIn(string(help)); len(f.controllersKnown) == 0 {
			f.controllersErr = errors.New(`kube-controller-manager --help lists no controllers (no line "All controllers: ...")`)
		}
	})
	return f.controllersKnown, f.controllersErr
}

// controllersIn reads the names on the "All controllers:" line of
// kube-controller-manager --help.
func controllersIn(help string) map[string]bool {
	known := map[string]bool{}
	for _, line := range strings.Split(help, "\n") {
		_, list, found := strings.Cut(line, "All controllers:")
		if !found {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			known[strings.TrimSpace(name)] = true
		}
	}
	return known
}

// waitHTTPSWithConfig polls path on the apiserver of cfg until it answers 200.
func waitHTTPSWithConfig(ctx context.Context, what string, cfg *rest.Config, path string, timeout time.Duration) error {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("%s: building an HTTP client: %w", what, err)
	}
	defer httpClient.CloseIdleConnections()
	return poll(ctx, what, 200*time.Millisecond, timeout, func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, path + ": " + resp.Status
	})
}
