package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestTargets(t *testing.T) {
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	for _, tc := range []struct {
		name                   string
		job                    *kruiseappsv1alpha1.EphemeralJob
		pods                   []*corev1.Pod
		wantTargets, wantClash []string
	}{{
		name: "oldest first, then by name", job: newJob(),
		pods:        []*corev1.Pod{newPod("c", 2), newPod("b", 1), newPod("a", 2)},
		wantTargets: []string{"b", "a", "c"}, wantClash: []string{},
	}, {
		name: "finished and deleting pods are not targets; pending ones are", job: newJob(),
		pods: []*corev1.Pod{newPod("done", 1, phase(corev1.PodSucceeded)), newPod("dead", 2, phase(corev1.PodFailed)),
			newPod("going", 3, deleting), newPod("pending", 4, phase(corev1.PodPending)), newPod("up", 5)},
		wantTargets: []string{"pending", "up"}, wantClash: []string{},
	}, {
		name: "replicas takes the oldest", job: newJob(func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Replicas = ptr.To[int32](2) }),
		pods:        []*corev1.Pod{newPod("c", 3), newPod("a", 1), newPod("b", 2)},
		wantTargets: []string{"a", "b"}, wantClash: []string{},
	}, {
		name: "replicas 0 targets none", job: newJob(func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Replicas = ptr.To[int32](0) }),
		pods:        []*corev1.Pod{newPod("a", 1)},
		wantTargets: []string{}, wantClash: []string{},
	}, {
		name: "a clashing name leaves the pod out and does not take a replica",
		job:  newJob(func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Replicas = ptr.To[int32](2) }),
		pods: []*corev1.Pod{
			newPod("app-named-debug", 1, func(p *corev1.Pod) { p.Spec.Containers[0].Name = "debug" }),
			newPod("init-named-debug", 2, func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "debug"}} }),
			newPod("kubectl-debug", 3, withEC("debug", "", running)),
			newPod("other-job", 4, withEC("debug", "other-uid", running)),
			newPod("ours", 5, ours(running)), newPod("free", 6), newPod("beyond", 7),
		},
		wantTargets: []string{"ours", "free"}, wantClash: []string{"app-named-debug", "init-named-debug", "kubectl-debug", "other-job"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			targets, clash := Targets(tc.job, tc.pods)
			if diff := cmp.Diff(tc.wantTargets, names(targets)); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantClash, names(clash)); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingMarksTheContainersAsTheJobs(t *testing.T) {
	job := newJob(twoContainers, func(j *kruiseappsv1alpha1.EphemeralJob) {
		j.Spec.Template.EphemeralContainers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: kruiseappsv1alpha1.EphemeralContainerEnvKey, Value: "forged"}}
	})
	got := Missing(job, newPod("p", 1, withEC("trace", jobUID, nil)))
	want := []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox",
		Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: kruiseappsv1alpha1.EphemeralContainerEnvKey, Value: jobUID}}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if job.Spec.Template.EphemeralContainers[0].Env[1].Value != "forged" {
		t.Error("Missing changed the job's template")
	}
	if got := Missing(job, newPod("p", 1, ours(nil), withEC("trace", jobUID, nil))); len(got) != 0 {
		t.Errorf("a pod holding both containers misses %v", got)
	}
}
