package fleet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster is one control plane: kube-apiserver and kube-controller-manager on loopback,
// its data in the fleet's etcd under its own prefix.
type Cluster struct {
	Name string
	// Dir holds the cluster's certificates, kubeconfigs and files.
	Dir string
	// Kubeconfig is an administrator (system:masters) kubeconfig file.
	Kubeconfig string
	Config     *rest.Config
	// Client is an uncached administrator client with Scheme().
	Client client.Client
	// AuditLog is kube-apiserver's audit log of writes (JSON lines).
	AuditLog string
	URL      string

	ca        *ca
	saKey     string
	apiServer *Process
	kcm       *Process
}

// auditPolicy records who wrote what (metadata level), and nothing about reads.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: Metadata
`

func (f *Fleet) startCluster(ctx context.Context, name string) (*Cluster, error) {
	dir := filepath.Join(f.WorkDir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &Cluster{Name: name, Dir: dir, AuditLog: filepath.Join(dir, "audit.log")}
	var err error
	if c.ca, err = newCA(dir, "ca"); err != nil {
		return nil, err
	}
	port := freePort()
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	if err := c.writeAdminKubeconfig(); err != nil {
		return nil, err
	}
	if err := f.startAPIServer(ctx, c, port); err != nil {
		return nil, err
	}
	if err := f.startControllerManager(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) writeAdminKubeconfig() error {
	certFile, keyFile, err := c.ca.issue(c.Dir, "admin", "admin", []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.URL, c.ca.CertPEM, certFile, keyFile); err != nil {
		return err
	}
	c.Config = &rest.Config{Host: c.URL, QPS: 100, Burst: 200, TLSClientConfig: rest.TLSClientConfig{
		CAData: c.ca.CertPEM, CertFile: certFile, KeyFile: keyFile,
	}}
	c.Client, err = client.New(c.Config, client.Options{Scheme: Scheme()})
	return err
}

func writeKubeconfig(file, server string, caPEM []byte, certFile, keyFile string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	kc.CurrentContext = "default"
	return clientcmd.WriteToFile(*kc, file)
}

func (f *Fleet) startAPIServer(ctx context.Context, c *Cluster, port int) error {
	servingCert, servingKey, err := c.ca.issue(c.Dir, "apiserver", "kube-apiserver", nil, true)
	if err != nil {
		return err
	}
	saPub, saKey, err := serviceAccountKey(c.Dir)
	if err != nil {
		return err
	}
	proxyCert, proxyKey, err := f.frontProxyCA.issue(c.Dir, "front-proxy-client", "front-proxy-client", nil, false)
	if err != nil {
		return err
	}
	policy := filepath.Join(c.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	args := []string{
		filepath.Join(f.opts.BinDir, "kube-apiserver"),
		"--etcd-servers=" + f.etcdURL, "--etcd-prefix=/" + c.Name,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + c.Dir, "--tls-cert-file=" + servingCert, "--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + c.ca.CertFile,
		"--service-account-issuer=" + c.URL, "--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=RBAC", "--allow-privileged=true",
		// Aggregated API servers (the Route API stand-in) are reached through their
		// Service (ExternalName to localhost), with the front proxy's client certificate.
		"--enable-aggregator-routing=false",
		"--requestheader-client-ca-file=" + f.frontProxyCA.CertFile, "--proxy-client-cert-file=" + proxyCert, "--proxy-client-key-file=" + proxyKey,
		"--requestheader-allowed-names=front-proxy-client", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group", "--requestheader-username-headers=X-Remote-User",
		"--audit-policy-file=" + policy, "--audit-log-path=" + c.AuditLog, "--audit-log-format=json",
		"--audit-log-mode=blocking",
	}
	c.apiServer, err = f.start(c.Name+"-kube-apiserver", args)
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, c.Config, "/readyz", 90*time.Second); err != nil {
		return c.apiServer.failed(fmt.Errorf("kube-apiserver of %s is not ready: %w", c.Name, err))
	}
	c.saKey = saKey
	return nil
}

func (f *Fleet) startControllerManager(c *Cluster) error {
	var err error
	c.kcm, err = f.start(c.Name+"-kube-controller-manager", []string{
		filepath.Join(f.opts.BinDir, "kube-controller-manager"),
		"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(freePort()), "--leader-elect=false",
		// Signs the CSRs of OCM's registration (kubernetes.io/kube-apiserver-client) with the
		// CA the apiserver trusts for client certificates.
		"--cluster-signing-cert-file=" + c.ca.CertFile, "--cluster-signing-key-file=" + c.ca.KeyFile,
		"--service-account-private-key-file=" + c.saKey, "--root-ca-file=" + c.ca.CertFile,
		"--use-service-account-credentials=false", "--controllers=*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-service-lb-controller,-route",
	})
	return err
}

// waitHealthy polls an apiserver health endpoint until it answers 200.
func waitHealthy(ctx context.Context, cfg *rest.Config, path string, timeout time.Duration) error {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		_ = resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last: %s)", path, err, last)
	}
	return nil
}

// freePort returns a free TCP port of 127.0.0.1.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("no free port on 127.0.0.1: %v", err))
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
