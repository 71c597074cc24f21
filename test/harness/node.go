package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PauseImage is the sandbox image of every node, built from test/harness/pause.
const PauseImage = "local.gitops-addon/pause:1"

// NodeBinaries are the programs a node runs, beside Binaries (make pods-env builds them).
var NodeBinaries = []string{"kubelet", "kube-scheduler", "kube-proxy", "coredns"}

// Node runs a cluster's pods for real: in a network namespace of its own, a containerd
// (runc, CNI bridge), a kubelet, a kube-proxy and a CoreDNS serving the cluster's
// Services, plus the cluster's kube-scheduler. Its processes stop with the fleet, and
// what they leave (containers, mounts, the namespace, cgroups) is removed after them.
type Node struct {
	// Name is the Node object's name: <cluster>-node.
	Name string
	// IP is the node's address (kubelet, NodePorts); pods get addresses of PodCIDR.
	IP, PodCIDR string
	// Dir holds the node's configuration, containerd's and kubelet's state, pod logs.
	Dir string

	Containerd, Kubelet, Proxy, DNS, Scheduler *Process

	cluster *Cluster
	addrs   nodeAddresses
	netns   string
	veth    string
	cgroup  string
	socket  string
	// taints are registered by kubelet with the Node: only pods that tolerate them run on
	// it.
	taints []corev1.Taint
}

// nodeNames are the names of node index i's devices, namespace and cgroup, unique to this
// fleet: interface names have at most 15 characters.
func (f *Fleet) nodeNames(i int) (name, veth string) {
	return fmt.Sprintf("%sn%d", f.id, i), fmt.Sprintf("%sv%d", f.id, i)
}

// AddNode gives a cluster of a RealPods fleet a node, and returns once the Node is
// Ready. Images for its pods are added with Import. With taints, the Node registers with
// them, so only the pods that tolerate them run there: a cluster whose other workloads
// run as processes (the Argo CD fleet) gets a node for one test's pods alone.
func (f *Fleet) AddNode(ctx context.Context, c *Cluster, taints ...corev1.Taint) (*Node, error) {
	if !f.opts.RealPods {
		return nil, errors.New("AddNode needs a fleet started with Options.RealPods")
	}
	f.mu.Lock()
	f.nodeCount++
	i := f.nodeCount
	f.mu.Unlock()
	// The node's network namespace and its cgroup share one name.
	name, veth := f.nodeNames(i)
	n := &Node{
		Name: c.Name + "-node", Dir: filepath.Join(c.Dir, "node"), cluster: c, addrs: addressesOf(i),
		netns: name, veth: veth, cgroup: name, taints: taints,
	}
	n.IP, n.PodCIDR = n.addrs.nodeIP, n.addrs.podCIDR
	n.socket = filepath.Join(n.Dir, "containerd.sock")
	f.mu.Lock()
	f.nodes = append(f.nodes, n) // removed at Stop even if the start fails half-way
	f.mu.Unlock()
	if err := os.MkdirAll(n.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", n.Dir, err)
	}
	// Images and container roots; the kubelet's directory, with the pods' logs, stays.
	f.Bulk(filepath.Join(n.Dir, "containerd"))
	f.Bulk(filepath.Join(n.Dir, "images"))
	f.opts.Logf("%s: node %s (network, containerd, kubelet, kube-proxy, CoreDNS, kube-scheduler)", c.Name, n.Name)
	steps := []func(context.Context) error{
		func(context.Context) error { return addNodeNetwork(n.netns, n.veth, n.addrs) },
		func(context.Context) error { return addCgroup(n.cgroup) },
		func(ctx context.Context) error { return f.startContainerd(ctx, n) },
		func(ctx context.Context) error { return f.importPause(ctx, n) },
		func(ctx context.Context) error { return f.startKubelet(ctx, n) },
		func(context.Context) error { return f.startProxy(n) },
		func(context.Context) error { return f.startDNS(n) },
		func(context.Context) error { return f.startScheduler(n) },
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return n, nil
}

// inNetns runs a program of the node inside its network namespace only: `ip netns exec`
// would also give it a mount namespace of its own, and kubelet's volume mounts must be
// seen by containerd's containers (and by the teardown).
func (n *Node) inNetns(args ...string) []string {
	return append([]string{"nsenter", "--net=/run/netns/" + n.netns, "--"}, args...)
}

// nodeKubeconfig issues a client certificate of the cluster for user in groups and writes
// a kubeconfig reaching the cluster at FleetIP, as a node's programs do.
func (n *Node) nodeKubeconfig(name, user string, groups ...string) (string, error) {
	cert, err := n.cluster.clientCA.client(n.Dir, name, user, groups...)
	if err != nil {
		return "", err
	}
	file := filepath.Join(n.Dir, name+".kubeconfig")
	return file, writeKubeconfig(file, n.cluster.fleetURL(), n.cluster.CAData, cert)
}

// fleetURL is the kube-apiserver's address as nodes and pods reach it.
func (c *Cluster) fleetURL() string { return "https://" + FleetIP + ":" + strconv.Itoa(c.port) }

func (f *Fleet) startContainerd(ctx context.Context, n *Node) error {
	config := filepath.Join(n.Dir, "containerd.toml")
	cniConf := filepath.Join(n.Dir, "cni")
	if err := os.MkdirAll(cniConf, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cniConf, "10-gitops-addon.conflist"), []byte(cniConfig(n)), 0o600); err != nil {
		return fmt.Errorf("writing the CNI configuration: %w", err)
	}
	if err := os.WriteFile(config, []byte(containerdConfig(n, cniConf)), 0o600); err != nil {
		return fmt.Errorf("writing containerd's configuration: %w", err)
	}
	var err error
	if n.Containerd, err = f.run(n.cluster.Name+"-containerd", n.inNetns("containerd", "--config", config), nil, tierNode); err != nil {
		return err
	}
	return waitFor(ctx, "containerd's socket", 30*time.Second, func() (bool, error) {
		if exited, err := n.Containerd.Exited(); exited {
			return false, n.Containerd.explain(fmt.Errorf("containerd exited: %w", err))
		}
		_, err := os.Stat(n.socket)
		return err == nil, nil
	})
}

