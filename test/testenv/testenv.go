// Package testenv starts a real kube-apiserver and etcd, built from source by
// `make test-env` into <repo>/bin, for the integration tests, with the OCM and
// gitops-addon CRDs installed.
package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// Env is a running kube-apiserver + etcd.
type Env struct {
	// Config reaches the apiserver as an administrator.
	Config *rest.Config
	// Client is an uncached client with Scheme.
	Client client.Client
	// Scheme has client-go, apiextensions, OCM and gitops-addon types.
	Scheme *k8sruntime.Scheme
	// Environment is the underlying envtest environment.
	Environment *envtest.Environment
}

type options struct {
	kubeVersion   string
	crdPaths      []string
	schemeAdders  []func(*k8sruntime.Scheme) error
	apiServerArgs map[string][]string
}

// Option configures Start.
type Option func(*options)

// WithCRDPaths installs CRDs from these files or directories.
func WithCRDPaths(paths ...string) Option {
	return func(o *options) { o.crdPaths = append(o.crdPaths, paths...) }
}

// KubeAPIServerVersionEnv names the environment variable that runs every test's
// kube-apiserver at another version (bin/kube-apiserver-<version>, built by
// hack/build-k8s.sh kube-apiserver@<version>): make test runs a subset of the integration
// tests on the oldest supported Kubernetes with it, make test-compat on the releases
// between the oldest and the newest. A test's WithKubeAPIServerVersion wins.
const KubeAPIServerVersionEnv = "TESTENV_KUBE_APISERVER_VERSION"

// WithKubeAPIServerVersion runs bin/kube-apiserver-<version> (built by `make test-env`
// as hack/build-k8s.sh kube-apiserver@<version>) instead of the current kube-apiserver.
func WithKubeAPIServerVersion(version string) Option {
	return func(o *options) { o.kubeVersion = version }
}

// OldestKubeVersion is the oldest Kubernetes gitops-addon supports (docs/operations/install.md, Supported
// Kubernetes versions): the Makefile's OLDEST_KUBE_VERSION, which it exports.
func OldestKubeVersion() string {
	if v := os.Getenv("OLDEST_KUBE_VERSION"); v != "" {
		return v
	}
	return DefaultOldestKubeVersion
}

// DefaultOldestKubeVersion is OldestKubeVersion outside make; a test keeps it equal to the
// Makefile's OLDEST_KUBE_VERSION.
const DefaultOldestKubeVersion = "v1.29.6"

// WithSchemeAdder adds types to the scheme of Env.Client.
func WithSchemeAdder(fns ...func(*k8sruntime.Scheme) error) Option {
	return func(o *options) { o.schemeAdders = append(o.schemeAdders, fns...) }
}

// WithAPIServerArg sets a kube-apiserver flag.
func WithAPIServerArg(name string, values ...string) Option {
	return func(o *options) {
		if o.apiServerArgs == nil {
			o.apiServerArgs = map[string][]string{}
		}
		o.apiServerArgs[name] = values
	}
}

// RepoRoot is the repository root: the directory of the module's go.mod.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: cannot locate the source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir holds the kube-apiserver and etcd built by `make test-env`.
func BinDir() string { return filepath.Join(RepoRoot(), "bin") }

// Start starts etcd and kube-apiserver, installs the CRDs and stops both at cleanup.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	if o.kubeVersion == "" {
		o.kubeVersion = os.Getenv(KubeAPIServerVersionEnv)
	}
	kubeAPIServer := "kube-apiserver"
	if o.kubeVersion != "" {
		kubeAPIServer += "-" + o.kubeVersion
	}
	for _, bin := range []string{kubeAPIServer, "etcd"} {
		if _, err := os.Stat(filepath.Join(BinDir(), bin)); err != nil {
			t.Fatalf("%s is missing from %s: run `make test-env` (make test does) to build it from source", bin, BinDir())
		}
	}
	crds, err := loadCRDs(o.crdPaths)
	if err != nil {
		t.Fatal(err)
	}
	// envtest picks a free port and lets it go before kube-apiserver binds it: under load
	// (make test runs the end-to-end fleet beside) another process can take it first. That
	// start is tried again, on a new port; any other failure is the test's.
	var env *envtest.Environment
	var cfg *rest.Config
	for attempt := 1; ; attempt++ {
		var apiServerOutput *lastBytes
		env, apiServerOutput = controlPlane(t, o, crds, kubeAPIServer)
		cfg, err = env.Start()
		if err == nil {
			break
		}
		// envtest leaves etcd and kube-apiserver running when it fails after starting them
		// (an invalid CRD, for one): stop them, so that no process outlives the test.
		_ = env.Stop()
		if attempt < 3 && strings.Contains(apiServerOutput.String(), "address already in use") {
			t.Logf("kube-apiserver's port was taken before it bound it; starting again on another (attempt %d)", attempt+1)
			continue
		}
		t.Fatalf("starting kube-apiserver and etcd: %v\n--- the last lines kube-apiserver printed:\n%s", err, apiServerOutput)
	}
	t.Cleanup(func() {
		// envtest stops kube-apiserver before etcd; the reverse order hangs.
		if err := env.Stop(); err != nil {
			t.Errorf("stopping kube-apiserver and etcd: %v", err)
		}
	})
	scheme, err := Scheme(o.schemeAdders...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, Environment: env}
}

