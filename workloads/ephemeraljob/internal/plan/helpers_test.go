package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const jobUID = "job-uid"

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// newJob is a job injecting the container "debug" into pods labelled app=web.
func newJob(mutate ...func(*kruiseappsv1alpha1.EphemeralJob)) *kruiseappsv1alpha1.EphemeralJob {
	j := &kruiseappsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "diag", UID: jobUID},
		Spec: kruiseappsv1alpha1.EphemeralJobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: kruiseappsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{
				{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}},
			}},
		},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func twoContainers(j *kruiseappsv1alpha1.EphemeralJob) {
	j.Spec.Template.EphemeralContainers = append(j.Spec.Template.EphemeralContainers,
		corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "trace", Image: "busybox"}})
}

// newPod is a running pod created age minutes after t0.
func newPod(name string, age int, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Minute))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// withEC adds an ephemeral container name, injected by the job with uid (none when empty), in state.
func withEC(name, uid string, state *corev1.ContainerState) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox"}}
		if uid != "" {
			ec.Env = []corev1.EnvVar{{Name: kruiseappsv1alpha1.EphemeralContainerEnvKey, Value: uid}}
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		if state != nil {
			p.Status.EphemeralContainerStatuses = append(p.Status.EphemeralContainerStatuses, corev1.ContainerStatus{Name: name, State: *state})
		}
	}
}

// ours adds the job's "debug" container in state (no status when nil).
func ours(state *corev1.ContainerState) func(*corev1.Pod) { return withEC("debug", jobUID, state) }

var (
	waiting   = &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	running   = &corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}
	succeeded = &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: metav1.NewTime(t0)}}
	failed    = &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(t0)}}
	runError  = &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RunContainerError"}}
	noFinish  = &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
)

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
