// Package harness starts a real Open Cluster Management hub and real spoke clusters on
// this machine, as processes listening on 127.0.0.1 under a temporary directory, for
// end-to-end tests and the demo:
//
//   - one etcd shared by every cluster, each kube-apiserver under its own --etcd-prefix;
//   - per cluster a kube-apiserver (RBAC, API aggregation, audit of writes) and a
//     kube-controller-manager (CSR signing, garbage collection, namespace deletion);
//   - on the hub, OCM's CRDs and hub components: registration controller, placement
//     controller, addon manager, and one webhook server for the registration and work
//     admission webhooks and the addon API conversion webhook;
//   - on each spoke, a klusterlet (OCM registration agent and work agent) joined through
//     the real flow: bootstrap kubeconfig, CSR, approval, hubAcceptsClient.
//
// Every binary comes from Options.BinDir (`make e2e-env` builds them from source). Stop
// ends every process; a process whose starter dies first gets SIGKILL.
//
//	f, err := harness.Start(ctx, harness.Options{Logf: log.Printf})
//	defer f.Stop()
//	spoke, err := f.AddSpoke(ctx, "cluster1")
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// Options configures Start.
type Options struct {
	// BinDir holds the binaries (see Binaries); default testenv.BinDir(), <repo>/bin.
	BinDir string
	// WorkDir holds every file of the fleet: certificates, kubeconfigs, etcd data and
	// logs/<process>.log. Default: a new temporary directory.
	WorkDir string
	// KeepWorkDir keeps WorkDir after Stop (also when HARNESS_KEEP_WORKDIR is set).
	KeepWorkDir bool
	// Logf reports progress, one line per step; default silent.
	Logf func(format string, args ...any)
	// RealPods lets clusters get a node that runs pods (AddNode): the kube-apiservers then
	// listen on every address of the machine and advertise FleetIP, where nodes and pods
	// reach them. It needs root, overlayfs and network namespaces (make pods-env).
	RealPods bool
}

// Binaries are the programs a fleet runs, all from Options.BinDir. ocm-webhooks is OCM's
// registration, work and addon webhooks in one server (hack/build-ocm.sh): each of OCM's
// own webhook-server commands binds fixed ports on every interface; ocm-webhooks binds
// one free port of 127.0.0.1 and nothing else, so fleets can run side by side.
var Binaries = []string{
	"etcd", "kube-apiserver", "kube-controller-manager",
	"ocm-registration", "ocm-work", "ocm-placement", "ocm-addon", "ocm-webhooks",
}

// MissingBinaries lists the Binaries absent from dir.
func MissingBinaries(dir string) []string { return missingFrom(dir, Binaries) }

// missingNodeBinaries lists the NodeBinaries absent from dir.
func missingNodeBinaries(dir string) []string { return missingFrom(dir, NodeBinaries) }