// controlPlane is the envtest environment of Start: kube-apiserver (kubeAPIServer, in
// BinDir) with the options' flags, etcd, the CRDs; and what kube-apiserver prints last.
func controlPlane(t testing.TB, o *options, crds []*apiextensionsv1.CustomResourceDefinition, kubeAPIServer string) (*envtest.Environment, *lastBytes) {
	env := &envtest.Environment{
		BinaryAssetsDirectory: BinDir(),
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
		// With many clients watching (a manager and addon-framework), kube-apiserver's
		// graceful shutdown in RestartAPIServer takes longer than envtest's 20 s default.
		ControlPlaneStopTimeout: 2 * time.Minute,
		// And its start, with etcd's, beside make test's end-to-end fleets on 2 busy cores:
		// a warm make test failed an integration test on envtest's 20 s start timeout, five
		// times in a row (etcd not yet listening). A bound on a stuck start, not a wait.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.Path = filepath.Join(BinDir(), kubeAPIServer)
	// A directory of our own keeps the serving certificate and service-account keys
	// across RestartAPIServer; envtest regenerates them in a directory it allocated.
	apiServer.CertDir = t.TempDir()
	apiServer.Configure().Set("advertise-address", "127.0.0.1")
	// Kubernetes 1.37 refuses a loopback advertise address to the endpoint reconciler of
	// the default kubernetes Service, which no test here uses.
	apiServer.Configure().Set("endpoint-reconciler-type", "none")
	// What kube-apiserver printed last says why it did not start (a flag a newer release
	// removed, say); envtest's own error says only that it timed out.
	apiServerOutput := &lastBytes{limit: 4096}
	apiServer.Out, apiServer.Err = apiServerOutput, apiServerOutput
	for name, values := range o.apiServerArgs {
		apiServer.Configure().Set(name, values...)
	}
	return env, apiServerOutput
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port, certificates
// and etcd, as a node reboot or an upgrade does; it returns once the apiserver is healthy.
func (e *Env) RestartAPIServer() error {
	apiServer := e.Environment.ControlPlane.GetAPIServer()
	if err := apiServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := apiServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// Scheme has every type the integration tests use.
func Scheme(extra ...func(*k8sruntime.Scheme) error) (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	adders := append([]func(*k8sruntime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, appsv1beta1.AddToScheme, appsv1alpha1.AddToScheme,
		clusterv1.Install, clusterv1beta1.Install, addonv1alpha1.Install, addonv1beta1.Install, workv1.Install,
	}, extra...)
	for _, add := range adders {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the test scheme: %w", err)
		}
	}
	return s, nil
}

var (
	ocmDirOnce sync.Once
	ocmDir     string
	ocmDirErr  error
)

// goCommand runs the go command in the repository root and returns its output; an error
// carries what it printed on stderr.
func goCommand(args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// OCMAPIVersionEnv names the environment variable that gives every test's hub the OCM CRDs
// of another open-cluster-management.io/api release than go.mod's (fetched through the Go
// module proxy): make test-oldest runs the version-sensitive tests on the oldest OCM
// release gitops-addon supports with it.
const OCMAPIVersionEnv = "TESTENV_OCM_API_VERSION"

// ocmAPIDir is the open-cluster-management.io/api module directory of go.mod's version, or
// of OCMAPIVersionEnv's.
func ocmAPIDir() (string, error) {
	ocmDirOnce.Do(func() {
		if v := os.Getenv(OCMAPIVersionEnv); v != "" {
			ocmDir, ocmDirErr = ModuleDir("open-cluster-management.io/api@" + v)
			return
		}
		out, err := goCommand("list", "-m", "-f", "{{.Dir}}", "open-cluster-management.io/api")
		if err != nil {
			ocmDirErr = fmt.Errorf("locating open-cluster-management.io/api: %w", err)
			return
		}
		ocmDir = strings.TrimSpace(string(out))
	})
	return ocmDir, ocmDirErr
}

// OCMCRDPaths are the OCM CRDs a hub needs, from the pinned api module (OCMAPIVersionEnv's).
func OCMCRDPaths() []string {
	dir, err := ocmAPIDir()
	if err != nil {
		panic(err)
	}
	return []string{
		filepath.Join(dir, "cluster", "v1", "0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml"),
		filepath.Join(dir, "cluster", "v1beta1", "0000_02_clusters.open-cluster-management.io_placements.crd.yaml"),
		filepath.Join(dir, "cluster", "v1beta1", "0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml"),
		filepath.Join(dir, "addon", "v1beta1", "0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml"),
		filepath.Join(dir, "addon", "v1beta1", "0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml"),
		filepath.Join(dir, "addon", "v1beta1", "0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml"),
		filepath.Join(dir, "work", "v1", "0000_00_work.open-cluster-management.io_manifestworks.crd.yaml"),
	}
}

// storesV1Beta1 are the OCM addon CRDs that store v1alpha1 and serve v1beta1 through
// OCM's conversion webhook, which does not run here. addon-framework v1.3.0 reads
// v1beta1, so the tests install them storing v1beta1 with no conversion, as
// addon-framework's own integration tests do. Test-only: a real hub runs the webhook.
var storesV1Beta1 = map[string]bool{
	"clustermanagementaddons.addon.open-cluster-management.io": true,
	"managedclusteraddons.addon.open-cluster-management.io":    true,
}

// loadCRDs reads CRD files (or directories of them) and applies the v1beta1 storage flip.
func loadCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, path := range paths {
		files, err := crdFiles(path)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			crd, err := readCRD(f)
			if err != nil {
				return nil, err
			}
			if storesV1Beta1[crd.Name] {
				storeV1Beta1(crd)
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

func crdFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("CRD path: %w", err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	matches, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	if err != nil {
		return nil, err
	}
	return matches, nil
}

func readCRD(file string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", file, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", file, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("%s is a %q, not a CustomResourceDefinition", file, crd.Kind)
	}
	return crd, nil
}

func storeV1Beta1(crd *apiextensionsv1.CustomResourceDefinition) {
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1beta1"
	}
}

// KubeconfigFile writes a cluster-admin kubeconfig for the apiserver into a temporary
// file, for tools that take a kubeconfig path (Helm, the gitops-addon commands).
func (e *Env) KubeconfigFile(t testing.TB) string {
	t.Helper()
	user, err := e.Environment.ControlPlane.AddUser(envtest.User{Name: "test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("creating an admin user: %v", err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("writing a kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
	return path
}

// ArgoCDModule at ArgoCDVersion is the Argo CD release whose Application, ApplicationSet
// and AppProject CRDs the tests install (manifests/crds in its module): the version the
// local fleet's Argo CD is built from.
const (
	ArgoCDModule  = "github.com/argoproj/argo-cd/v3"
	ArgoCDVersion = "v3.2.11"
)

var (
	argoCDDirOnce sync.Once
	argoCDDir     string
	argoCDDirErr  error
)

// ArgoCDCRDDir is manifests/crds of the pinned Argo CD module, downloaded through the Go
// module proxy into the module cache on first use.
func ArgoCDCRDDir() (string, error) {
	argoCDDirOnce.Do(func() {
		dir, err := ModuleDir(ArgoCDModule + "@" + ArgoCDVersion)
		argoCDDir, argoCDDirErr = filepath.Join(dir, "manifests", "crds"), err
	})
	return argoCDDir, argoCDDirErr
}

// ModuleDir is the module cache folder of module@version, downloaded through the Go module
// proxy when missing.
func ModuleDir(moduleAtVersion string) (string, error) {
	out, err := goCommand("mod", "download", "-json", moduleAtVersion)
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w: %s", moduleAtVersion, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("downloading %s: %v %s", moduleAtVersion, err, info.Error)
	}
	return info.Dir, nil
}

// argoCDCRDFiles are the CRDs of manifests/crds (beside them: a kustomization.yaml).
var argoCDCRDFiles = []string{"application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"}

// ArgoCDCRDPaths are the files of the pinned Argo CD release's Application,
// ApplicationSet and AppProject CRDs, for WithCRDPaths.
func ArgoCDCRDPaths(t testing.TB) []string {
	t.Helper()
	dir, err := ArgoCDCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, 0, len(argoCDCRDFiles))
	for _, f := range argoCDCRDFiles {
		paths = append(paths, filepath.Join(dir, f))
	}
	return paths
}

// ArgoCDCRDs are the Application, ApplicationSet and AppProject CRDs of the pinned Argo
// CD release, decoded, for tests that install them while a manager runs.
func ArgoCDCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range ArgoCDCRDPaths(t) {
		crd, err := readCRD(f)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	return crds
}

// lastBytes keeps the last limit bytes written to it.
type lastBytes struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (l *lastBytes) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.limit; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

func (l *lastBytes) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// ServesValidatingAdmissionPolicyV1 says whether the apiserver of cfg serves
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.30 and later):
// before it, the charts leave their admission policies out, and tests of what those
// policies deny have nothing to test.
func ServesValidatingAdmissionPolicyV1(t testing.TB, cfg *rest.Config) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	resources, err := dc.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatalf("discovering admissionregistration.k8s.io/v1: %v", err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "validatingadmissionpolicies" {
			return true
		}
	}
	return false
}
