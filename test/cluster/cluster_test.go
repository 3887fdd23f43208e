package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

const (
	testNamespace = "default"
	waitTimeout   = 60 * time.Second
)

// TestCluster starts a full cluster, checks that workloads run on kwok
// nodes with the simulated kubelet semantics Flotilla relies on, then
// stops it and checks that nothing is left behind.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx := t.Context()
	c, err := Start(ctx, Options{
		CRDDirs:           []string{"testdata/crds", "testdata/missing"},
		GatewayAPI:        true,
		ControllerManager: true,
		Scheduler:         true,
		Nodes:             2,
		Log:               testLog{t},
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pids := c.pids()
	dirs := []string{c.Dir(), c.etcdDir}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	client := kubernetes.NewForConfigOrDie(c.Config())

	t.Run("CRDs established", func(t *testing.T) { testCRDs(t, c) })
	t.Run("kubectl", func(t *testing.T) { testKubectl(t, c) })
	t.Run("controller identity", func(t *testing.T) { testControllerKubeconfig(t, c) })
	var pods []corev1.Pod
	t.Run("deployment available", func(t *testing.T) { pods = testDeployment(t, client) })
	t.Run("in-place image update", func(t *testing.T) { testImageUpdate(t, client, pods) })
	t.Run("readiness gate", func(t *testing.T) { testReadinessGate(t, client) })
	t.Run("deleted pod is finalised", func(t *testing.T) { testPodDeletion(t, client, pods) })
	t.Run("deleted pod waits for finalizers", func(t *testing.T) { testFinalizerDeletion(t, client) })
	t.Run("job completes", func(t *testing.T) { testJob(t, client) })
	t.Run("job's pod fails", func(t *testing.T) { testFailingJob(t, client) })
	t.Run("images that cannot run", func(t *testing.T) { testFailingImages(t, client) })
	assertKwokClean(t, c)

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	assertNoProcesses(t, pids)
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed: %v", dir, err)
		}
	}
}

func testCRDs(t *testing.T, c *Cluster) {
	client := apiextensionsclient.NewForConfigOrDie(c.Config())
	for _, name := range []string{"widgets.test.flotilla.dev", "httproutes.gateway.networking.k8s.io"} {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get CRD %s: %v", name, err)
		}
		if !crdCondition(crd, "Established") {
			t.Errorf("CRD %s not Established: %+v", name, crd.Status.Conditions)
		}
	}
}

func testKubectl(t *testing.T, c *Cluster) {
	out, err := c.Kubectl(t.Context(), "get", "nodes", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if want := "node/" + NodeNamePrefix + strconv.Itoa(i); !strings.Contains(string(out), want) {
			t.Errorf("kubectl get nodes = %q, want %s", out, want)
		}
	}
}

// testDeployment returns the Deployment's pods once all are available.
func testDeployment(t *testing.T, client kubernetes.Interface) []corev1.Pod {
	ctx := t.Context()
	deploy := newDeployment("web", 3, "nginx:1.25")
	if _, err := client.AppsV1().Deployments(testNamespace).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	waitFor(t, "deployment available", func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(testNamespace).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.AvailableReplicas == 3 && d.Status.UpdatedReplicas == 3 && d.Status.ReadyReplicas == 3, nil
	})
	list, err := client.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("got %d pods, want 3", len(list.Items))
	}
	for i := range list.Items {
		assertRunningOnKwok(t, &list.Items[i])
	}
	return list.Items
}

func assertRunningOnKwok(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if !strings.HasPrefix(pod.Spec.NodeName, NodeNamePrefix) {
		t.Errorf("pod %s on node %q, want a kwok node", pod.Name, pod.Spec.NodeName)
	}
	if pod.Status.Phase != corev1.PodRunning || !podReady(pod) {
		t.Errorf("pod %s phase %s ready %v, want Running and Ready", pod.Name, pod.Status.Phase, podReady(pod))
	}
	if pod.Status.PodIP == "" || pod.Status.HostIP == "" {
		t.Errorf("pod %s podIP %q hostIP %q, want both set", pod.Name, pod.Status.PodIP, pod.Status.HostIP)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.ImageID == "" || cs.State.Running == nil || !cs.Ready {
			t.Errorf("pod %s container %s: imageID %q running %v ready %v", pod.Name, cs.Name, cs.ImageID, cs.State.Running != nil, cs.Ready)
		}
	}
}

