package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

// A job runs one pod on every node of its pool, never more than parallelism at once, and completes: upstream's
// status, condition, event, pod names, labels and pinning.
func TestRunsToCompletionWithinParallelism(t *testing.T) {
	t.Parallel()
	c, ns, _ := startController(t)
	pool := managertest.NodePool(t, c, 5, poolTaint)
	job := newJob(ns, pool, "1s", func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(2)) })
	peak := watchActive(t, c, job)
	create(t, c, job)
	got := waitJob(t, c, job, "completed", func(s kruiseappsv1alpha1.BroadcastJobStatus) bool {
		return s.Phase == kruiseappsv1alpha1.PhaseCompleted
	})
	s := got.Status
	if s.Desired != 5 || s.Succeeded != 5 || s.Active != 0 || s.Failed != 0 || s.StartTime == nil || s.CompletionTime == nil {
		t.Errorf("status %+v", s)
	}
	if cond := condition(s, kruiseappsv1alpha1.JobComplete); cond == nil || cond.Status != corev1.ConditionTrue ||
		cond.Reason != "Complete" || cond.Message != "Job completed, 5 pods succeeded, 0 pods failed" {
		t.Errorf("Complete condition %+v", cond)
	}
	if p := peak(); p > 2 || p == 0 {
		t.Errorf("at most %d pods ran at once, want 1 or 2", p)
	}
	expectPods(t, c, got, pool, 5)
	eventually(t, "the JobComplete event", func(ctx context.Context) (bool, error) {
		notes, err := eventNotes(ctx, c, job, "JobComplete")
		want := fmt.Sprintf("Job %s/bcj is completed, 5 pods succeeded, 0 pods failed", ns)
		return len(notes) == 1 && notes[0] == want, fmt.Errorf("notes %v (%w)", notes, err)
	})
}

// watchActive samples the job's running pods until the test ends; the returned function tells the most seen at
// once.
func watchActive(t *testing.T, c client.Client, job *kruiseappsv1alpha1.BroadcastJob) func() int {
	var mu sync.Mutex
	most := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if pods, err := jobPods(ctx, c, job); err == nil {
				n := 0
				for _, p := range pods {
					if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
						n++
					}
				}
				mu.Lock()
				most = max(most, n)
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

// expectPods checks the job's pods: one per node of the pool, named after the job, labelled and pinned.
func expectPods(t *testing.T, c client.Client, job *kruiseappsv1alpha1.BroadcastJob, pool string, n int) {
	t.Helper()
	pods, err := jobPods(t.Context(), c, job)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		node, _ := nodeplacement.TargetNode(&corev1.Pod{Spec: corev1.PodSpec{Affinity: p.Spec.Affinity}})
		nodes[node] = true
		if !strings.HasPrefix(p.Name, "bcj-") || !strings.HasPrefix(node, pool+"-") || p.Spec.NodeName != node ||
			p.Labels["broadcastjob-name"] != "bcj" || p.Labels["broadcastjob-controller-uid"] != string(job.UID) ||
			metav1.GetControllerOf(&p) == nil || metav1.GetControllerOf(&p).UID != job.UID {
			t.Errorf("pod %s: pinned to %q, bound to %q, labels %v, owners %v", p.Name, node, p.Spec.NodeName, p.Labels, p.OwnerReferences)
		}
	}
	if len(pods) != n || len(nodes) != n {
		t.Errorf("%d pods on %d nodes, want %d on %d", len(pods), len(nodes), n, n)
	}
}

// The seed's activeDeadlineSeconds story, on the fake clock: past the deadline the job fails and its running
// pods are deleted; ttlSecondsAfterFinished later the job is deleted.
func TestDeadlineFailsThenTTLDeletes(t *testing.T) {
	t.Parallel()
	c, ns, clock := startController(t)
	pool := managertest.NodePool(t, c, 2, poolTaint)
	job := newJob(ns, pool, "1h", func(j *kruiseappsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](20)
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](10)
	})
	create(t, c, job)
	waitJob(t, c, job, "two pods running", func(s kruiseappsv1alpha1.BroadcastJobStatus) bool { return s.Active == 2 })
	clock.Step(21 * time.Second)
	poke(t, c, job)
	got := waitJob(t, c, job, "failed", func(s kruiseappsv1alpha1.BroadcastJobStatus) bool {
		return s.Phase == kruiseappsv1alpha1.PhaseFailed
	})
	if s := got.Status; s.Active != 0 || s.Failed != 2 || s.CompletionTime == nil {
		t.Errorf("status %+v", s)
	}
	want := fmt.Sprintf("Job %s/bcj was active longer than specified deadline", ns)
	if cond := condition(got.Status, kruiseappsv1alpha1.JobFailed); cond == nil || cond.Reason != "Failed" || cond.Message != want {
		t.Errorf("Failed condition %+v", cond)
	}
	eventually(t, "the running pods deleted", func(ctx context.Context) (bool, error) {
		pods, err := jobPods(ctx, c, job)
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				return false, fmt.Errorf("pod %s not deleted", p.Name)
			}
		}
		return err == nil, err
	})
	clock.Step(11 * time.Second)
	poke(t, c, job)
	eventually(t, "the job deleted after its TTL", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(job), &kruiseappsv1alpha1.BroadcastJob{})
		return apierrors.IsNotFound(err), err
	})
}

