package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// A real node runs its pods: bin/kubelet (built by test/tools) on this machine's containerd, runc and CNI
// plugins (Debian's containerd, runc and containernetworking-plugins packages). Everything it leaves
// behind is contained:
//
//   - containerd runs as PID 1 of its own PID and mount namespaces (unshare), and the kubelet joins them
//     (nsenter). When containerd ends, or the test process dies, the kernel kills every shim and container
//     with it, and the mounts they made (volumes, root filesystems, network namespaces) vanish with the
//     mount namespace, as do the files both write to fixed host paths (privateHostDirs), which get a tmpfs
//     of the namespace's own.
//   - Its network is a bridge of its own with a pod subnet and a Service range picked per node (slot), so
//     real nodes of concurrent test processes do not meet; no iptables rule is written. The host reaches
//     pods over the bridge (the API server calls webhooks at pod IPs), and pods reach the API server at
//     the kubernetes Service's address, which the bridge holds and this process forwards.
//   - State, the containerd socket and the slot's claim are under /run/flotilla-realnode/<slot>; a Start
//     on this machine removes the slots, bridges and cgroups of processes that died before their Stop.
//
// The node registers as RealNodeName with label type=real and the taint RealNodeTaint, so only pods that
// ask for it (toleration and node selector) run there; kwok nodes stay for everything else.
const (
	RealNodeName = "real-node"
	// RealNodeTaint keeps pods off the real node unless they tolerate it (effect NoSchedule).
	RealNodeTaint = "flotilla.dev/real-node"
)

// ErrRealNodeUnavailable is wrapped by every error saying this machine cannot run a real node.
var ErrRealNodeUnavailable = errors.New("no real node on this machine")

// hostCommands are the programs a real node runs from PATH.
var hostCommands = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "unshare", "nsenter", "ip"}

// cniPlugins are the CNI plugins the node's network uses; cniDirs are where distributions put them.
var (
	cniPlugins = []string{"bridge", "host-local", "loopback"}
	cniDirs    = []string{"/usr/lib/cni", "/opt/cni/bin"}
)

// RealNodeSupport says why this machine cannot run a real node, or nil when it can. binDir holds the
// kubelet; empty means the default bin directory.
func RealNodeSupport(binDir string) error {
	var missing []string
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: it needs Linux", ErrRealNodeUnavailable)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it needs root (containerd, the kubelet and the bridge)", ErrRealNodeUnavailable)
	}
	for _, name := range hostCommands {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	if _, err := cniDir(); err != nil {
		missing = append(missing, "CNI plugins "+strings.Join(cniPlugins, ", "))
	}
	dir, err := resolveBinDir(binDir)
	if err == nil {
		err = findBinaries(dir, []string{"kubelet"})
	}
	if err != nil {
		missing = append(missing, "bin/kubelet (make tools)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s (as root on Debian or Ubuntu, make installs the packages containerd, runc and containernetworking-plugins)",
			ErrRealNodeUnavailable, strings.Join(missing, ", "))
	}
	return nil
}

// cniDir is the first directory holding every plugin the node uses.
func cniDir() (string, error) {
	for _, dir := range cniDirs {
		if hasAll(dir, cniPlugins) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no directory of %v holds the CNI plugins %v", cniDirs, cniPlugins)
}

func hasAll(dir string, names []string) bool {
	for _, n := range names {
		if info, err := os.Stat(filepath.Join(dir, n)); err != nil || info.IsDir() {
			return false
		}
	}
	return true
}

// RealNode is the cluster's real node.
type RealNode struct {
	// Name is the Node's name (RealNodeName).
	Name string
	// CRIEndpoint is containerd's CRI socket as unix:///path.
	CRIEndpoint string
	// SocketPath is that socket's path; it is under /run, so the chart's node agent, which mounts the
	// host's /var/run at /hostvarrun, reaches it at "/hostvarrun" + strings.TrimPrefix(SocketPath, "/run").
	SocketPath string

	c         *Cluster
	net       *nodeNet
	dir       string // containerd root, kubelet root, CNI config, images
	proxy     *servicePort
	container *process // unshare, whose child containerd is PID 1 of the node's namespaces
}

// RealNode returns the cluster's real node, nil without Options.RealNode.
func (c *Cluster) RealNode() *RealNode { return c.realNode }

// claimRealNode picks the node's network before anything else starts: the certificates and the API
// server need its Service range.
func (c *Cluster) claimRealNode() error {
	n, err := claimNodeNet()
	if err != nil {
		return err
	}
	socket := filepath.Join(n.dir, "containerd.sock")
	c.realNode = &RealNode{Name: RealNodeName, CRIEndpoint: "unix://" + socket, SocketPath: socket, c: c, net: n,
		dir: filepath.Join(c.dir, "node")}
	return os.MkdirAll(c.realNode.dir, 0o755)
}

// startRealNode starts containerd with the pause image, forwards the kubernetes Service to the API server,
// starts the kubelet and waits until the Node is Ready.
func (c *Cluster) startRealNode(ctx context.Context) error {
	n := c.realNode
	proxy, err := forwardServicePort(n.net.serviceIP, c.config.Host)
	if err != nil {
		return err
	}
	n.proxy = proxy
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	if err := n.importPause(ctx); err != nil {
		return err
	}
	return n.startKubelet(ctx)
}

// releaseRealNode runs after every process of the cluster ended: it closes the Service forwarder and gives
// back the node's network, cgroups and state.
func (c *Cluster) releaseRealNode() error {
	n := c.realNode
	if n == nil {
		return nil
	}
	if n.proxy != nil {
		n.proxy.Close()
	}
	return n.net.release()
}
