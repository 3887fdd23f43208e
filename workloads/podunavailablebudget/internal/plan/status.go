package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

const (
	// DeletionTimeout is how long a pod whose deletion or eviction a budget admitted counts as unavailable
	// without going away; then it counts by its own state again (upstream's 20 s).
	DeletionTimeout = 20 * time.Second
	// UpdateTimeout is how long a pod whose in-place update a budget admitted counts as unavailable; then it
	// counts by its own state again, unavailable until its update completes and it is ready (upstream's 10 s,
	// which covers caches that do not show the update yet).
	UpdateTimeout = 10 * time.Second
)

// Input is what the status of a budget is computed from.
type Input struct {
	PUB *kruisepolicyv1alpha1.PodUnavailableBudget
	// Pods are the pods the budget selects (its selector's, or its target workload's).
	Pods []*corev1.Pod
	// Total is the replicas the budget counts: its override, or its workloads' desired replicas.
	Total int32
	Now   time.Time
}

// Result is a budget's computed status and what the controller does about it.
type Result struct {
	Status kruisepolicyv1alpha1.PodUnavailableBudgetStatus
	// Recheck is when the next recorded disruption expires (0: none is recorded).
	Recheck time.Duration
	// NotDeleted are the pods whose admitted deletion or eviction expired with the pod still there.
	NotDeleted []string
}

// Status computes a budget's status: the recorded disruptions of its active pods that still hold, the pods
// available besides them, and how many more may go. Records of pods that are gone are dropped: the pods no
// longer count. An unreadable maxUnavailable or minAvailable is an error.
func Status(in Input) (Result, error) {
	desired, err := DesiredAvailable(&in.PUB.Spec, in.Total)
	if err != nil {
		return Result{}, err
	}
	r := Result{}
	disrupted, unavailable := map[string]metav1.Time{}, map[string]metav1.Time{}
	var current int32
	for _, pod := range in.Pods {
		if !Active(pod) {
			continue
		}
		deleting, expired := r.keep(pod.Name, in.PUB.Status.DisruptedPods, disrupted, DeletionTimeout, in.Now)
		if expired {
			r.NotDeleted = append(r.NotDeleted, pod.Name)
		}
		updating, _ := r.keep(pod.Name, in.PUB.Status.UnavailablePods, unavailable, UpdateTimeout, in.Now)
		if !deleting && !updating && Ready(pod) && Consistent(pod) {
			current++
		}
	}
	r.Status = kruisepolicyv1alpha1.PodUnavailableBudgetStatus{
		ObservedGeneration: in.PUB.Generation, DisruptedPods: disrupted, UnavailablePods: unavailable,
		UnavailableAllowed: max(current-desired, 0), CurrentAvailable: current, DesiredAvailable: desired, TotalReplicas: in.Total,
	}
	return r, nil
}

// keep copies pod's record from old into kept while it is at most ttl old (kept), and reports a record it
// dropped for its age (expired); Recheck becomes the soonest expiry of those kept.
func (r *Result) keep(pod string, old, kept map[string]metav1.Time, ttl time.Duration, now time.Time) (held, expired bool) {
	at, ok := old[pod]
	if !ok {
		return false, false
	}
	expires := at.Add(ttl)
	if expires.Before(now) {
		return false, true
	}
	kept[pod] = at
	if wait := expires.Sub(now); r.Recheck == 0 || wait < r.Recheck {
		r.Recheck = max(wait, time.Millisecond)
	}
	return true, false
}
