package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob/internal/plan"
)

// A job adds its container, marked with its UID, to the matched running pods through the ephemeralcontainers
// subresource, two at a time; the counters follow the statuses the kubelet writes, and the job succeeds once
// every pod's container exited 0.
func TestInjectsWithParallelismAndSucceeds(t *testing.T) {
	t.Parallel()
	injectedBefore, finishedBefore := counterValue(t, InjectionsName, "result", "success"), counterValue(t, FinishedName, "phase", "Succeeded")
	e := start(t)
	a, b, c := e.pod("a", "web"), e.pod("b", "web"), e.pod("c", "web")
	e.pod("d-other", "db")
	done := e.pod("e-done", "web")
	e.setPhase(done, corev1.PodSucceeded)
	job := e.job(func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Parallelism = ptr.To[int32](2) })

	e.waitInjected(job, "a", "b")
	e.counters(job, "Waiting match=3 succeeded=0 failed=0 running=0 waiting=3")
	expectInjected(t, e, a, job)
	if !slices.Contains(job.Finalizers, kruiseappsv1alpha1.EphemeralContainerFinalizer) {
		t.Errorf("finalizers %v", job.Finalizers)
	}

	e.setState(a, runningState())
	e.counters(job, "Running match=3 succeeded=0 failed=0 running=1 waiting=2")
	e.setState(a, exited(0))
	e.waitInjected(job, "a", "b", "c")
	e.setState(b, exited(0))
	e.setState(c, exited(0))
	e.counters(job, "Succeeded match=3 succeeded=3 failed=0 running=0 waiting=0")
	if job.Status.CompletionTime == nil || job.Status.StartTime == nil {
		t.Errorf("times: start %v, completion %v", job.Status.StartTime, job.Status.CompletionTime)
	}
	expectCondition(t, job, kruiseappsv1alpha1.EJobSucceeded, plan.ReasonJobSucceeded)
	expectCondition(t, job, kruiseappsv1alpha1.EJobInitialized, plan.ReasonInitialized)
	e.waitEvents(job, reasonCreated, "Normal Created ephemeral containers in pod a", "Normal Created ephemeral containers in pod b",
		"Normal Created ephemeral containers in pod c")
	e.waitEvents(job, plan.ReasonJobSucceeded, "Normal Ephemeral containers succeeded in 3/3 pods")
	// Other tests run beside this one: at least this job's share.
	if got := counterValue(t, InjectionsName, "result", "success") - injectedBefore; got < 3 {
		t.Errorf("%s{result=success} grew by %v, want at least 3", InjectionsName, got)
	}
	if got := counterValue(t, FinishedName, "phase", "Succeeded") - finishedBefore; got < 1 {
		t.Errorf("%s{phase=Succeeded} grew by %v, want at least 1", FinishedName, got)
	}
}

// expectInjected checks the container the job added to pod: the template's, with KRUISE_EJOB_ID added.
func expectInjected(t *testing.T, e *env, pod *corev1.Pod, job *kruiseappsv1alpha1.EphemeralJob) {
	t.Helper()
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.EphemeralContainers) != 1 {
		t.Fatalf("pod %s ephemeral containers %+v", pod.Name, pod.Spec.EphemeralContainers)
	}
	got := pod.Spec.EphemeralContainers[0]
	want := []corev1.EnvVar{{Name: "MODE", Value: "check"}, {Name: kruiseappsv1alpha1.EphemeralContainerEnvKey, Value: string(job.UID)}}
	if got.Image != "example.com/debug:v1" || !slices.Equal(got.Command, []string{"sh", "-c", "echo hello"}) || fmt.Sprint(got.Env) != fmt.Sprint(want) {
		t.Errorf("pod %s container %+v", pod.Name, got)
	}
}

func expectCondition(t *testing.T, job *kruiseappsv1alpha1.EphemeralJob, typ kruiseappsv1alpha1.EphemeralJobConditionType, reason string) {
	t.Helper()
	for _, c := range job.Status.Conditions {
		if c.Type == typ {
			if c.Status != corev1.ConditionTrue || c.Reason != reason {
				t.Errorf("condition %s: %+v, want True %s", typ, c, reason)
			}
			return
		}
	}
	t.Errorf("no condition %s in %+v", typ, job.Status.Conditions)
}

// replicas limits the job to the oldest pods; one failing container fails the job once all have finished.
func TestReplicasLimitAndFailure(t *testing.T) {
	t.Parallel()
	e := start(t)
	a, b := e.pod("a", "web"), e.pod("b", "web")
	e.pod("c", "web")
	job := e.job(func(j *kruiseappsv1alpha1.EphemeralJob) {
		j.Spec.Replicas, j.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](5)
	})
	e.waitInjected(job, "a", "b")
	e.counters(job, "Waiting match=2 succeeded=0 failed=0 running=0 waiting=2")
	e.setState(a, exited(1))
	e.counters(job, "Waiting match=2 succeeded=0 failed=1 running=0 waiting=1")
	expectCondition(t, job, kruiseappsv1alpha1.EJobFailed, plan.ReasonContainerFailed)
	e.setState(b, exited(0))
	e.counters(job, "Failed match=2 succeeded=1 failed=1 running=0 waiting=0")
	expectCondition(t, job, kruiseappsv1alpha1.EJobFailed, plan.ReasonJobFailed)
	e.waitEvents(job, plan.ReasonJobFailed, "Warning job failed to run all tasks, 1/2 pods failed")
	got, err := e.injected(t.Context(), job)
	if err != nil || fmt.Sprint(got) != "[a b]" {
		t.Errorf("after the end, the containers are in %v (%v)", got, err)
	}
}

