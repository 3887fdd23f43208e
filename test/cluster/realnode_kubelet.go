package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// kubeletConfig is the node's KubeletConfiguration. Each setting that differs from a default is one this
// kind of machine needs:
//   - cgroup v1 hosts are refused by default (failCgroupV1); the pods' cgroups go under the slot's own
//     parent (cgroupRoot, which the slot's release removes) with the cgroupfs driver (no systemd here),
//     and no allocatable enforcement, which writes limits the kubelet may lack the capability for;
//   - no eviction and no image garbage collection: a shared disk's usage must not evict test pods or
//     delete the images a test imported and has not run yet;
//   - makeIPTablesUtilChains off: the host's iptables are not the node's to change;
//   - x509 authentication against the cluster CA, every authenticated caller allowed: only the API
//     server has such a certificate.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
containerRuntimeEndpoint: %[4]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[5]s}
authorization: {mode: AlwaysAllow}
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[6]s
cgroupsPerQOS: true
enforceNodeAllocatable: []
failSwapOn: false
evictionHard: {memory.available: "0%%", nodefs.available: "0%%", imagefs.available: "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
makeIPTablesUtilChains: false
podLogsDir: %[7]s
clusterDomain: cluster.local
serializeImagePulls: false
registerWithTaints:
  - {key: %[8]s, effect: NoSchedule}
`

// startKubelet runs the kubelet inside containerd's namespaces and waits for the Node to be Ready.
func (n *RealNode) startKubelet(ctx context.Context) error {
	c := n.c
	kubeconfig, err := writeKubeconfig(c.dir, "kubelet", restConfig(c.config.Host, c.pki.ca, c.pki.node))
	if err != nil {
		return err
	}
	config, err := n.writeKubeletConfig()
	if err != nil {
		return err
	}
	pid, err := n.containerdPID(ctx)
	if err != nil {
		return err
	}
	args := append([]string{"--target", strconv.Itoa(pid), "--mount", "--pid", "--", filepath.Join(c.binDir, "kubelet"),
		"--config=" + config,
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.net.nodeIP.String(),
		"--node-labels=type=real",
		"--root-dir=" + filepath.Join(n.dir, "kubelet"),
		"--cert-dir=" + filepath.Join(n.dir, "kubelet", "pki"),
		"--v=2",
	}, c.opts.Args["kubelet"]...)
	p, err := c.startHost("kubelet", "nsenter", args...)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	if err := n.waitReady(ctx, client, p); err != nil {
		return err
	}
	return n.untaintNotReady(ctx, client)
}

// untaintNotReady removes the node.kubernetes.io/not-ready taint the kubelet registers with, as the node
// lifecycle controller would once the node is Ready. That controller does not run: kwok's nodes send no
// heartbeats, and it would taint them and evict their pods.
func (n *RealNode) untaintNotReady(ctx context.Context, client kubernetes.Interface) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady
		})
		if len(taints) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = taints
		_, err = client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// podLogsDir is where the kubelet writes the containers' logs.
func (n *RealNode) podLogsDir() string { return filepath.Join(n.dir, "pod-logs") }

func (n *RealNode) writeKubeletConfig() (string, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return "", err
	}
	logs := n.podLogsDir()
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return "", err
	}
	content := fmt.Sprintf(kubeletConfig, n.net.nodeIP, ports[0], ports[1], n.CRIEndpoint,
		filepath.Join(n.c.dir, "pki", "ca.crt"), n.net.cgroupParent(), logs, RealNodeTaint)
	path := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("kubelet config: %w", err)
	}
	return path, nil
}

// waitReady polls until the kubelet registered the Node and reports it Ready, or the kubelet exits.
func (n *RealNode) waitReady(ctx context.Context, client kubernetes.Interface, p *process) error {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := p.exitError(); err != nil {
			return false, err
		}
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // not registered yet
		}
		return slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}), nil
	})
	if err != nil {
		return fmt.Errorf("wait for node %s to be Ready (log: %s): %w", n.Name, p.logPath, err)
	}
	return nil
}
