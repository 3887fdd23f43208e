package cluster

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// stageFS holds the kwok Stages that define how simulated nodes and pods
// behave; they replace kwok's stock stages entirely.
//
//go:embed stages/*.yaml
var stageFS embed.FS

const (
	// NodeAnnotation marks the nodes kwok manages; add it to a Node to
	// have kwok drive that node and its pods.
	NodeAnnotation      = "kwok.x-k8s.io/node"
	nodeAnnotationValue = "fake"
	// NodeNamePrefix names the nodes Start creates: kwok-node-0, kwok-node-1, ...
	NodeNamePrefix = "kwok-node-"
	// podCIDR is shared by every node; a /16 leaves room for large
	// benchmarks (kwok's default /24 has 254 addresses).
	podCIDR = "10.0.0.0/16"
	// defaultPodsPerNode is a kubelet's default max-pods.
	defaultPodsPerNode = 110
)

// kwokSettings raises kwok's stage parallelism so pod churn benchmarks
// measure the controllers, not the simulator.
const kwokSettings = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 4
`

// startKwok runs kwok with our stages, creates the nodes and waits until
// they are Ready and schedulable.
func (c *Cluster) startKwok(ctx context.Context, client kubernetes.Interface) error {
	config, err := c.writeKwokConfig()
	if err != nil {
		return err
	}
	home := filepath.Join(c.dir, "kwok-home") // keeps ~/.kwok/kwok.yaml out
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("kwok home: %w", err)
	}
	args := []string{
		"--config=" + config,
		"--kubeconfig=" + c.kubeconfig,
		"--manage-nodes-with-annotation-selector=" + NodeAnnotation + "=" + nodeAnnotationValue,
		"--cidr=" + podCIDR,
	}
	p, err := c.start("kwok", args, []string{"HOME=" + home})
	if err != nil {
		return err
	}
	if err := c.createNodes(ctx, client); err != nil {
		return err
	}
	return c.waitNodesReady(ctx, client, p)
}

// writeKwokConfig concatenates the embedded stages and the settings into
// one multi-document config file.
func (c *Cluster) writeKwokConfig() (string, error) {
	var buf bytes.Buffer
	buf.WriteString(kwokSettings)
	err := fs.WalkDir(stageFS, "stages", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := stageFS.ReadFile(path)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(data)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read kwok stages: %w", err)
	}
	path := filepath.Join(c.dir, "kwok.yaml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write kwok config: %w", err)
	}
	return path, nil
}

func (c *Cluster) createNodes(ctx context.Context, client kubernetes.Interface) error {
	for i := range c.opts.Nodes {
		node := c.newNode(i)
		_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	return nil
}

// newNode describes node i of the cluster's own nodes.
func (c *Cluster) newNode(i int) *corev1.Node {
	return KwokNode(fmt.Sprintf("%s%d", NodeNamePrefix, i), i, c.opts.PodsPerNode)
}

// KwokNode describes a node kwok drives, the way a kubelet registers itself: labels, capacity (pods pods,
// 0 for a kubelet's default) and addresses; kwok then makes it Ready and runs its pods. index spreads nodes
// over three zones and gives each its own address. Tests create such nodes to add nodes to a running
// cluster, and delete them to remove nodes.
func KwokNode(name string, index, pods int) *corev1.Node {
	if pods <= 0 {
		pods = defaultPodsPerNode
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("128Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
		corev1.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:           name,
				corev1.LabelOSStable:           "linux",
				corev1.LabelArchStable:         "amd64",
				corev1.LabelTopologyZone:       fmt.Sprintf("zone-%c", 'a'+index%3),
				corev1.LabelInstanceTypeStable: "kwok",
				"type":                         "kwok",
			},
			Annotations: map[string]string{NodeAnnotation: nodeAnnotationValue},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.255.%d.%d", index/250%256, index%250+1)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// waitNodesReady polls until every created node is Ready and carries no
// NoSchedule/NoExecute taint, or kwok exits.
func (c *Cluster) waitNodesReady(ctx context.Context, client kubernetes.Interface, p *process) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := p.exitError(); err != nil {
			return false, err
		}
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // transient; retried until ctx ends
		}
		return countSchedulable(nodes.Items) >= c.opts.Nodes, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %d kwok nodes to be Ready (log: %s): %w", c.opts.Nodes, p.logPath, err)
	}
	return nil
}

func countSchedulable(nodes []corev1.Node) int {
	n := 0
	for i := range nodes {
		if nodes[i].Annotations[NodeAnnotation] == nodeAnnotationValue && schedulable(&nodes[i]) {
			n++
		}
	}
	return n
}

func schedulable(node *corev1.Node) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Effect != corev1.TaintEffectPreferNoSchedule {
			return false
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