// With failing pods and parallelism 1, FailFast stops at the first failure, Pause pauses the job at it (no
// condition: the job has not ended) and Continue runs every node.
func TestFailurePolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy              kruiseappsv1alpha1.FailurePolicyType
		phase               kruiseappsv1alpha1.BroadcastJobPhase
		condition           kruiseappsv1alpha1.JobConditionType
		failed, pods, event string
	}{
		{kruiseappsv1alpha1.FailurePolicyTypeFailFast, kruiseappsv1alpha1.PhaseFailed, kruiseappsv1alpha1.JobFailed, "1", "1", "FailedPodFound"},
		{kruiseappsv1alpha1.FailurePolicyTypePause, kruiseappsv1alpha1.PhasePaused, "", "1", "1", "Paused"},
		{kruiseappsv1alpha1.FailurePolicyTypeContinue, kruiseappsv1alpha1.PhaseCompleted, kruiseappsv1alpha1.JobComplete, "3", "3", "JobComplete"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			c, ns, _ := startController(t)
			pool := managertest.NodePool(t, c, 3, poolTaint)
			job := newJob(ns, pool, "0s", func(j *kruiseappsv1alpha1.BroadcastJob) {
				j.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
				j.Spec.FailurePolicy.Type = tc.policy
				j.Spec.Template.Spec.Containers[0].Image = "fail.invalid/counter:1"
			})
			create(t, c, job)
			got := waitJob(t, c, job, string(tc.phase), func(s kruiseappsv1alpha1.BroadcastJobStatus) bool { return s.Phase == tc.phase })
			s := got.Status
			if fmt.Sprint(s.Failed) != tc.failed || s.Succeeded != 0 || s.Desired != 3 || !endedAs(s, tc.condition) {
				t.Errorf("status %+v", s)
			}
			pods, err := jobPods(t.Context(), c, job)
			if err != nil || fmt.Sprint(len(pods)) != tc.pods {
				t.Errorf("%d pods (%v), want %s", len(pods), err, tc.pods)
			}
			eventually(t, "the "+tc.event+" event", func(ctx context.Context) (bool, error) {
				notes, err := eventNotes(ctx, c, job, tc.event)
				return len(notes) == 1, fmt.Errorf("notes %v (%w)", notes, err)
			})
		})
	}
}

// A job of completion policy Never gives a node that joins later its pod, and stays running.
func TestNeverCoversNewNodes(t *testing.T) {
	t.Parallel()
	c, ns, _ := startController(t)
	pool := managertest.NodePool(t, c, 1, poolTaint)
	job := newJob(ns, pool, "0s", func(j *kruiseappsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.Type = kruiseappsv1alpha1.Never
	})
	create(t, c, job)
	waitJob(t, c, job, "the first node done", func(s kruiseappsv1alpha1.BroadcastJobStatus) bool { return s.Succeeded == 1 })
	managertest.PoolNode(t, c, pool, 1, poolTaint)
	got := waitJob(t, c, job, "the new node done", func(s kruiseappsv1alpha1.BroadcastJobStatus) bool {
		return s.Succeeded == 2 && s.Desired == 2
	})
	if got.Status.Phase != kruiseappsv1alpha1.PhaseRunning || len(got.Status.Conditions) > 0 {
		t.Errorf("phase %q, conditions %v: a job of policy Never never ends", got.Status.Phase, got.Status.Conditions)
	}
	expectPods(t, c, got, pool, 2)
}

// A paused job counts its nodes and creates no pod; once resumed it runs.
func TestPausedThenResumed(t *testing.T) {
	t.Parallel()
	c, ns, _ := startController(t)
	pool := managertest.NodePool(t, c, 2, poolTaint)
	job := newJob(ns, pool, "0s", func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Paused = true })
	create(t, c, job)
	waitJob(t, c, job, "paused", func(s kruiseappsv1alpha1.BroadcastJobStatus) bool {
		return s.Phase == kruiseappsv1alpha1.PhasePaused && s.Desired == 2
	})
	if pods, err := jobPods(t.Context(), c, job); err != nil || len(pods) > 0 {
		t.Fatalf("a paused job has %d pods (%v)", len(pods), err)
	}
	managertest.Update(t, c, job.DeepCopy(), func(got *kruiseappsv1alpha1.BroadcastJob) { got.Spec.Paused = false })
	waitJob(t, c, job, "completed", func(s kruiseappsv1alpha1.BroadcastJobStatus) bool {
		return s.Phase == kruiseappsv1alpha1.PhaseCompleted && s.Succeeded == 2
	})
	eventually(t, "the Continue event", func(ctx context.Context) (bool, error) {
		notes, err := eventNotes(ctx, c, job, "Continue")
		return len(notes) == 1 && notes[0] == "continue to process job", fmt.Errorf("notes %v (%w)", notes, err)
	})
}
