package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/test/images"
)

// realNodeRequiredEnv set to "required" (make test, where make installed the runtime) turns a missing real
// node into a failure instead of a skip.
const realNodeRequiredEnv = "FLOTILLA_REAL_NODE"

func needRealNode(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane and a real node")
	}
	if err := RealNodeSupport(""); err != nil {
		if os.Getenv(realNodeRequiredEnv) == "required" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// TestRealNode starts a cluster with a real node, runs a pod from an imported image, updates its image in
// place (the kubelet restarts the container) and checks that Stop leaves no process, bridge, cgroup or
// directory of the node behind.
func TestRealNode(t *testing.T) {
	needRealNode(t)
	hostBefore := hostState(t)
	c, err := Start(t.Context(), Options{CRDDirs: []string{}, ControllerManager: true, RealNode: true, Log: testLog{t}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	n := c.RealNode()
	client := kubernetes.NewForConfigOrDie(c.Config())
	t.Run("node registered", func(t *testing.T) { testRealNodeRegistered(t, client) })
	importTestApp(t, n)
	pod := runTestApp(t, client)
	t.Run("in-place image update", func(t *testing.T) { testRealImageUpdate(t, client, pod) })
	t.Run("bridge keeps its address", func(t *testing.T) { testBridgeAddress(t, n) })
	t.Run("pull from a registry behind basic auth", func(t *testing.T) { testRegistryPull(t, n) })

	inNode := nodeProcesses(t, c)
	podCgroups := filepath.Join(cgroupRoot, "memory", n.net.cgroupParent(), "kubepods")
	if _, err := os.Stat(podCgroups); err != nil {
		t.Errorf("pods' cgroups are not under the node's parent: %v", err)
	}
	left := []string{c.Dir(), n.net.dir, filepath.Dir(podCgroups)}
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range inNode {
		if processExists(pid) {
			t.Errorf("process %d outlived Stop", pid)
		}
	}
	if _, err := net.InterfaceByName(n.net.bridge); err == nil {
		t.Errorf("bridge %s outlived Stop", n.net.bridge)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s outlived Stop: %v", p, err)
		}
	}
	if after := hostState(t); !slices.Equal(after, hostBefore) {
		t.Errorf("the host's %v held %v before the node and %v after", privateHostDirs, hostBefore, after)
	}
}

// testBridgeAddress checks the bridge kept its own MAC with a pod's veth attached: one that followed its
// ports' would change when a pod goes, cutting every other pod off its gateway until ARP noticed.
func testBridgeAddress(t *testing.T, n *RealNode) {
	iface, err := net.InterfaceByName(n.net.bridge)
	if err != nil {
		t.Fatal(err)
	}
	if got := iface.HardwareAddr.String(); got != n.net.bridgeMAC() {
		t.Errorf("bridge %s has address %s, want its own %s", n.net.bridge, got, n.net.bridgeMAC())
	}
}

// hostState lists what the host's privateHostDirs hold. The directories themselves are left out: the first
// real node on a machine creates them as its mount points, and they stay, empty.
func hostState(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, dir := range privateHostDirs {
		_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err == nil && p != dir {
				paths = append(paths, p)
			}
			return nil
		})
	}
	return paths
}

// testRealNodeRegistered checks the node as pods see it: labelled, with only the real-node taint (a
// pressure taint would keep every test pod off it).
func testRealNodeRegistered(t *testing.T, client kubernetes.Interface) {
	node, err := client.CoreV1().Nodes().Get(t.Context(), RealNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["type"] != "real" {
		t.Errorf("labels %v, want type=real", node.Labels)
	}
	want := []corev1.Taint{{Key: RealNodeTaint, Effect: corev1.TaintEffectNoSchedule}}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != want[0].Key || node.Spec.Taints[0].Effect != want[0].Effect {
		t.Errorf("taints %v, want %v", node.Spec.Taints, want)
	}
}

func importTestApp(t *testing.T, n *RealNode) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	built, err := images.BuildTestApp(t.Context(), root, t.TempDir(), "v1", "v2")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range built {
		if err := n.ImportImages(t.Context(), r.Archive); err != nil {
			t.Fatal(err)
		}
	}
}

// runTestApp runs testapp v1 on the real node and waits for it to be Ready (its readiness probe answers).
func runTestApp(t *testing.T, client kubernetes.Interface) *corev1.Pod {
	t.Helper()
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "testapp", Namespace: testNamespace},
		Spec: corev1.PodSpec{
			NodeName:    RealNodeName,
			Tolerations: []corev1.Toleration{{Key: RealNodeTaint, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "app", Image: images.TestAppImage("v1"), ReadinessProbe: probe,
				ImagePullPolicy: corev1.PullNever}},
		},
	}
	if _, err := client.CoreV1().Pods(testNamespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	waitFor(t, "testapp Ready on the real node", func(ctx context.Context) (bool, error) {
		var err error
		got, err = client.CoreV1().Pods(testNamespace).Get(ctx, "testapp", metav1.GetOptions{})
		return err == nil && podReady(got), err
	})
	return got
}

// testRealImageUpdate patches the image: the kubelet kills the container and starts one from the new image
// in the same pod (same UID and IP), which answers with the new version.
func testRealImageUpdate(t *testing.T, client kubernetes.Interface, before *corev1.Pod) {
	if got := get(t, "http://"+before.Status.PodIP+":8080/"); got != "v1" {
		t.Fatalf("testapp answered %q before the update, want v1", got)
	}
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"app","image":%q}]}}`, images.TestAppImage("v2"))
	if _, err := client.CoreV1().Pods(testNamespace).Patch(t.Context(), before.Name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var after *corev1.Pod
	waitFor(t, "the container restarted from testapp:v2", func(ctx context.Context) (bool, error) {
		var err error
		after, err = client.CoreV1().Pods(testNamespace).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil || len(after.Status.ContainerStatuses) != 1 {
			return false, err
		}
		cs := after.Status.ContainerStatuses[0]
		return cs.Image == images.TestAppImage("v2") && cs.RestartCount == 1 && podReady(after), nil
	})
	old, cur := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP {
		t.Errorf("pod changed: uid %s -> %s, IP %s -> %s", before.UID, after.UID, before.Status.PodIP, after.Status.PodIP)
	}
	if cur.ImageID == old.ImageID || cur.ContainerID == old.ContainerID {
		t.Errorf("imageID %s -> %s, containerID %s -> %s: want both new", old.ImageID, cur.ImageID, old.ContainerID, cur.ContainerID)
	}
	if got := get(t, "http://"+after.Status.PodIP+":8080/"); got != "v2" {
		t.Errorf("testapp answered %q after the update, want v2", got)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(body))
}

// nodeProcesses lists the cluster's processes and all their descendants: on the real node, containerd,
// the kubelet, the shims and every container's processes.
func nodeProcesses(t *testing.T, c *Cluster) []int {
	t.Helper()
	all := descendants(c.pids())
	if len(all) < 8 {
		t.Errorf("found %d processes, want at least etcd, kube-apiserver, kube-controller-manager, unshare, containerd, nsenter, kubelet, a shim, pause and testapp", len(all))
	}
	return all
}

// descendants lists pids and every process below them.
func descendants(pids []int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if ppid, _, ok := procParent(pid); ok {
				children[ppid] = append(children[ppid], pid)
			}
		}
	}
	var all []int
	for queue := append([]int(nil), pids...); len(queue) > 0; queue = queue[1:] {
		all = append(all, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return all
}
