// Package fleet starts a real Open Cluster Management hub and spokes on this machine, as
// processes on 127.0.0.1 under a temporary directory: one etcd; per cluster a
// kube-apiserver (its own etcd prefix) and a kube-controller-manager; on the hub OCM's
// registration controller, placement controller, addon-manager and webhooks (registration,
// work, and the addon API conversion webhook); on each spoke a klusterlet (registration
// and work agents) that joins through the real bootstrap kubeconfig, CSR and
// hubAcceptsClient flow. Everything is built from source by `make e2e-env` into ./bin.
// Stop ends every process; Pdeathsig ends them if the caller dies first.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// Options configures Start.
type Options struct {
	// BinDir holds the binaries `make e2e-env` builds; default <repo>/bin.
	BinDir string
	// WorkDir holds every file of the fleet; default a new temporary directory, removed
	// by Stop unless KeepWorkDir.
	WorkDir     string
	KeepWorkDir bool
	// Logf reports progress; default silent.
	Logf func(format string, args ...any)
}

// Fleet is a running hub and its spokes.
type Fleet struct {
	Hub     *Cluster
	Spokes  map[string]*Spoke
	WorkDir string

	opts         Options
	etcdURL      string
	frontProxyCA *ca
	webhookPort  int

	mu     sync.Mutex
	procs  []*Process
	onStop []func()
}

// Binaries are what a fleet runs, all in Options.BinDir.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "ocm-registration", "ocm-work", "ocm-placement", "ocm-addon", "ocm-webhooks"}

// MissingBinaries lists the binaries not yet built into dir.
func MissingBinaries(dir string) []string {
	var missing []string
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// Scheme has the kinds a fleet's clients read and write.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme, appsv1beta1.AddToScheme,
		clusterv1.Install, clusterv1alpha1.Install, clusterv1beta1.Install, clusterv1beta2.Install,
		addonv1alpha1.Install, addonv1beta1.Install, workv1.Install,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Start starts etcd and the hub with OCM's hub components.
func Start(ctx context.Context, o Options) (*Fleet, error) {
	f, err := start(ctx, o)
	if err != nil && f != nil {
		_ = f.Stop()
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

func start(ctx context.Context, o Options) (f *Fleet, err error) {
	if o.BinDir == "" {
		o.BinDir = testenv.BinDir()
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if missing := MissingBinaries(o.BinDir); len(missing) > 0 {
		return f, fmt.Errorf("%v missing from %s: run `make e2e-env` to build them from source", missing, o.BinDir)
	}
	if o.WorkDir == "" && os.Getenv("FLEET_KEEP") != "" {
		o.KeepWorkDir = true
	}
	if o.WorkDir == "" {
		if o.WorkDir, err = os.MkdirTemp("", "gitops-addon-fleet-"); err != nil {
			return f, err
		}
	}
	f = &Fleet{Spokes: map[string]*Spoke{}, WorkDir: o.WorkDir, opts: o}
	for _, d := range []string{"logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(o.WorkDir, d), 0o700); err != nil {
			return f, err
		}
	}
	if f.frontProxyCA, err = newCA(o.WorkDir, "front-proxy-ca"); err != nil {
		return f, err
	}
	if err := f.startEtcd(ctx); err != nil {
		return f, err
	}
	o.Logf("hub: kube-apiserver and kube-controller-manager")
	if f.Hub, err = f.startCluster(ctx, "hub"); err != nil {
		return f, err
	}
	if err := f.startHubComponents(ctx); err != nil {
		return f, err
	}
	return f, nil
}

// StartForTest starts a fleet that stops at the end of the test, printing every process's
// log tail when the test failed. It skips the test when the binaries are not built.
func StartForTest(t *testing.T, o Options) *Fleet {
	t.Helper()
	if o.BinDir == "" {
		o.BinDir = testenv.BinDir()
	}
	if missing := MissingBinaries(o.BinDir); len(missing) > 0 {
		t.Skipf("%v missing from %s: run `make e2e-env` (make test does) to build them from source", missing, o.BinDir)
	}
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	f, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("starting the fleet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpLogs(os.Stderr, 40)
		}
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	return f
}

func (f *Fleet) startEtcd(ctx context.Context) error {
	client, peer := freePort(), freePort()
	f.etcdURL = "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	p, err := f.start("etcd", []string{
		filepath.Join(f.opts.BinDir, "etcd"), "--data-dir=" + filepath.Join(f.WorkDir, "etcd"),
		"--listen-client-urls=" + f.etcdURL, "--advertise-client-urls=" + f.etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL, "--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync", "--quota-backend-bytes=4294967296",
	})
	if err != nil {
		return err
	}
	if err := waitTCP(ctx, "127.0.0.1:"+strconv.Itoa(client), 30*time.Second); err != nil {
		return p.failed(fmt.Errorf("etcd is not serving: %w", err))
	}
	return nil
}

// StartProcess runs another program of the fleet (gitops-addon's manager or agent) with
// its log beside the others; Stop ends it with the rest.
func (f *Fleet) StartProcess(name string, argv []string, env ...string) (*Process, error) {
	return f.start(name, argv, env...)
}

func (f *Fleet) start(name string, argv []string, env ...string) (*Process, error) {
	p, err := startProcess(name, filepath.Join(f.WorkDir, "logs", name+".log"), argv, env)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	return p, nil
}

// OnStop runs fn when the fleet stops, before its processes end.
func (f *Fleet) OnStop(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onStop = append(f.onStop, fn)
}

// Stop ends every process in reverse start order (so kube-apiservers end before etcd,
// which they otherwise wait for) and removes WorkDir unless kept.
func (f *Fleet) Stop() error {
	f.mu.Lock()
	procs, hooks := f.procs, f.onStop
	f.procs, f.onStop = nil, nil
	f.mu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if !f.opts.KeepWorkDir {
		if err := os.RemoveAll(f.WorkDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Processes lists every process started, running or not.
func (f *Fleet) Processes() []*Process {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Process(nil), f.procs...)
}

// DumpLogs writes the last lines of every process log.
func (f *Fleet) DumpLogs(w io.Writer, lines int) {
	procs := f.Processes()
	sort.SliceStable(procs, func(i, j int) bool { return procs[i].Name < procs[j].Name })
	for _, p := range procs {
		fmt.Fprintf(w, "===== %s (%s)\n%s\n", p.Name, p.LogFile, p.Tail(lines))
	}
}