// testImageUpdate patches a pod's image the way an in-place update does
// and expects a kubelet-style container restart.
func testImageUpdate(t *testing.T, client kubernetes.Interface, pods []corev1.Pod) {
	if len(pods) == 0 {
		t.Skip("no pods: the Deployment step above failed and reported why")
	}
	ctx := t.Context()
	before := pods[0]
	old := before.Status.ContainerStatuses[0]
	patch := `{"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}`
	if _, err := client.CoreV1().Pods(testNamespace).Patch(ctx, before.Name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch image: %v", err)
	}
	var after *corev1.Pod
	waitFor(t, "container restarted with the new image", func(ctx context.Context) (bool, error) {
		var err error
		after, err = client.CoreV1().Pods(testNamespace).Get(ctx, before.Name, metav1.GetOptions{})
		return err == nil && after.Status.ContainerStatuses[0].Image == "nginx:1.27", err
	})
	cs := after.Status.ContainerStatuses[0]
	if after.UID != before.UID {
		t.Errorf("UID changed from %s to %s: pod was recreated", before.UID, after.UID)
	}
	if cs.ImageID == "" || cs.ImageID == old.ImageID {
		t.Errorf("imageID %q, want non-empty and different from %q", cs.ImageID, old.ImageID)
	}
	if cs.ContainerID == old.ContainerID {
		t.Errorf("containerID unchanged: %s", cs.ContainerID)
	}
	if cs.RestartCount != 1 {
		t.Errorf("restartCount %d, want 1", cs.RestartCount)
	}
	if cs.State.Running == nil || cs.State.Running.StartedAt.Before(&old.State.Running.StartedAt) {
		t.Errorf("state %+v, want running since no earlier than %v", cs.State, old.State.Running.StartedAt)
	}
	if cs.LastTerminationState.Terminated == nil {
		t.Errorf("lastState.terminated not set")
	}
	if !podReady(after) {
		t.Errorf("pod not Ready after the restart")
	}
}

// testReadinessGate checks that a pod with an unset gate condition stays
// not Ready, and becomes Ready when the condition turns True.
func testReadinessGate(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	const gate = "test.flotilla.dev/gate"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: testNamespace},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1.25"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
		},
	}
	if _, err := client.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	waitFor(t, "gated pod running", func(ctx context.Context) (bool, error) {
		var err error
		pod, err = client.CoreV1().Pods(testNamespace).Get(ctx, "gated", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning, err
	})
	time.Sleep(time.Second) // give a wrong stage time to flip Ready
	pod, err := client.CoreV1().Pods(testNamespace).Get(ctx, "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if podReady(pod) {
		t.Fatalf("pod Ready with readiness gate condition unset: %+v", pod.Status.Conditions)
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: gate, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
	})
	if _, err := client.CoreV1().Pods(testNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set gate condition: %v", err)
	}
	waitFor(t, "gated pod Ready once its gate is True", func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(testNamespace).Get(ctx, "gated", metav1.GetOptions{})
		return err == nil && podReady(pod), err
	})
}

// testPodDeletion deletes a running pod; only the simulated kubelet can
// complete a graceful deletion of a bound pod.
func testPodDeletion(t *testing.T, client kubernetes.Interface, pods []corev1.Pod) {
	if len(pods) == 0 {
		t.Skip("no pods: the Deployment step above failed and reported why")
	}
	name := pods[len(pods)-1].Name
	if err := client.CoreV1().Pods(testNamespace).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	waitFor(t, "pod removed", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// testFinalizerDeletion deletes a pod that carries a finalizer: it must
// stop (terminal, not Ready) but stay until the finalizer is removed.
func testFinalizerDeletion(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	pods := client.CoreV1().Pods(testNamespace)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: testNamespace, Finalizers: []string{"test.flotilla.dev/hold"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	waitFor(t, "held pod Ready", func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, "held", metav1.GetOptions{})
		return err == nil && podReady(pod), err
	})
	if err := pods.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	waitFor(t, "held pod stopped", func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, "held", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodFailed && !podReady(pod), err
	})
	patch := `{"metadata":{"finalizers":null}}`
	if _, err := pods.Patch(ctx, "held", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("remove finalizer: %v", err)
	}
	waitFor(t, "held pod removed", func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "held", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// testJob expects a Job's pod to run and succeed.
func testJob(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: testNamespace},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "task", Image: "busybox:1.36"}},
		}}},
	}
	if _, err := client.BatchV1().Jobs(testNamespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create job: %v", err)
	}
	waitFor(t, "job complete", func(ctx context.Context) (bool, error) {
		job, err := client.BatchV1().Jobs(testNamespace).Get(ctx, "once", metav1.GetOptions{})
		return err == nil && job.Status.Succeeded == 1 && job.Status.CompletionTime != nil, err
	})
}