func missingFrom(dir string, names []string) []string {
	var missing []string
	for _, b := range names {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// Fleet is a running hub and its spokes.
type Fleet struct {
	Hub *Cluster
	// Spokes are the joined spokes by name; AddSpoke adds to it.
	Spokes map[string]*Spoke
	// WorkDir holds every file of the fleet.
	WorkDir string

	opts         Options
	etcdURL      string
	servingCA    *authority // signs every serving certificate; clients trust it
	frontProxyCA *authority
	webhookPort  int

	mu      sync.Mutex
	procs   []*Process
	joining map[string]bool // spokes being added
	closed  bool            // Stop has begun: no new process
	onStop  []func()
	// id prefixes the names of what real-pod nodes add to the machine (network
	// namespaces, devices, cgroups); nodes are the nodes added, bridge carries FleetIP.
	id          string
	nodes       []*Node
	nodeCount   int
	bridge      string
	pauseBinary string
	// realPodLock is held while a real-pod fleet runs (lockRealPods).
	realPodLock *os.File
	// keptForDiagnosis: a failure keeps WorkDir's logs, certificates and kubeconfigs after
	// Stop, but not its bulk (Bulk), unless Options.KeepWorkDir keeps everything.
	keptForDiagnosis bool
	bulk             []string
	// controllersOnce reads kube-controller-manager's known controllers once
	// (knownControllers).
	controllersOnce  sync.Once
	controllersKnown map[string]bool
	controllersErr   error
	// outsideBefore are the paths under outsideRoots when the fleet started, where the
	// nodes' programs write whatever their configuration says: what is new there at Stop
	// is removed.
	outsideBefore map[string]bool
	// rulesBefore are the machine's iptables rules when the fleet started: the nodes' own
	// live in their network namespaces, so none may be added.
	rulesBefore map[string]bool
	stopOnce    sync.Once
	stopErr     error
}

// Scheme has client-go's kinds, CRDs, APIServices, every OCM API group and version the
// hub serves, and gitops-addon's API.
func Scheme() *runtime.Scheme {
	s, err := testenv.Scheme(apiregistrationv1.AddToScheme, clusterv1alpha1.Install, clusterv1beta2.Install, workv1alpha1.Install)
	if err != nil {
		panic(err)
	}
	return s
}

// Start starts etcd, the hub's control plane and OCM's hub components, and returns once
// the hub can accept spokes. On error everything started is stopped again, and WorkDir
// is kept for its logs.
func Start(ctx context.Context, o Options) (*Fleet, error) {
	f, err := newFleet(o)
	if err != nil {
		return nil, err
	}
	if err := f.startHub(ctx); err != nil {
		f.KeepForDiagnosis()
		if stopErr := f.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, fmt.Errorf("%w\n(the fleet's files and logs are kept in %s)", err, f.WorkDir)
	}
	return f, nil
}

func newFleet(o Options) (_ *Fleet, err error) {
	if o.BinDir == "" {
		o.BinDir = testenv.BinDir()
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if os.Getenv("HARNESS_KEEP_WORKDIR") != "" {
		o.KeepWorkDir = true
	}
	if missing := MissingBinaries(o.BinDir); len(missing) > 0 {
		return nil, fmt.Errorf("%v missing from %s: run `make fleet-env` (part of make e2e-env) to build them from source", missing, o.BinDir)
	}
	var realPodLock *os.File
	if o.RealPods {
		// Root and the tools first: the lock is root's file.
		if err := checkRealPodsHost(); err != nil {
			return nil, err
		}
		if realPodLock, err = lockRealPods(o.Logf); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				closeLock(realPodLock)
			}
		}()
		if err := checkFleetIPFree(); err != nil {
			return nil, err
		}
		if missing := missingNodeBinaries(o.BinDir); len(missing) > 0 {
			return nil, fmt.Errorf("%v missing from %s: run `make pods-env` to build them from source", missing, o.BinDir)
		}
	}
	if o.WorkDir == "" {
		dir, err := os.MkdirTemp("", "gitops-addon-harness-")
		if err != nil {
			return nil, fmt.Errorf("creating the fleet's directory: %w", err)
		}
		o.WorkDir = dir
	}
	for _, d := range []string{"logs", "etcd", "tmp"} {
		if err := os.MkdirAll(filepath.Join(o.WorkDir, d), 0o700); err != nil {
			return nil, fmt.Errorf("creating the fleet's directories: %w", err)
		}
	}
	f := &Fleet{Spokes: map[string]*Spoke{}, joining: map[string]bool{}, WorkDir: o.WorkDir, opts: o,
		id: fmt.Sprintf("ga%04x", os.Getpid()%0x10000), realPodLock: realPodLock}
	if o.RealPods {
		f.outsideBefore = outsideEntries()
		f.rulesBefore = hostRules()
		f.bridge = f.id + "f"
		if err := addFleetBridge(f.bridge); err != nil {
			_ = removeNetwork("", f.bridge)
			return nil, err
		}
	}
	return f, nil
}

func (f *Fleet) startHub(ctx context.Context) error {
	var err error
	if f.servingCA, err = newAuthority(f.WorkDir, "serving-ca"); err != nil {
		return err
	}
	if f.frontProxyCA, err = newAuthority(f.WorkDir, "front-proxy-ca"); err != nil {
		return err
	}
	f.opts.Logf("etcd")
	if err := f.startEtcd(ctx); err != nil {
		return err
	}
	f.opts.Logf("hub: kube-apiserver and kube-controller-manager")
	if f.Hub, err = f.startCluster(ctx, "hub"); err != nil {
		return err
	}
	return f.startHubComponents(ctx)
}

func (f *Fleet) startEtcd(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	f.etcdURL = "http://" + loopback(ports[0])
	peerURL := "http://" + loopback(ports[1])
	p, err := f.run("etcd", []string{
		f.bin("etcd"), "--data-dir=" + filepath.Join(f.WorkDir, "etcd"),
		"--listen-client-urls=" + f.etcdURL, "--advertise-client-urls=" + f.etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		// Throwaway data: durability buys nothing and fsync costs seconds on slow disks.
		"--unsafe-no-fsync", "--log-level=warn",
	}, nil, tierEtcd)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, "etcd /health", f.etcdURL+"/health", nil, time.Minute); err != nil {
		return p.explain(err)
	}
	return nil
}

