package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Upstream's deadlines: a pod the webhook admitted but the controller has not seen after CreatingDeadline
// was never created, and a pod whose deletion was admitted but which still runs after DeletingDeadline was
// not deleted; either entry is then dropped and its replica counted again.
const (
	CreatingDeadline = 30 * time.Second
	DeletingDeadline = 15 * time.Second
)

// Input is what the controller gathered about a WorkloadSpread's target.
type Input struct {
	WS *kruiseappsv1alpha1.WorkloadSpread
	// Pods are the target workload's pods; those not matched to WS are ignored.
	Pods []*corev1.Pod
	// WorkloadReplicas is the target's desired replicas (a Job's parallelism), the base of percentages.
	WorkloadReplicas int32
	Now              time.Time
}

// Expired is an entry of creatingPods or deletingPods dropped past its deadline.
type Expired struct {
	Subset, Pod string
	Creating    bool
}

// Outcome is the status wanted and what the controller must do beside writing it.
type Outcome struct {
	Status kruiseappsv1alpha1.WorkloadSpreadStatus
	// RequeueAfter is when the earliest kept entry expires or a pending pod turns critical (0: never).
	RequeueAfter time.Duration
	Expired      []Expired
	// Reschedule are pods stuck unschedulable past rescheduleCriticalSeconds (Adaptive): deleted, their
	// workload creates them again, and the webhook skips their subset.
	Reschedule []*corev1.Pod
	// Invalid names a subset whose maxReplicas cannot be read; the status is then left as it is.
	Invalid string
}

// Status derives the status from the pods: per subset, its active pods (replicas), the room left
// (missingReplicas, Unlimited without maxReplicas), the webhook's creatingPods and deletingPods entries
// not yet reflected by the pods and not expired, and for the Adaptive strategy its Schedulable condition.
func Status(in Input) Outcome {
	out := Outcome{Status: kruiseappsv1alpha1.WorkloadSpreadStatus{ObservedGeneration: in.WS.Generation}}
	bySubset := BySubset(in.WS, in.Pods)
	for i := range in.WS.Spec.Subsets {
		subset := &in.WS.Spec.Subsets[i]
		max, ok := MaxReplicas(subset, in.WorkloadReplicas)
		if !ok {
			return Outcome{Status: *in.WS.Status.DeepCopy(), Invalid: subset.Name}
		}
		old := subsetStatus(&in.WS.Status, subset.Name)
		s := out.subset(in, subset.Name, max, bySubset[subset.Name], old)
		out.adapt(in, i, &s, bySubset[subset.Name], old)
		out.Status.SubsetStatuses = append(out.Status.SubsetStatuses, s)
	}
	return out
}

// BySubset groups the pods matched to ws by the name of their subset; pods of a subset ws no longer has,
// or of another WorkloadSpread, are left out.
func BySubset(ws *kruiseappsv1alpha1.WorkloadSpread, pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for i := range ws.Spec.Subsets {
		out[ws.Spec.Subsets[i].Name] = nil
	}
	for _, pod := range pods {
		m, ok := MatchedOf(pod)
		if _, known := out[m.Subset]; ok && known && m.Name == ws.Name {
			out[m.Subset] = append(out[m.Subset], pod)
		}
	}
	return out
}

// subset is one subset's status.
func (o *Outcome) subset(in Input, name string, max int32, pods []*corev1.Pod,
	old *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus) kruiseappsv1alpha1.WorkloadSpreadSubsetStatus {
	s := kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{Name: name, MissingReplicas: max}
	if old == nil {
		old = &kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{}
	}
	creating := make(map[string]metav1.Time, len(old.CreatingPods))
	for k, v := range old.CreatingPods {
		creating[k] = v
	}
	for _, pod := range pods {
		m, _ := MatchedOf(pod)
		delete(creating, m.key(pod))
		if !Active(pod) {
			continue
		}
		s.Replicas++
		take(&s)
		if at, ok := old.DeletingPods[pod.Name]; ok {
			o.keepDeleting(in, &s, max, pod.Name, at)
		}
	}
	for key, at := range creating {
		o.keepCreating(in, &s, key, at)
	}
	return s
}

// keepDeleting keeps a deletion entry of a pod still running until its deadline, counting its room free.
func (o *Outcome) keepDeleting(in Input, s *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus, max int32, pod string, at metav1.Time) {
	left := at.Add(DeletingDeadline).Sub(in.Now)
	if left <= 0 {
		o.Expired = append(o.Expired, Expired{Subset: s.Name, Pod: pod})
		return
	}
	if s.DeletingPods == nil {
		s.DeletingPods = map[string]metav1.Time{}
	}
	s.DeletingPods[pod] = at
	if s.MissingReplicas >= 0 && s.MissingReplicas < max {
		s.MissingReplicas++
	}
	o.requeue(left)
}

// keepCreating keeps a creation entry of a pod not seen yet until its deadline, counting its room taken.
func (o *Outcome) keepCreating(in Input, s *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus, key string, at metav1.Time) {
	left := at.Add(CreatingDeadline).Sub(in.Now)
	if left <= 0 {
		o.Expired = append(o.Expired, Expired{Subset: s.Name, Pod: key, Creating: true})
		return
	}
	if s.CreatingPods == nil {
		s.CreatingPods = map[string]metav1.Time{}
	}
	s.CreatingPods[key] = at
	take(s)
	o.requeue(left)
}

// take counts one replica of a limited subset's room as taken.
func take(s *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus) {
	if s.MissingReplicas > 0 {
		s.MissingReplicas--
	}
}

func (o *Outcome) requeue(after time.Duration) {
	if o.RequeueAfter == 0 || after < o.RequeueAfter {
		o.RequeueAfter = after
	}
}

// Active reports whether the pod counts as a replica: neither finished nor being deleted.
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}
