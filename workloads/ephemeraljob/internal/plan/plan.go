package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Input is what one reconcile of an EphemeralJob sees.
type Input struct {
	Job *kruiseappsv1alpha1.EphemeralJob
	// Pods are the pods of the job's namespace its selector matches.
	Pods []*corev1.Pod
	Now  time.Time
}

// Plan is what the reconcile does.
type Plan struct {
	// Status is the job's next status, computed from the pods as the reconcile found them.
	Status kruiseappsv1alpha1.EphemeralJobStatus
	// Inject are the target pods that get the job's containers now, oldest first.
	Inject []*corev1.Pod
	// Conflicts are the selected pods left out for a container name the job's template uses.
	Conflicts []*corev1.Pod
	// Wake is how soon the job's deadline passes; 0 when it has none to wait for.
	Wake time.Duration
}

// Make plans one reconcile of a job that has not finished.
func Make(in Input) Plan {
	targets, conflicts := Targets(in.Job, in.Pods)
	counts := Count(in.Job, targets)
	status := NextStatus(in.Job, counts, in.Now)
	p := Plan{Status: status, Conflicts: conflicts}
	if status.CompletionTime == nil && status.Phase != kruiseappsv1alpha1.EphemeralJobPause && status.Phase != kruiseappsv1alpha1.EphemeralJobError {
		p.Inject = ToInject(in.Job, targets)
		p.Wake = untilDeadline(in.Job, status.StartTime.Time, in.Now)
	}
	return p
}

// ToInject picks the targets that get the job's containers now: those still missing some, oldest first, as
// many as spec.parallelism (default 1) allows beside the targets whose injected containers have not finished.
func ToInject(job *kruiseappsv1alpha1.EphemeralJob, targets []*corev1.Pod) []*corev1.Pod {
	slots := int(Parallelism(job))
	var pending []*corev1.Pod
	for _, p := range targets {
		if injected(job, p) && !finished(PodState(job, p)) {
			slots--
		}
		if len(Missing(job, p)) > 0 {
			pending = append(pending, p)
		}
	}
	if slots <= 0 {
		return nil
	}
	return pending[:min(slots, len(pending))]
}

func finished(s State) bool { return s == Succeeded || s == Failed }

// Parallelism is spec.parallelism, or its default.
func Parallelism(job *kruiseappsv1alpha1.EphemeralJob) int32 {
	if job.Spec.Parallelism != nil {
		return *job.Spec.Parallelism
	}
	return kruiseappsv1alpha1.DefaultEphemeralJobParallelism
}

// untilDeadline is how long the job, started at start, still has before activeDeadlineSeconds; 0 for none.
func untilDeadline(job *kruiseappsv1alpha1.EphemeralJob, start, now time.Time) time.Duration {
	if job.Spec.ActiveDeadlineSeconds == nil {
		return 0
	}
	return max(start.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second).Sub(now), 0)
}

func pastDeadline(job *kruiseappsv1alpha1.EphemeralJob, start, now time.Time) bool {
	return job.Spec.ActiveDeadlineSeconds != nil && untilDeadline(job, start, now) == 0
}

// Expiry is how long a finished job still lives: ttlSecondsAfterFinished (default 1800) after its completion
// time; 0 or less means it is due for deletion.
func Expiry(job *kruiseappsv1alpha1.EphemeralJob, now time.Time) time.Duration {
	ttl := kruiseappsv1alpha1.DefaultEphemeralJobTTLSecondsAfterFinished
	if job.Spec.TTLSecondsAfterFinished != nil {
		ttl = *job.Spec.TTLSecondsAfterFinished
	}
	return job.Status.CompletionTime.Add(time.Duration(ttl) * time.Second).Sub(now)
}
