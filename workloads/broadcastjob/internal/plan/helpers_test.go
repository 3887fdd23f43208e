package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// job is a BroadcastJob as the defaulting webhook leaves it (policy Always, FailFast, no parallelism limit),
// started at t0 unless a mutation says otherwise.
func job(mutate ...func(*kruiseappsv1alpha1.BroadcastJob)) *kruiseappsv1alpha1.BroadcastJob {
	j := &kruiseappsv1alpha1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{Name: "bcj", Namespace: "ns", UID: "uid-1"},
		Spec: kruiseappsv1alpha1.BroadcastJobSpec{
			Parallelism: ptr.To(intstr.FromInt32(kruiseappsv1alpha1.DefaultBroadcastJobParallelism)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "counter"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "counter", Image: "busybox:latest"}}},
			},
			CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always},
			FailurePolicy:    kruiseappsv1alpha1.FailurePolicy{Type: kruiseappsv1alpha1.FailurePolicyTypeFailFast},
		},
		Status: kruiseappsv1alpha1.BroadcastJobStatus{StartTime: ptr.To(metav1.NewTime(t0)), Phase: kruiseappsv1alpha1.PhaseRunning},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func parallelism(v intstr.IntOrString) func(*kruiseappsv1alpha1.BroadcastJob) {
	return func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Parallelism = &v }
}

func failurePolicy(t kruiseappsv1alpha1.FailurePolicyType) func(*kruiseappsv1alpha1.BroadcastJob) {
	return func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.FailurePolicy.Type = t }
}

func never(j *kruiseappsv1alpha1.BroadcastJob) {
	j.Spec.CompletionPolicy.Type = kruiseappsv1alpha1.Never
}

func deadline(seconds int64) func(*kruiseappsv1alpha1.BroadcastJob) {
	return func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = &seconds }
}

// finished marks the job ended with condition t at completed.
func finished(t kruiseappsv1alpha1.JobConditionType, completed time.Time, ttl *int32) func(*kruiseappsv1alpha1.BroadcastJob) {
	return func(j *kruiseappsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ttl
		j.Status.Conditions = []kruiseappsv1alpha1.JobCondition{{Type: t, Status: corev1.ConditionTrue}}
		j.Status.CompletionTime = ptr.To(metav1.NewTime(completed))
	}
}

// node is a schedulable kwok-like node with 32 CPUs and 110 pod slots.
func node(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func nodes(n int) []*corev1.Node {
	out := make([]*corev1.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("node-%02d", i))
	}
	return out
}

func tainted(effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Effect: effect})
	}
}

// pod is the job's pod, bound to nodeName, in phase.
func pod(name, nodeName string, phase corev1.PodPhase, mutate ...func(*corev1.Pod)) *corev1.Pod {
	j := job()
	p := NewPod(j, nodeName)
	p.Name, p.UID = name, types.UID("uid-"+name)
	p.Spec.NodeName = nodeName
	p.Status.Phase = phase
	for _, m := range mutate {
		m(p)
	}
	return p
}

func deleting(p *corev1.Pod) {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
}

func restarts(policy corev1.RestartPolicy, n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.RestartPolicy = policy
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "counter", RestartCount: n}}
	}
}

// podsOn are pods named after their nodes, in phase.
func podsOn(phase corev1.PodPhase, names ...string) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(names))
	for _, n := range names {
		out = append(out, pod("p-"+n, n, phase))
	}
	return out
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func pinnedTo(p *corev1.Pod) string {
	n, _ := nodeplacement.TargetNode(&corev1.Pod{Spec: corev1.PodSpec{Affinity: p.Spec.Affinity}})
	return n
}
