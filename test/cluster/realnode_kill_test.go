package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/images"
)

// killedNode is what the helper of TestRealNodeDiesWithTheTestProcess reports before it is killed.
type killedNode struct {
	Slot int
	PIDs []int
}

// TestRealNodeDiesWithTheTestProcess SIGKILLs a process that runs a cluster with a real node and a pod on
// it, so no Stop runs: the kernel must end every process of the node (containerd, kubelet, shim, the pod's
// containers), and the next claim must clean up the dead owner's bridge, cgroups and directory.
func TestRealNodeDiesWithTheTestProcess(t *testing.T) {
	if os.Getenv("FLOTILLA_REALNODE_HELPER") == "1" {
		runRealNodeHelper()
		return
	}
	needRealNode(t)
	hostBefore := hostState(t)
	helper := exec.Command(os.Args[0], "-test.run=^TestRealNodeDiesWithTheTestProcess$")
	helper.Env = append(os.Environ(), "FLOTILLA_REALNODE_HELPER=1")
	helper.Stderr = os.Stderr
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	var got killedNode
	if err == nil {
		err = json.Unmarshal(line, &got)
	}
	_ = helper.Process.Signal(syscall.SIGKILL)
	_ = helper.Wait()
	if err != nil {
		t.Fatalf("the helper reported no node (%v): %q", err, line)
	}
	waitGone(t, got.PIDs)
	n := newNodeNet(got.Slot)
	if _, err := net.InterfaceByName(n.bridge); err != nil {
		t.Fatalf("the killed node's bridge %s is already gone, so the clean-up is not tested: %v", n.bridge, err)
	}
	claimed, err := claimNodeNet()
	if err != nil {
		t.Fatal(err)
	}
	if err := claimed.release(); err != nil {
		t.Fatal(err)
	}
	if claimed.slot == got.Slot {
		for _, p := range []string{n.dir, filepath.Join(cgroupRoot, "memory", n.cgroupParent())} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s outlived the clean-up: %v", p, err)
			}
		}
	} else if err := n.release(); err != nil { // another test's node took the first slot meanwhile
		t.Error(err)
	}
	if _, err := net.InterfaceByName(n.bridge); err == nil {
		t.Errorf("bridge %s outlived the clean-up", n.bridge)
	}
	removeStaleDirs()
	if after := hostState(t); !slices.Equal(after, hostBefore) {
		t.Errorf("the host's %v held %v before the node and %v after", privateHostDirs, hostBefore, after)
	}
}

// waitGone waits for every PID to be gone or a zombie; the kernel kills them asynchronously.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for processExists(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d outlived the killed test process", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// runRealNodeHelper starts a cluster with a real node running a pod, prints the slot and every process of
// the cluster as JSON, and waits to be killed.
func runRealNodeHelper() {
	ctx := context.Background()
	c, err := Start(ctx, Options{CRDDirs: []string{}, ControllerManager: true, RealNode: true})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(3)
	}
	if err := runPause(ctx, c); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(3)
	}
	out, _ := json.Marshal(killedNode{Slot: c.realNode.net.slot, PIDs: descendants(c.pids())})
	_, _ = os.Stdout.Write(append(out, '\n'))
	time.Sleep(time.Minute)
	os.Exit(4)
}

// runPause runs a pod of the pause image on the real node and waits until it runs.
func runPause(ctx context.Context, c *Cluster) error {
	client, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: testNamespace},
		Spec: corev1.PodSpec{NodeName: RealNodeName, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "pause", Image: images.PauseImage, ImagePullPolicy: corev1.PullNever}}},
	}
	if _, err := client.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		got, err := client.CoreV1().Pods(testNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && got.Status.Phase == corev1.PodRunning {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
