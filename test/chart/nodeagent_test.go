package chart

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// agentBuild is the node agent binary the tests build once; TestMain removes dir.
var agentBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// agentBinary builds flotilla-nodeagent once per test process.
func agentBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("building the node agent is skipped in -short mode")
	}
	agentBuild.once.Do(func() {
		agentBuild.dir, agentBuild.err = os.MkdirTemp("", "flotilla-chart-agent-")
		if agentBuild.err != nil {
			return
		}
		agentBuild.path = filepath.Join(agentBuild.dir, "flotilla-nodeagent")
		cmd := exec.Command("go", "build", "-o", agentBuild.path, "./nodeagent/cmd/nodeagent")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBuild.err = &buildError{err: err, out: string(out)}
		}
	})
	if agentBuild.err != nil {
		t.Fatal(agentBuild.err)
	}
	return agentBuild.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	return "building flotilla-nodeagent: " + e.err.Error() + "\n" + e.out
}

// TestNodeAgentAcceptsRenderedArgs parses each rendering's agent command line with the agent's own flag set.
func TestNodeAgentAcceptsRenderedArgs(t *testing.T) {
	bin := agentBinary(t)
	for _, c := range cases {
		if c.noAgent {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			args := append(agentContainer(t, render(t, c.rel).agentPart().daemonSet(t)).Args, "-h")
			if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
				t.Fatalf("flotilla-nodeagent %s: %v\n%s", strings.Join(args, " "), err, lastLines(string(out), 5))
			}
		})
	}
}

// TestNodeAgentRunsWithChartRBAC runs the agent under its ServiceAccount, bound to nothing but the chart's
// node agent RBAC, against an in-memory container runtime, and has it execute a ContainerRecreateRequest
// (watch the request, read the pod, stop the container, write the status, record events) without a
// forbidden request.
func TestNodeAgentRunsWithChartRBAC(t *testing.T) {
	managertest.RequireCluster(t, cfg)
	bin := agentBinary(t)
	rel := release{name: "flotilla", namespace: "flotilla-agent-rbac"}
	r := render(t, rel).agentPart()
	ensureRestrictedNamespace(t, rel.namespace)
	applyKinds(t, r, "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
	rt := critest.Start(t)
	const node = "chart-node"
	pod, containerID := runningPod(t, rt, rel.namespace, node, r.one(t, "ServiceAccount").GetName())
	crr := recreateRequest(t, pod, node, containerID)
	logPath := startAgent(t, bin, r, node, rt.Endpoint)
	waitAgent(t, logPath, "the container stopped and the request Recreating", func() bool {
		got := &kruiseappsv1alpha1.ContainerRecreateRequest{}
		err := kruiseClient(t).Get(context.Background(), client.ObjectKeyFromObject(crr), got)
		return err == nil && !rt.Running(containerID) && got.Status.Phase == kruiseappsv1alpha1.ContainerRecreateRequestRecreating
	})
}

// runningPod creates a pod bound to node whose container runs in rt, as a kubelet would report it.
// It runs as serviceAccount: the test's control plane has no controller creating "default".
func runningPod(t *testing.T, rt *critest.Runtime, namespace, node, serviceAccount string) (*corev1.Pod, string) {
	t.Helper()
	c := newClient(t, cfg)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: serviceAccount, AutomountServiceAccountToken: ptrTo(false), Containers: []corev1.Container{{Name: "app", Image: "nginx:1",
			SecurityContext: restrictedContainer()}}, SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptrTo(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	id := rt.Run(critest.Pod{Namespace: namespace, Name: pod.Name, UID: string(pod.UID)}, "app")
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", Image: "nginx:1", ContainerID: "containerd://" + id, Ready: true, Started: ptrTo(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
	}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod, id
}

// recreateRequest creates the request the manager's webhook would have completed for the pod's container.
func recreateRequest(t *testing.T, pod *corev1.Pod, node, containerID string) *kruiseappsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	crr := &kruiseappsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: "restart-app", Labels: map[string]string{
			kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey: node,
			kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
			kruiseappsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
		}},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName: pod.Name,
			Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "app",
				StatusContext: &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://" + containerID}}},
			Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail},
		},
	}
	if err := kruiseClient(t).Create(context.Background(), crr); err != nil {
		t.Fatal(err)
	}
	return crr
}

// startAgent runs the agent with the rendered args, its metrics and health on a free loopback port and the
// test's runtime as its CRI endpoint, authenticated as the agent's ServiceAccount. It returns the log's path.
func startAgent(t *testing.T, bin string, r rendered, node, endpoint string) string {
	t.Helper()
	var args []string
	for _, a := range agentContainer(t, r.daemonSet(t)).Args {
		if name, _, _ := strings.Cut(a, "="); name != "--addr" {
			args = append(args, a)
		}
	}
	args = append(args, "--addr="+freeAddr(t), "--cri-endpoint="+endpoint, "--kubeconfig="+serviceAccountKubeconfig(t, r))
	logPath := filepath.Join(t.TempDir(), "nodeagent.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "NODE_NAME="+node)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return logPath
}

// waitAgent polls cond for up to 60 s, failing at once when the agent logs a forbidden request.
func waitAgent(t *testing.T, logPath, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		data, _ := os.ReadFile(logPath)
		if strings.Contains(strings.ToLower(string(data)), "forbidden") {
			t.Fatalf("the node agent was refused requests with the chart's RBAC:\n%s", lastLines(string(data), 20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; agent log:\n%s", what, lastLines(string(data), 20))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// kruiseClient is a direct client that knows the apps.kruise.io kinds.
func kruiseClient(t *testing.T) client.Client {
	t.Helper()
	return managertest.DirectClient(t, cfg, managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false), RunAsNonRoot: ptrTo(true),
		RunAsUser: ptrTo[int64](1000), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

func ptrTo[T any](v T) *T { return &v }