// containerdConfig is containerd 1.6's configuration (Debian's): everything under the
// node's directory, runc with cgroupfs, the local pause image, and CRI's oom_score_adj
// restricted (root here may not lower it, and every sandbox fails without).
func containerdConfig(n *Node, cniConf string) string {
	d := n.Dir
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
`, filepath.Join(d, "containerd"), filepath.Join(d, "containerd-state"), n.socket, filepath.Join(d, "opt"), PauseImage,
		filepath.Join(d, "runc"), cniConf)
}

// cniConfig attaches pods to the node's bridge cni0 (created with the node's network),
// with addresses of its pod range kept under the node's directory.
func cniConfig(n *Node) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "gitops-addon",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q, "gateway": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, filepath.Join(n.Dir, "cni-ipam"), n.addrs.podCIDR, n.addrs.gateway)
}

// Import loads an image tarball (docker-archive or OCI) into the node's containerd, where
// its kubelet finds it: no registry is needed.
func (n *Node) Import(ctx context.Context, tarball string) error {
	cmd := exec.CommandContext(ctx, "ctr", "--address", n.socket, "--namespace", "k8s.io", "images", "import", tarball)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("importing %s into %s's containerd: %w: %s", filepath.Base(tarball), n.Name, err, out)
	}
	return nil
}

// ImportImage writes an image made from local files and imports it. An image for several
// nodes is better written once (ImageSpec.WriteDockerArchiveIn) and imported into each.
func (n *Node) ImportImage(ctx context.Context, spec ImageSpec) error {
	file, err := spec.WriteDockerArchiveIn(filepath.Join(n.Dir, "images"))
	if err != nil {
		return err
	}
	return n.Import(ctx, file)
}

func (f *Fleet) importPause(ctx context.Context, n *Node) error {
	f.mu.Lock()
	pause := f.pauseBinary
	f.mu.Unlock()
	if pause == "" {
		var err error
		if pause, err = BuildStatic(ctx, filepath.Join(f.WorkDir, "tmp"), "./test/harness/pause"); err != nil {
			return err
		}
		f.mu.Lock()
		f.pauseBinary = pause
		f.mu.Unlock()
	}
	return n.ImportImage(ctx, StaticBinaryImage(PauseImage, pause, "/pause", "65535:65535"))
}

func (f *Fleet) startKubelet(ctx context.Context, n *Node) error {
	kubeconfig, err := n.nodeKubeconfig("kubelet", "system:node:"+n.Name, "system:nodes")
	if err != nil {
		return err
	}
	resolv := filepath.Join(n.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+n.addrs.gateway+"\n"), 0o600); err != nil {
		return err
	}
	config := filepath.Join(n.Dir, "kubelet.yaml")
	settings, err := kubeletConfig(n, resolv)
	if err != nil {
		return err
	}
	if err := os.WriteFile(config, []byte(settings), 0o600); err != nil {
		return fmt.Errorf("writing the kubelet's configuration: %w", err)
	}
	args := n.inNetns(f.bin("kubelet"), "--config="+config, "--kubeconfig="+kubeconfig, "--root-dir="+filepath.Join(n.Dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.Dir, "kubelet-pki"), "--hostname-override="+n.Name, "--node-ip="+n.IP)
	if n.Kubelet, err = f.run(n.cluster.Name+"-kubelet", args, nil, tierNode); err != nil {
		return err
	}
	return waitFor(ctx, "node "+n.Name+" Ready", 2*time.Minute, func() (bool, error) {
		if exited, err := n.Kubelet.Exited(); exited {
			return false, n.Kubelet.explain(fmt.Errorf("kubelet exited: %w", err))
		}
		node := &corev1.Node{}
		if err := n.cluster.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		return slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}), nil
	})
}

// kubeletConfig: cgroupfs under the node's own cgroup (cgroups v1 here), the pods' DNS at
// the node's CoreDNS, logs and state under the node's directory, no image garbage
// collection (imported images cannot be pulled again), eviction only when really short;
// the node's taints registered with it.
func kubeletConfig(n *Node, resolv string) (string, error) {
	taints, err := json.Marshal(append([]corev1.Taint{}, n.taints...)) // [] when none, not null
	if err != nil {
		return "", fmt.Errorf("the node's taints: %w", err)
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[2]q}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: /%[3]s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%[4]s
clusterDomain: cluster.local
clusterDNS: [%[5]s]
resolvConf: %[6]q
podLogsDir: %[7]q
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
serializeImagePulls: false
rotateCertificates: false
registerWithTaints: %[8]s
`, n.IP, n.cluster.clientCA.CertFile, n.cgroup, n.socket, n.addrs.gateway, resolv, filepath.Join(n.Dir, "pod-logs"), taints), nil
}