// A pod that already has a container named as the job's is left out with a Warning event; with no other
// pod, the job matches none.
func TestConflictingPodIsLeftOut(t *testing.T) {
	t.Parallel()
	e := start(t)
	clash := &corev1.Pod{}
	clash.Namespace, clash.Name, clash.Labels = e.ns, "clash", map[string]string{"app": "web"}
	clash.OwnerReferences = []metav1.OwnerReference{replicaSet}
	clash.Spec.Containers = []corev1.Container{{Name: "debug", Image: "example.com/app:v1"}}
	clash.Spec.NodeName, clash.Spec.AutomountServiceAccountToken = "n1", ptr.To(false)
	e.create(clash)
	job := e.job()
	e.counters(job, "Waiting match=0 succeeded=0 failed=0 running=0 waiting=0")
	expectCondition(t, job, kruiseappsv1alpha1.EJobMatchedEmpty, plan.ReasonMatchEmpty)
	e.waitEvents(job, reasonConflict,
		"Warning Pod clash already has a container named as one of the job's ephemeral containers; it is left out")
	e.waitEvents(job, "MatchedEmpty", "Normal The selector matches no active pod")

	e.pod("fresh", "web")
	e.waitInjected(job, "fresh")
	e.counters(job, "Waiting match=1 succeeded=0 failed=0 running=0 waiting=1")
}

// A paused job adds no container; resumed, it does.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.pod("a", "web")
	job := e.job(func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Paused = true })
	e.counters(job, "Paused match=1 succeeded=0 failed=0 running=0 waiting=1")
	if got, err := e.injected(t.Context(), job); err != nil || len(got) != 0 {
		t.Fatalf("a paused job injected into %v (%v)", got, err)
	}
	e.update(job, func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Paused = false })
	e.waitInjected(job, "a")
	e.counters(job, "Waiting match=1 succeeded=0 failed=0 running=0 waiting=1")
	e.waitEvents(job, "Paused", "Normal Paused: no more pods get the ephemeral containers")
	e.waitEvents(job, "Resumed", "Normal Resumed: pods get the ephemeral containers again")
}

// Past activeDeadlineSeconds (on the controller's clock) a running job fails; once its
// ttlSecondsAfterFinished has passed it is deleted, its finalizer released; the injected container stays.
func TestDeadlineThenTTL(t *testing.T) {
	t.Parallel()
	e := start(t)
	a := e.pod("a", "web")
	job := e.job(func(j *kruiseappsv1alpha1.EphemeralJob) {
		j.Spec.ActiveDeadlineSeconds, j.Spec.TTLSecondsAfterFinished = ptr.To[int64](60), ptr.To[int32](300)
	})
	e.waitInjected(job, "a")
	e.setState(a, runningState())
	e.counters(job, "Running match=1 succeeded=0 failed=0 running=1 waiting=0")

	// The planner's tests pin the boundaries; here the controller's clock decides.
	e.clock.Step(60 * time.Second)
	e.poke(job)
	e.counters(job, "Failed match=1 succeeded=0 failed=0 running=1 waiting=0")
	expectCondition(t, job, kruiseappsv1alpha1.EJobFailed, plan.ReasonDeadlineExceeded)
	if !job.Status.CompletionTime.Time.Equal(e.clock.Now().Truncate(time.Second)) {
		t.Errorf("completionTime %v, clock %v", job.Status.CompletionTime, e.clock.Now())
	}
	e.waitEvents(job, plan.ReasonDeadlineExceeded, fmt.Sprintf("Warning EphemeralJob %s/diag was active longer than specified deadline", e.ns))

	e.clock.Step(300 * time.Second)
	e.poke(job)
	e.gone(job)
	got, err := e.injected(context.Background(), job)
	if err != nil || fmt.Sprint(got) != "[a]" {
		t.Errorf("after the job, its container is in %v (%v)", got, err)
	}
}

// Deleting a running job releases it at once: ephemeral containers cannot be removed from a pod, so they stay.
func TestDeleteRunningJob(t *testing.T) {
	t.Parallel()
	e := start(t)
	a := e.pod("a", "web")
	job := e.job()
	e.waitInjected(job, "a")
	e.setState(a, runningState())
	e.counters(job, "Running match=1 succeeded=0 failed=0 running=1 waiting=0")
	if !slices.Contains(job.Finalizers, kruiseappsv1alpha1.EphemeralContainerFinalizer) {
		t.Fatalf("finalizers %v", job.Finalizers)
	}
	if err := e.c.Delete(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	e.gone(job)
	got, err := e.injected(t.Context(), job)
	if err != nil || fmt.Sprint(got) != "[a]" {
		t.Errorf("after the job, its container is in %v (%v)", got, err)
	}
}
