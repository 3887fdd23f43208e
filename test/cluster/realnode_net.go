package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// slotRoot holds one directory per real node of this machine, named by its slot, with the owner's PID
	// in slotOwnerFile; .lock serialises claims. It is under /run (tmpfs on most hosts, and what the
	// node agent's chart mounts).
	slotRoot      = "/run/flotilla-realnode"
	slotOwnerFile = "owner"
	maxSlots      = 64
	// cgroupRoot is where the /sys/fs/cgroup hierarchies are mounted.
	cgroupRoot = "/sys/fs/cgroup"
)

// nodeNet is what a slot gives a real node: its directory, bridge, pod subnet and Service range.
type nodeNet struct {
	slot        int
	dir         string
	bridge      string
	podCIDR     *net.IPNet // 10.244.<slot>.0/24; the bridge holds its first address
	nodeIP      net.IP     // the bridge's address: the node's InternalIP, the pods' gateway
	serviceCIDR *net.IPNet // 10.96.<slot>.0/24
	serviceIP   net.IP     // the kubernetes Service, also held by the bridge
}

func newNodeNet(slot int) *nodeNet {
	return &nodeNet{
		slot:        slot,
		dir:         filepath.Join(slotRoot, strconv.Itoa(slot)),
		bridge:      "flotilla" + strconv.Itoa(slot),
		podCIDR:     &net.IPNet{IP: net.IPv4(10, 244, byte(slot), 0).To4(), Mask: net.CIDRMask(24, 32)},
		nodeIP:      net.IPv4(10, 244, byte(slot), 1).To4(),
		serviceCIDR: &net.IPNet{IP: net.IPv4(10, 96, byte(slot), 0).To4(), Mask: net.CIDRMask(24, 32)},
		serviceIP:   net.IPv4(10, 96, byte(slot), 1).To4(),
	}
}

// bridgeMAC is a locally administered address made of the node's IP: unique per slot.
func (n *nodeNet) bridgeMAC() string {
	ip := n.nodeIP.To4()
	return fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", ip[0], ip[1], ip[2], ip[3])
}

// cgroupParent is the cgroup the kubelet puts the node's pods under, in every hierarchy.
func (n *nodeNet) cgroupParent() string { return "/flotilla-realnode-" + strconv.Itoa(n.slot) }

// claimNodeNet takes the first slot that no live process owns, cleaning up after a dead owner, and sets up
// its bridge.
func claimNodeNet() (*nodeNet, error) {
	if err := os.MkdirAll(slotRoot, 0o755); err != nil {
		return nil, fmt.Errorf("real node slots: %w", err)
	}
	unlock, err := lockSlots()
	if err != nil {
		return nil, err
	}
	defer unlock()
	for slot := range maxSlots {
		n := newNodeNet(slot)
		if pid, ok := n.owner(); ok && alive(pid) {
			continue
		}
		if err := n.release(); err != nil {
			return nil, fmt.Errorf("cleaning up real node slot %d of a dead process: %w", slot, err)
		}
		if err := n.claim(); err != nil {
			return nil, errors.Join(err, n.release())
		}
		return n, nil
	}
	return nil, fmt.Errorf("all %d real node slots are in use", maxSlots)
}

