package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/test/images"
)

// containerdConfig is the node's containerd: everything under its own directories, the CRI plugin with our
// pause image and CNI configuration, and restrict_oom_score_adj, without which runc fails to start any
// container where the process lacks CAP_SYS_RESOURCE (containers in containers, as on CI machines).
const containerdConfig = `version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
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
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[9]q
`

// privateHostDirs are host paths the node writes to whatever its configuration says: containerd 1.6's shim
// sockets (/run/containerd/s), libcni's result cache, the kubelet's device plugin socket and its
// /var/log/containers links. Each gets a tmpfs private to the node's mount namespace, so what a killed node
// leaves there goes with the namespace; on the host they stay empty directories.
var privateHostDirs = []string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet", "/var/log/containers"}

// startContainerd writes the CNI and containerd configuration and starts containerd as PID 1 of new PID
// and mount namespaces; it returns once the CRI socket answers.
func (n *RealNode) startContainerd(ctx context.Context) error {
	cniBin, err := cniDir()
	if err != nil {
		return err
	}
	cniConf := filepath.Join(n.dir, "cni", "net.d")
	if err := n.writeCNIConfig(cniConf); err != nil {
		return err
	}
	config := filepath.Join(n.dir, "containerd.toml")
	state := filepath.Join(n.net.dir, "state")
	content := fmt.Sprintf(containerdConfig, filepath.Join(n.dir, "containerd"), state, n.SocketPath,
		filepath.Join(n.dir, "opt"), images.PauseImage, filepath.Join(state, "runc"), cniBin, cniConf, n.registryHostsDir())
	if err := os.WriteFile(config, []byte(content), 0o644); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	for _, dir := range privateHostDirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}
	// --kill-child: when unshare dies (SIGKILLed with this process), containerd gets SIGKILL, and the kernel
	// then kills everything in its PID namespace. Before containerd starts, a tmpfs goes over each of
	// privateHostDirs in the new mount namespace.
	script := `for d in "$@"; do mount -t tmpfs -o mode=0755 flotilla-node "$d" || exit 1; done; exec containerd --config "$0"`
	p, err := n.c.startHost("containerd", "unshare", append([]string{"--pid", "--fork", "--mount-proc", "--kill-child", "--",
		"sh", "-c", script, config}, privateHostDirs...)...)
	if err != nil {
		return err
	}
	n.container = p
	return waitCRI(ctx, p, n.CRIEndpoint)
}

// registryHostsDir holds containerd's per-registry configuration (<host:port>/hosts.toml), read at each pull.
func (n *RealNode) registryHostsDir() string { return filepath.Join(n.dir, "registry-hosts") }

// AllowPlainHTTP lets the node pull from a registry at host (host:port) over plain HTTP, as the registries
// tests start (package registry) serve. It takes effect at the next pull.
func (n *RealNode) AllowPlainHTTP(host string) error {
	dir := filepath.Join(n.registryHostsDir(), host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}
	hosts := fmt.Sprintf("server = \"http://%[1]s\"\n\n[host.\"http://%[1]s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", host)
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644)
}

// waitCRI polls the runtime's Version until it answers, the process exits or ctx ends.
func waitCRI(ctx context.Context, p *process, endpoint string) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		if rt, err := cri.Dial(ctx, endpoint); err == nil {
			return rt.Close()
		}
		if err := p.exitError(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd not answering at %s: %w (log: %s)", endpoint, ctx.Err(), p.logPath)
		case <-ticker.C:
		}
	}
}

// writeCNIConfig configures the pod network: a bridge (the slot's, already up) with host-local addresses
// from the pod subnet. No masquerading: pods talk to the host and to each other only, and no iptables rule
// is left behind.
func (n *RealNode) writeCNIConfig(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("CNI config: %w", err)
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "flotilla",
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": n.net.bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": n.net.podCIDR.String(), "gateway": n.net.nodeIP.String()}}},
				"dataDir": filepath.Join(n.dir, "cni", "ipam"),
				// The default route via the bridge: the kubernetes Service's address is not in the subnet.
				"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
			},
		}},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-flotilla.conflist"), data, 0o644)
}

// importPause builds the pause image from this checkout and imports it.
func (n *RealNode) importPause(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(n.dir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pause, err := images.BuildPause(ctx, root, dir)
	if err != nil {
		return err
	}
	return n.ImportImages(ctx, pause.Archive)
}

// ImportImages loads OCI or docker archives into the node's runtime (namespace k8s.io, where the kubelet
// looks), so pods run them without a pull.
func (n *RealNode) ImportImages(ctx context.Context, archives ...string) error {
	for _, a := range archives {
		cmd := exec.CommandContext(ctx, "ctr", "--address", n.SocketPath, "--namespace", "k8s.io", "images", "import", a)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("importing %s: %w: %s", a, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// containerdPID is the host PID of containerd, the child of unshare, whose namespaces the kubelet joins.
func (n *RealNode) containerdPID(ctx context.Context) (int, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/children", n.container.pid(), n.container.pid())
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			if fields := strings.Fields(string(data)); len(fields) > 0 {
				return strconv.Atoi(fields[0])
			}
		}
		if err := n.container.exitError(); err != nil {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("finding containerd's PID: %w", ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