// StartProcess runs another program of the fleet (gitops-addon's manager or agent):
// args[0] is the program, env is added to this program's environment. Its output goes
// to WorkDir/logs/<name>.log, DumpLogs shows it, Stop ends it with the fleet. Use the
// returned Process to Kill, Stop, Start or Restart it.
func (f *Fleet) StartProcess(name string, args []string, env ...string) (*Process, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("starting %s: no program given", name)
	}
	return f.run(name, args, env, tierClient)
}

// run starts a process with its log in WorkDir/logs and registers it for Stop. TMPDIR
// points into WorkDir: OCM's components write self-signed serving certificates there.
func (f *Fleet) run(name string, args, env []string, tier int) (*Process, error) {
	env = append([]string{"TMPDIR=" + filepath.Join(f.WorkDir, "tmp")}, env...)
	p := newProcess(name, filepath.Join(f.WorkDir, "logs", name+".log"), args, env, tier)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("starting %s: the fleet is stopped", name)
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	f.procs = append(f.procs, p)
	return p, nil
}

func (f *Fleet) bin(name string) string { return filepath.Join(f.opts.BinDir, name) }

// Processes lists every process the fleet started, in start order, running or not.
func (f *Fleet) Processes() []*Process {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Process(nil), f.procs...)
}

// Stop ends every process, clients first and etcd last (SIGTERM, then SIGKILL after a
// grace period), and removes WorkDir unless kept. It may be called more than once.
func (f *Fleet) Stop() error {
	f.stopOnce.Do(func() { f.stopErr = f.stop() })
	return f.stopErr
}

// OnStop registers fn to run when the fleet stops, before any process is stopped (for
// servers a test runs in-process, such as an aggregated API server of a spoke). The last
// registered runs first.
func (f *Fleet) OnStop(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onStop = append(f.onStop, fn)
}

func (f *Fleet) stop() error {
	f.mu.Lock()
	procs, hooks, keptForDiagnosis := f.procs, f.onStop, f.keptForDiagnosis
	f.closed = true
	f.mu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
	var errs []error
	for tier := tierClient; tier <= tierEtcd; tier++ {
		errs = append(errs, stopTier(procs, tier)...)
	}
	errs = append(errs, f.removeNodes()...)
	closeLock(f.realPodLock)
	switch {
	case f.opts.KeepWorkDir:
		f.opts.Logf("fleet stopped; its files stay in %s", f.WorkDir)
	case keptForDiagnosis:
		errs = append(errs, f.removeBulk()...)
		f.opts.Logf("fleet stopped; its logs, certificates and kubeconfigs stay in %s "+
			"(its nodes' images and containers are removed: HARNESS_KEEP_WORKDIR=1 keeps everything)", f.WorkDir)
	default:
		if err := removeAll(f.WorkDir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", f.WorkDir, err))
		}
	}
	return errors.Join(errs...)
}

// KeepForDiagnosis keeps WorkDir after Stop for a failure's diagnosis: its logs,
// certificates and kubeconfigs, not its bulk. A real-pod fleet's nodes hold gigabytes of
// images and container roots, and a machine that keeps them after every failed run fills
// its disk within a few (CI's TestRealPods once failed on "no space left on device").
func (f *Fleet) KeepForDiagnosis() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keptForDiagnosis = true
}