func (f *Fleet) startProxy(n *Node) error {
	kubeconfig, err := n.nodeKubeconfig("kube-proxy", "system:kube-proxy")
	if err != nil {
		return err
	}
	config := filepath.Join(n.Dir, "kube-proxy.yaml")
	content := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
iptables: {localhostNodePorts: false}
`, kubeconfig, n.PodCIDR, n.Name, n.IP)
	if err := os.WriteFile(config, []byte(content), 0o600); err != nil {
		return fmt.Errorf("writing kube-proxy's configuration: %w", err)
	}
	n.Proxy, err = f.run(n.cluster.Name+"-kube-proxy", n.inNetns(f.bin("kube-proxy"), "--config="+config), nil, tierNode)
	return err
}

// startDNS serves the cluster's Services by name at the pods' gateway, as CoreDNS does
// in a cluster (there behind the kube-dns Service).
func (f *Fleet) startDNS(n *Node) error {
	kubeconfig, err := n.nodeKubeconfig("coredns", "harness-coredns", "system:masters")
	if err != nil {
		return err
	}
	corefile := filepath.Join(n.Dir, "Corefile")
	content := fmt.Sprintf(`.:53 {
    bind %s
    errors
    health 127.0.0.1:18080
    ready 127.0.0.1:18181
    cache 5
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`, n.addrs.gateway, kubeconfig)
	if err := os.WriteFile(corefile, []byte(content), 0o600); err != nil {
		return fmt.Errorf("writing the Corefile: %w", err)
	}
	n.DNS, err = f.run(n.cluster.Name+"-coredns", n.inNetns(f.bin("coredns"), "-conf", corefile), nil, tierNode)
	return err
}

func (f *Fleet) startScheduler(n *Node) error {
	cert, err := n.cluster.clientCA.client(n.Dir, "kube-scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(n.Dir, "kube-scheduler.kubeconfig")
	if err := writeKubeconfig(kubeconfig, n.cluster.URL, n.cluster.CAData, cert); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{f.bin("kube-scheduler"), "--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--leader-elect=false"}
	n.Scheduler, err = f.run(n.cluster.Name+"-kube-scheduler", args, nil, tierNode)
	return err
}

// cgroupHierarchies are the mounted cgroup v1 hierarchies (cgroups v2 has one).
func cgroupHierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 3 && (fields[2] == "cgroup" || fields[2] == "cgroup2") {
			out = append(out, fields[1])
		}
	}
	return out, s.Err()
}

// addCgroup creates the node's cgroup in every hierarchy: kubelet's cgroupRoot must exist.
func addCgroup(name string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		if err := os.MkdirAll(filepath.Join(h, name), 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s in %s: %w", name, h, err)
		}
	}
	return nil
}

// remove ends what the node's processes leave running once they are stopped, and removes
// what they leave behind: containers (every process in the node's cgroup), runc shims,
// mounts under the node's directory, the network namespace with its devices, cgroups.
func (n *Node) remove() error {
	// In this order (Go evaluates the arguments left to right): nothing may run in the
	// node when its mounts, its namespace and its cgroups go.
	return errors.Join(killCgroup(n.cgroup), killShims(n.socket), unmountUnder(n.Dir), removeNetwork(n.netns, n.veth), removeCgroup(n.cgroup))
}

// killCgroup kills every process in a cgroup tree until it is empty.
func killCgroup(name string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids, err := cgroupProcesses(name, "")
		if err != nil || len(pids) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still in cgroup %s after 20 s: %v", name, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// Not a wait on a condition: a killed process leaves its cgroup when the kernel has
		// reaped it, and a process forked meanwhile needs its own SIGKILL; so kill, look again.
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupProcesses lists the processes in a cgroup tree, in every hierarchy, of the
// cgroups whose path contains within ("" for all).
func cgroupProcesses(name, within string) ([]int, error) {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, h := range hierarchies {
		_ = filepath.WalkDir(filepath.Join(h, name), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" || !strings.Contains(path, within) {
				return nil //nolint:nilerr // a cgroup removed meanwhile
			}
			data, _ := os.ReadFile(path)
			for _, field := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	pids := slices.Collect(maps.Keys(seen))
	slices.Sort(pids)
	return pids, nil
}

// killShims kills the runc shims a containerd started (they leave its process group).
func killShims(socket string) error {
	for _, p := range processesMatching(func(cmdline string) bool {
		return strings.Contains(cmdline, "containerd-shim") && strings.Contains(cmdline, socket)
	}) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return nil
}

// processesMatching lists the processes whose command line matches.
func processesMatching(match func(cmdline string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && match(strings.ReplaceAll(string(data), "\x00", " ")) {
			out = append(out, pid)
		}
	}
	return out
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

func unmountUnder(dir string) error {
	var errs []error
	for range 3 { // a mount may hide another one at the same point
		for _, m := range mountsUnder(dir) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
	}
	if left := mountsUnder(dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %v", left))
	}
	return errors.Join(errs...)
}

// removeCgroup removes a cgroup tree, deepest first, in every hierarchy.
func removeCgroup(name string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, name), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what the fleet's nodes left on the machine after Stop: processes,
// mounts under WorkDir, network namespaces, devices, iptables rules, cgroups. Empty when
// teardown was complete.
func (f *Fleet) Leftovers() []string {
	var out []string
	for _, pid := range processesMatching(func(cmdline string) bool { return strings.Contains(cmdline, f.WorkDir) }) {
		out = append(out, fmt.Sprintf("process %d", pid))
	}
	for _, m := range mountsUnder(f.WorkDir) {
		out = append(out, "mount "+m)
	}
	for _, entry := range f.newOutsideEntries() {
		out = append(out, "file "+entry)
	}
	// Only a fleet with nodes adds iptables rules, and only it recorded the machine's own
	// before it started: a process fleet would otherwise report the default chain
	// policies (-P INPUT ACCEPT, ...) that listing a table on nf_tables shows.
	if f.rulesBefore != nil {
		for rule := range hostRules() {
			if !f.rulesBefore[rule] {
				out = append(out, "iptables rule "+rule)
			}
		}
	}
	if links, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, l := range links {
			if strings.HasPrefix(l.Name(), f.id) {
				out = append(out, "network device "+l.Name())
			}
		}
	}
	if hierarchies, err := cgroupHierarchies(); err == nil {
		for _, h := range hierarchies {
			entries, _ := os.ReadDir(h)
			for _, e := range entries {
				if e.IsDir() && strings.HasPrefix(e.Name(), f.id) {
					out = append(out, "cgroup "+filepath.Join(h, e.Name()))
				}
			}
		}
	}
	return out
}

// outsideRoots are where a node's programs write outside its directory whatever their
// configuration: named network namespaces (the nodes', the pods' cni-*, and /run/netns
// itself, which `ip netns add` creates mounted on itself), containerd's shim sockets
// (/run/containerd/s), the CNI results cache, kubelet's links to container logs.
var outsideRoots = []string{"/run/netns", "/run/containerd", "/var/lib/cni", "/var/log/containers"}

// outsideEntries lists every path under outsideRoots (the roots included), three levels deep.
func outsideEntries() map[string]bool {
	out := map[string]bool{}
	for _, root := range outsideRoots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil //nolint:nilerr // a root that does not exist, or a path gone meanwhile
			}
			out[path] = true
			if d.IsDir() && strings.Count(strings.TrimPrefix(path, root), "/") >= 2 {
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}

// newOutsideEntries lists what appeared under outsideRoots since the fleet started: the
// topmost new paths (a new directory stands for everything in it). Only a fleet with nodes
// recorded them at its start and writes there: a process fleet would otherwise report
// every root that is on the machine (containerd's own /run/containerd among them).
func (f *Fleet) newOutsideEntries() []string {
	if f.outsideBefore == nil {
		return nil
	}
	var out []string
	for path := range outsideEntries() {
		if !f.outsideBefore[path] && f.outsideBefore[filepath.Dir(path)] || !f.outsideBefore[path] && slices.Contains(outsideRoots, path) {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

// PodProcessUsers lists the user ids the processes of a pod run as on this node (its
// sandbox's pause included), read from the pod's cgroup and /proc: what the kernel
// enforces, not what the manifest asks for.
func (n *Node) PodProcessUsers(podUID string) (map[int]int, error) {
	pids, err := cgroupProcesses(n.cgroup, "pod"+podUID)
	if err != nil {
		return nil, err
	}
	users := map[int]int{}
	for _, pid := range pids {
		if uid, ok := processUser(pid); ok {
			users[pid] = uid
		}
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("no process of pod %s on node %s", podUID, n.Name)
	}
	return users, nil
}

// processUser is the real user id of a process, from /proc/<pid>/status.
func processUser(pid int) (int, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && fields[0] == "Uid:" {
			uid, err := strconv.Atoi(fields[1])
			return uid, err == nil
		}
	}
	return 0, false
}

// PodLogs is the end of each container log of a pod of the node (its last lines, in the
// kubelet's CRI format), for a test to say why a container failed.
func (n *Node) PodLogs(namespace, pod string, lines int) string {
	files, _ := filepath.Glob(filepath.Join(n.Dir, "pod-logs", namespace+"_"+pod+"_*", "*", "*.log"))
	var b strings.Builder
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue // a container that wrote nothing (an init container's copy step)
		}
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "--- %s\n%s\n", strings.TrimPrefix(file, n.Dir+"/"), strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
	return b.String()
}

// hostRules are the iptables rules of the machine's own network namespace, each as
// `iptables -t <table> -S` prints it, prefixed with its table.
func hostRules() map[string]bool {
	rules := map[string]bool{}
	for _, table := range []string{"filter", "nat", "mangle", "raw"} {
		out, err := exec.Command("iptables", "-t", table, "-S").Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" {
				rules[table+": "+line] = true
			}
		}
	}
	return rules
}
