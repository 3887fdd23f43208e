package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// A container of the test pods: its name, its env (name=value pairs) and its state: "running", "waiting"
// (no container ID yet), "exit:N" or "none" (no status).
type ctr struct {
	name, state string
	env         []string
}

const (
	sidecarEnv = kruiseappsv1alpha1.KruiseTerminateSidecarEnv
	imageEnv   = kruiseappsv1alpha1.KruiseTerminateSidecarWithImageEnv
	ignoreEnv  = kruiseappsv1alpha1.KruiseIgnoreContainerExitCodeEnv
)

func sidecar(name, state string, env ...string) ctr {
	return ctr{name: name, state: state, env: append([]string{sidecarEnv, "true"}, env...)}
}

func mainC(name, state string) ctr { return ctr{name: name, state: state} }

func pod(policy corev1.RestartPolicy, phase corev1.PodPhase, containers ...ctr) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-1-abcde", UID: "u-1"},
		Spec:       corev1.PodSpec{RestartPolicy: policy},
		Status:     corev1.PodStatus{Phase: phase},
	}
	for _, c := range containers {
		spec := corev1.Container{Name: c.name}
		for i := 0; i+1 < len(c.env); i += 2 {
			spec.Env = append(spec.Env, corev1.EnvVar{Name: c.env[i], Value: c.env[i+1]})
		}
		p.Spec.Containers = append(p.Spec.Containers, spec)
		if c.state == "none" {
			continue
		}
		s := corev1.ContainerStatus{Name: c.name, ContainerID: "containerd://" + c.name}
		switch c.state {
		case "running":
			s.State.Running = &corev1.ContainerStateRunning{}
		case "waiting":
			s.ContainerID = ""
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		case "exit:0":
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0}
		case "exit:1":
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s)
	}
	return p
}

const (
	never     = corev1.RestartPolicyNever
	onFailure = corev1.RestartPolicyOnFailure
	always    = corev1.RestartPolicyAlways
	running   = corev1.PodRunning
)

func TestDecide(t *testing.T) {
	deleting := pod(never, running, mainC("main", "exit:0"), sidecar("proxy", "running"))
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	cases := []struct {
		name string
		pod  *corev1.Pod
		want Decision
	}{
		{"Never: main exited 0, sidecar stopped",
			pod(never, running, mainC("main", "exit:0"), sidecar("proxy", "running")), Decision{Stop: []string{"proxy"}}},
		{"Never: a main that failed is done too",
			pod(never, running, mainC("main", "exit:1"), sidecar("proxy", "running")), Decision{Stop: []string{"proxy"}}},
		{"Never: a main still running keeps the sidecars",
			pod(never, running, mainC("a", "exit:0"), mainC("b", "running"), sidecar("proxy", "running")), Decision{}},
		{"OnFailure: a main that failed will be restarted",
			pod(onFailure, running, mainC("main", "exit:1"), sidecar("proxy", "running")), Decision{}},
		{"OnFailure: mains exited 0",
			pod(onFailure, running, mainC("main", "exit:0"), sidecar("proxy", "running")), Decision{Stop: []string{"proxy"}}},
		{"Always: never a job pod",
			pod(always, running, mainC("main", "exit:0"), sidecar("proxy", "running")), Decision{}},
		{"no sidecar env",
			pod(never, running, mainC("main", "exit:0"), mainC("proxy", "running")), Decision{}},
		{"the env set to something else than true",
			pod(never, running, mainC("main", "exit:0"), ctr{name: "proxy", state: "running", env: []string{sidecarEnv, "yes"}}), Decision{}},
		{"the env's value in any case",
			pod(never, running, mainC("main", "exit:0"), ctr{name: "proxy", state: "running", env: []string{sidecarEnv, "TRUE"}}),
			Decision{Stop: []string{"proxy"}}},
		{"pending pod",
			pod(never, corev1.PodPending, mainC("main", "exit:0"), sidecar("proxy", "running")), Decision{}},
		{"pod being deleted", deleting, Decision{}},
		{"statuses not reported for every container yet",
			pod(never, running, mainC("main", "exit:0"), sidecar("proxy", "none")), Decision{}},
		{"a sidecar not created yet: wait for it",
			pod(never, running, mainC("main", "exit:0"), sidecar("proxy", "waiting")), Decision{}},
		{"only the sidecars still running, sorted",
			pod(never, running, mainC("main", "exit:0"), sidecar("z", "running"), sidecar("a", "running"), sidecar("done", "exit:0")),
			Decision{Stop: []string{"a", "z"}}},
		{"every sidecar finished",
			pod(never, corev1.PodSucceeded, mainC("main", "exit:0"), sidecar("proxy", "exit:0")), Decision{}},
		{"an image-swap sidecar is no main container, and not stopped on a node",
			pod(never, running, mainC("main", "exit:0"), sidecar("proxy", "running"), ctr{name: "vk", state: "running", env: []string{imageEnv, "quick-exit:1"}}),
			Decision{Stop: []string{"proxy"}}},
		{"only an image-swap sidecar: nothing to stop",
			pod(never, running, mainC("main", "exit:0"), ctr{name: "vk", state: "running", env: []string{imageEnv, "quick-exit:1"}}), Decision{}},
		{"ignore-exit-code sidecar: the phase first, from the mains",
			pod(never, running, mainC("main", "exit:0"), sidecar("proxy", "running", ignoreEnv, "true")), Decision{Phase: corev1.PodSucceeded}},
		{"ignore-exit-code sidecar: a failed main fails the pod",
			pod(never, running, mainC("main", "exit:1"), sidecar("proxy", "running", ignoreEnv, "true")), Decision{Phase: corev1.PodFailed}},
		{"ignore-exit-code sidecar: stopped once the phase is set",
			pod(never, corev1.PodSucceeded, mainC("main", "exit:0"), sidecar("proxy", "running", ignoreEnv, "true")), Decision{Stop: []string{"proxy"}}},
		{"ignore-exit-code sidecar: after the other sidecars",
			pod(never, running, mainC("main", "exit:0"), sidecar("proxy", "running", ignoreEnv, "true"), sidecar("log", "running")),
			Decision{Stop: []string{"log"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Decide(tc.pod)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequest(t *testing.T) {
	p := pod(never, running, mainC("main", "exit:0"), sidecar("a", "running"), sidecar("b", "running"))
	got := Request(p, []string{"a", "b"})
	want := &kruiseappsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sidecar-termination-u-1", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Pod", Name: "job-1-abcde", UID: "u-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    "job-1-abcde",
			Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "a"}, {Name: "b"}},
			Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{
				ForceRecreate: true, FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Request (-want +got):\n%s", diff)
	}
}