// lockSlots holds an exclusive lock on the slot directory until the returned function runs.
func lockSlots() (func(), error) {
	f, err := os.OpenFile(filepath.Join(slotRoot, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("real node slots: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking real node slots: %w", err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}

// owner is the PID recorded in the slot, if any.
func (n *nodeNet) owner() (int, bool) {
	data, err := os.ReadFile(filepath.Join(n.dir, slotOwnerFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, err == nil && pid > 0
}

// claim records this process as the owner and creates the bridge with the node's and the Service's
// addresses.
func (n *nodeNet) claim() error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return fmt.Errorf("real node slot: %w", err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, slotOwnerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("real node slot: %w", err)
	}
	if err := makeCgroups(n.cgroupParent()); err != nil {
		return err
	}
	ones, _ := n.podCIDR.Mask.Size()
	for _, args := range [][]string{
		// An explicit address keeps the bridge's MAC fixed: otherwise Linux gives it the lowest of its
		// ports' and changes it when that pod's veth goes, and every other pod loses its gateway (and so
		// the API server) for the seconds its ARP entry takes to go stale.
		{"link", "add", "name", n.bridge, "address", n.bridgeMAC(), "type", "bridge"},
		{"addr", "add", n.nodeIP.String() + "/" + strconv.Itoa(ones), "dev", n.bridge},
		{"addr", "add", n.serviceIP.String() + "/32", "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if err := ipCommand(args...); err != nil {
			return err
		}
	}
	return nil
}

// release deletes the bridge, the node's cgroups and the slot directory; what is already gone is fine.
func (n *nodeNet) release() error {
	var errs []error
	if _, err := net.InterfaceByName(n.bridge); err == nil {
		errs = append(errs, ipCommand("link", "del", n.bridge))
	}
	errs = append(errs, removeCgroups(n.cgroupParent()))
	if err := os.RemoveAll(n.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", n.dir, err))
	}
	return errors.Join(errs...)
}

func ipCommand(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// makeCgroups creates the cgroup parent in every hierarchy (the kubelet wants it to exist). A cpuset cgroup
// takes no process before it has CPUs and memory nodes: it gets its parent's.
func makeCgroups(parent string) error {
	hierarchies, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	for _, h := range hierarchies {
		base := filepath.Join(cgroupRoot, h.Name())
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			continue // not a hierarchy (the cgroup v2 "unified" mount point of a hybrid host is one, though)
		}
		dir := filepath.Join(base, parent)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroups: %w", err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if data, err := os.ReadFile(filepath.Join(base, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					return fmt.Errorf("cgroups: %w", err)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the cgroup parent, which only empty cgroups are left of once the node's processes
// are gone, from every hierarchy, deepest first.
func removeCgroups(parent string) error {
	hierarchies, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return nil // no cgroup filesystem: nothing was created
	}
	var errs []error
	for _, h := range hierarchies {
		dir := filepath.Join(cgroupRoot, h.Name(), parent)
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			errs = append(errs, removeCgroup(d))
		}
	}
	return errors.Join(errs...)
}

// cgroupDrainTimeout bounds the wait for a cgroup's processes to finish exiting.
const cgroupDrainTimeout = 15 * time.Second

// removeCgroup removes one cgroup, waiting while it is busy: a killed node's processes may still be exiting
// (a Go program's threads outlive its zombie leader for a moment). Whatever is still in it belongs to the
// node, whose owner is gone, so it is killed.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(cgroupDrainTimeout)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		killCgroupProcesses(dir)
		time.Sleep(50 * time.Millisecond)
	}
}

// killCgroupProcesses sends SIGKILL to every process the cgroup lists.
func killCgroupProcesses(dir string) {
	data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, field := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// servicePort forwards the kubernetes Service's address, port 443, to the API server: what kube-proxy does
// for that one Service in a real cluster, so pods' in-cluster clients reach the API server.
type servicePort struct {
	l    net.Listener
	wg   sync.WaitGroup
	once sync.Once
}

func forwardServicePort(ip net.IP, apiServer string) (*servicePort, error) {
	u, err := url.Parse(apiServer)
	if err != nil {
		return nil, fmt.Errorf("API server address: %w", err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "443"))
	if err != nil {
		return nil, fmt.Errorf("serving the kubernetes Service: %w", err)
	}
	s := &servicePort{l: l}
	s.wg.Go(func() { s.accept(u.Host) })
	return s, nil
}

func (s *servicePort) accept(target string) {
	for {
		conn, err := s.l.Accept()
		if err != nil {
			return // closed
		}
		go forward(conn, target)
	}
}

// forward copies both ways between a pod's connection and a new one to target until either side ends.
func forward(conn net.Conn, target string) {
	defer conn.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
	<-done
}

// Close stops accepting; connections in flight end with the API server or the pod.
func (s *servicePort) Close() {
	s.once.Do(func() {
		_ = s.l.Close()
		s.wg.Wait()
	})
}