// Bulk names a directory of WorkDir that Stop removes even when it keeps WorkDir for a
// failure's diagnosis: images, container roots, anything large and rebuilt by a rerun.
func (f *Fleet) Bulk(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bulk = append(f.bulk, dir)
}

func (f *Fleet) removeBulk() []error {
	f.mu.Lock()
	bulk := f.bulk
	f.mu.Unlock()
	var errs []error
	for _, dir := range bulk {
		if err := removeAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
		}
	}
	return errs
}

// removeAll removes dir as os.RemoveAll does, also where a process of the fleet left a
// directory its owner may not list (Argo CD's repo-server makes its temporary directories
// 0300): root removes it anyway, any other user running the demo could not.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	grantOwner(dir)
	return os.RemoveAll(dir)
}

// grantOwner gives the owner read, write and search on every directory under root, so
// that it can remove what they hold.
func grantOwner(root string) {
	info, err := os.Lstat(root)
	if err != nil || !info.IsDir() {
		return
	}
	_ = os.Chmod(root, info.Mode().Perm()|0o700)
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() {
			grantOwner(filepath.Join(root, e.Name()))
		}
	}
}

// removeNodes removes what the real-pod nodes left once their processes stopped, and the
// fleet's address.
func (f *Fleet) removeNodes() []error {
	f.mu.Lock()
	nodes := f.nodes
	f.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		if err := n.remove(); err != nil {
			errs = append(errs, fmt.Errorf("removing node %s: %w", n.Name, err))
		}
	}
	if f.bridge != "" {
		if err := removeNetwork("", f.bridge); err != nil {
			errs = append(errs, err)
		}
		for _, entry := range f.newOutsideEntries() {
			// A network namespace file is mounted (and /run/netns on itself): unmount first.
			errs = append(errs, unmountUnder(entry))
			if err := os.RemoveAll(entry); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// stopTier stops the processes of one tier in parallel: they do not depend on each other.
func stopTier(procs []*Process, tier int) []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range procs {
		if p.tier != tier {
			continue
		}
		wg.Go(func() {
			if err := p.Stop(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// DumpLogs writes the last tailLines lines of every process's log, for a failing test.
func (f *Fleet) DumpLogs(w io.Writer, tailLines int) {
	for _, p := range f.Processes() {
		state := "running"
		if exited, err := p.Exited(); exited {
			state = fmt.Sprintf("exited: %v", err)
		}
		fmt.Fprintf(w, "===== %s (%s; %s)\n%s\n", p.Name, state, p.LogFile, p.Tail(tailLines))
	}
}

// requireBinaries fails the test, naming what to run, when a fleet binary is missing.
func requireBinaries(t testing.TB, binDir string) {
	if missing := MissingBinaries(binDir); len(missing) > 0 {
		t.Fatalf("%v missing from %s: run `make e2e-env` (make test does) to build them from source", missing, binDir)
	}
}

// StartForTest starts a fleet with the given spokes joined, stopped when the test ends;
// if the test failed, the tail of every log goes to the test output first and WorkDir is
// kept. It fails the test when the binaries are not built: a fleet test that skips would
// pass without having run. Logf defaults to t.Logf.
func StartForTest(t *testing.T, o Options, spokes ...string) *Fleet {
	t.Helper()
	if o.BinDir == "" {
		o.BinDir = testenv.BinDir()
	}
	requireBinaries(t, o.BinDir)
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("starting the fleet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpLogs(testWriter{t}, 40)
			f.KeepForDiagnosis()
		}
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	if _, err := f.AddSpokes(ctx, spokes...); err != nil {
		t.Fatalf("joining spokes %v: %v", spokes, err)
	}
	return f
}

// testWriter writes to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// RealPods says whether the fleet's clusters can get nodes (Options.RealPods): programs
// that pods must reach then listen on FleetIP too.
func (f *Fleet) RealPods() bool { return f.opts.RealPods }

// BinDir is the folder the fleet's programs come from.
func (f *Fleet) BinDir() string { return f.opts.BinDir }

// Logf reports a step of the fleet's user as the fleet reports its own (Options.Logf).
func (f *Fleet) Logf(format string, args ...any) { f.opts.Logf(format, args...) }
