package harness

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// The addresses of a fleet whose clusters run real pods. Each node lives in a network
// namespace of its own (so that every cluster's kube-proxy owns its iptables, as on a
// real node), joined to the machine by a veth pair; nothing of it is reachable from
// outside the machine. FleetIP, on a bridge of the machine's own, is where every node
// and pod reaches the kube-apiservers (bound to every address of the machine in this mode).
const (
	// FleetIP is the address of the machine the nodes and pods reach it by.
	FleetIP = "10.77.0.1"
	// kubernetesServiceIP is the first address of serviceCIDR: the kubernetes Service.
	kubernetesServiceIP = "10.96.0.1"
)

// nodeAddresses are the addresses of the node with index i (1 to 250).
type nodeAddresses struct {
	hostSide string // the veth's end on the machine, e.g. 10.77.3.1/24
	nodeIP   string // the node's address (its eth0), e.g. 10.77.3.2
	gateway  string // the pods' gateway and DNS server (bridge cni0), e.g. 10.78.3.1
	podCIDR  string // e.g. 10.78.3.0/24
}

func addressesOf(i int) nodeAddresses {
	return nodeAddresses{
		hostSide: fmt.Sprintf("10.77.%d.1/24", i),
		nodeIP:   fmt.Sprintf("10.77.%d.2", i),
		gateway:  fmt.Sprintf("10.78.%d.1", i),
		podCIDR:  fmt.Sprintf("10.78.%d.0/24", i),
	}
}

// run runs a command of the machine's network tools and says what failed.
func runTool(args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// checkRealPodsHost says why this machine cannot run real pods, or nil: root, overlayfs,
// network namespaces and the tools.
func checkRealPodsHost() error {
	if os.Geteuid() != 0 {
		return errors.New("running real pods needs root (network namespaces, mounts, cgroups): run as root or use the process fleet")
	}
	fs, err := os.ReadFile("/proc/filesystems")
	if err != nil || !bytes.Contains(fs, []byte("overlay")) {
		return errors.New("running real pods needs the overlay filesystem (containerd's snapshotter); this kernel does not offer it")
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return errors.New("running real pods needs network namespaces; this kernel does not offer them")
	}
	for _, tool := range []string{"ip", "nsenter", "iptables", "containerd", "ctr", "runc", "/usr/lib/cni/bridge"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("running real pods needs %s: run `make pods-env`, which installs it", tool)
		}
	}
	return nil
}

// checkFleetIPFree says so when FleetIP is on this machine although no other real-pod
// fleet holds the lock: one was killed before its teardown.
func checkFleetIPFree() error {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if strings.HasPrefix(a.String(), FleetIP+"/") {
				return fmt.Errorf("%s is already on this machine, and no real-pod fleet holds its lock: a previous one was "+
					"killed before its teardown (remove the device that carries it: ip -br addr | grep %s)", FleetIP, FleetIP)
			}
		}
	}
	return nil
}

// addFleetBridge puts FleetIP on a bridge of the machine's own.
func addFleetBridge(name string) error {
	for _, args := range [][]string{
		{"ip", "link", "add", name, "type", "bridge"},
		{"ip", "addr", "add", FleetIP + "/32", "dev", name},
		{"ip", "link", "set", name, "up"},
	} {
		if err := runTool(args...); err != nil {
			return fmt.Errorf("adding the fleet's address: %w", err)
		}
	}
	return nil
}

// addNodeNetwork creates the node's network namespace: eth0 (the node's address) joined
// to the machine by a veth pair, a default route through the machine, forwarding on, and
// the pods' bridge cni0 with their gateway (CNI's bridge plugin then uses it as it is).
func addNodeNetwork(netns, veth string, a nodeAddresses) error {
	in := func(args ...string) []string { return append([]string{"ip", "netns", "exec", netns}, args...) }
	steps := [][]string{
		{"ip", "netns", "add", netns},
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns},
		{"ip", "addr", "add", a.hostSide, "dev", veth},
		{"ip", "link", "set", veth, "up"},
		in("ip", "link", "set", "lo", "up"),
		in("ip", "addr", "add", a.nodeIP+"/24", "dev", "eth0"),
		in("ip", "link", "set", "eth0", "up"),
		in("ip", "route", "add", "default", "via", strings.TrimSuffix(a.hostSide, "/24")),
		in("sysctl", "-qw", "net.ipv4.ip_forward=1"),
		in("ip", "link", "add", "cni0", "type", "bridge"),
		in("ip", "addr", "add", a.gateway+"/24", "dev", "cni0"),
		in("ip", "link", "set", "cni0", "up"),
		// Pods leave the node with its address, as behind a real node's interface.
		in("iptables", "-t", "nat", "-A", "POSTROUTING", "-s", a.podCIDR, "-o", "eth0", "-j", "MASQUERADE"),
	}
	for _, args := range steps {
		if err := runTool(args...); err != nil {
			return fmt.Errorf("creating the node's network: %w", err)
		}
	}
	return nil
}

// removeNetwork deletes a network namespace (with everything in it: its interfaces, the
// veth pair, its iptables) or a device of the machine; what is already gone is no error.
func removeNetwork(netns, device string) error {
	var errs []error
	if netns != "" {
		if _, err := os.Stat("/run/netns/" + netns); err == nil {
			errs = append(errs, runTool("ip", "netns", "del", netns))
		}
	}
	if device != "" {
		// Deleting the namespace deletes its veth pair, the kernel doing so a moment later:
		// a device gone between the look and the delete is removed, as wanted (the
		// fleet's Leftovers check still finds any that stays).
		if _, err := net.InterfaceByName(device); err == nil {
			if err := runTool("ip", "link", "del", device); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