// testFailingJob expects a Job whose container image is under fail.invalid/ to end with its pod Failed, the
// container terminated with exit code 1.
func testFailingJob(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "fails", Namespace: testNamespace},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "task", Image: "fail.invalid/task:1"}},
		}}},
	}
	if _, err := client.BatchV1().Jobs(testNamespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create job: %v", err)
	}
	waitFor(t, "job failed", func(ctx context.Context) (bool, error) {
		job, err := client.BatchV1().Jobs(testNamespace).Get(ctx, "fails", metav1.GetOptions{})
		return err == nil && job.Status.Failed == 1 && job.Status.Succeeded == 0, err
	})
	pods, err := client.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=fails"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of the job: %v (%v)", pods, err)
	}
	p := pods.Items[0]
	if term := p.Status.ContainerStatuses[0].State.Terminated; p.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 1 {
		t.Errorf("pod %s: phase %s, container state %+v; want Failed, exit code 1", p.Name, p.Status.Phase, p.Status.ContainerStatuses[0].State)
	}
}

func newDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: image}},
				},
			},
		},
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitFor polls cond until it holds; API errors are retried.
func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true,
		func(ctx context.Context) (bool, error) {
			ok, err := cond(ctx)
			return ok && err == nil, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// pids lists the PIDs of the running children.
func (c *Cluster) pids() []int {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.pid())
	}
	return pids
}

// assertNoProcesses checks the recorded PIDs and scans /proc for any
// child of this process or member of the children's process groups.
func assertNoProcesses(t *testing.T, pids []int) {
	t.Helper()
	if len(pids) != 5 {
		t.Errorf("recorded %d processes, want 5 (etcd, apiserver, controller-manager, scheduler, kwok)", len(pids))
	}
	groups := map[int]bool{}
	for _, pid := range pids {
		groups[pid] = true
		if processExists(pid) {
			t.Errorf("process %d still exists after Stop", pid)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("scan /proc: %v", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, pgrp, ok := procParent(pid); ok && (ppid == os.Getpid() || groups[pgrp]) {
			t.Errorf("process %d (parent %d, group %d) outlived the cluster", pid, ppid, pgrp)
		}
	}
}

// processExists is false for a PID that is gone or a zombie.
func processExists(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	state, ok := procState(pid)
	return ok && state != "Z"
}

// procStat returns the fields of /proc/<pid>/stat after the command name.
func procStat(pid int) ([]string, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(data[i+1:])), true
}

func procState(pid int) (string, bool) {
	fields, ok := procStat(pid)
	if !ok || len(fields) < 1 {
		return "", false
	}
	return fields[0], true
}

func procParent(pid int) (ppid, pgrp int, ok bool) {
	fields, ok := procStat(pid)
	if !ok || len(fields) < 3 || fields[0] == "Z" {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	pgrp, err2 := strconv.Atoi(fields[2])
	return ppid, pgrp, err1 == nil && err2 == nil
}

// testLog sends progress lines, with their phase timings, to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// assertKwokClean fails on kwok errors other than races with deletion: a
// Stage whose template does not render for some pod shows up only there.
func assertKwokClean(t *testing.T, c *Cluster) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.logDir, "kwok.log"))
	if err != nil {
		t.Fatalf("read kwok log: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, `"level":"ERROR"`) && !strings.Contains(line, "not found") {
			t.Errorf("kwok: %s", line)
		}
	}
}

// testControllerKubeconfig checks that the controller kubeconfig authenticates as a service account would
// (the groups priority and fairness files it by) and may do what a controller does.
func testControllerKubeconfig(t *testing.T, c *Cluster) {
	path, err := c.ControllerKubeconfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ControllerKubeconfig(t.Context()); err != nil {
		t.Fatalf("a second call: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != ControllerUser || !slices.Contains(u.Groups, "system:serviceaccounts") {
		t.Errorf("authenticated as %s %v, want %s in system:serviceaccounts", u.Username, u.Groups, ControllerUser)
	}
	if _, err := client.CoreV1().Pods(testNamespace).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing pods: %v", err)
	}
}
