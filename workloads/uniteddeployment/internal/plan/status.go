package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// StatusInput is what the status of a UnitedDeployment after one reconcile derives from.
type StatusInput struct {
	UD   *kruiseappsv1alpha1.UnitedDeployment
	Plan Plan
	// Revision is the newest revision; CollisionCount the count it was named with.
	Revision       string
	CollisionCount *int32
	// Selector is spec.selector serialized, for the scale subresource.
	Selector string
	// Failure is why writing the plan failed, if it did.
	Failure error
	// Subsets are the subsets' schedulable conditions (adaptive strategy), by subset.
	Subsets map[string][]kruiseappsv1alpha1.UnitedDeploymentSubsetCondition
	Now     metav1.Time
}

// Status is the UnitedDeployment's status after a reconcile: upstream's counts over the subsets' workloads,
// the allocation and partitions of the plan, the revisions, upstream's four conditions and Flotilla's Ready,
// Reconciling and Stalled.
func Status(in StatusInput) kruiseappsv1alpha1.UnitedDeploymentStatus {
	old := in.UD.Status
	s := kruiseappsv1alpha1.UnitedDeploymentStatus{
		ObservedGeneration: in.UD.Generation, CollisionCount: in.CollisionCount, LabelSelector: in.Selector,
		SubsetReplicas: in.Plan.Replicas, CurrentRevision: old.CurrentRevision, Conditions: old.Conditions,
		UpdateStatus: &kruiseappsv1alpha1.UpdateStatus{UpdatedRevision: in.Revision, CurrentPartitions: in.Plan.Partitions},
	}
	if in.Failure != nil {
		// observedGeneration says the spec was acted on in full: not while writing it failed.
		s.ObservedGeneration = old.ObservedGeneration
	}
	for _, name := range in.Plan.SubsetNames() {
		s.SubsetStatuses = append(s.SubsetStatuses, subsetStatus(in, name, &s))
	}
	if s.CurrentRevision == "" || (s.CurrentRevision != in.Revision && s.UpdatedReadyReplicas >= s.Replicas) {
		// Upstream's rule: the newest revision becomes current once all pods run it, ready.
		s.CurrentRevision = in.Revision
	}
	if in.Failure == nil {
		s.Conditions = without(s.Conditions, kruiseappsv1alpha1.SubsetFailure)
	}
	for _, c := range append(conditions(in, &s), readiness(in, &s)...) {
		s.Conditions = setCondition(s.Conditions, c, in.Now)
	}
	s.Conditions = stalled(s.Conditions, "Error", in.Failure, in.Now)
	return s
}

func subsetStatus(in StatusInput, name string, s *kruiseappsv1alpha1.UnitedDeploymentStatus) kruiseappsv1alpha1.UnitedDeploymentSubsetStatus {
	st := kruiseappsv1alpha1.UnitedDeploymentSubsetStatus{Name: name, Replicas: in.Plan.Replicas[name],
		Partition: in.Plan.Partitions[name], Conditions: in.Subsets[name]}
	if obj := in.Plan.Kept[name]; obj != nil {
		_, _, c := in.Plan.Kind.read(obj)
		if in.Plan.Rolled[name] {
			c.Updated, c.UpdatedReady = 0, 0
		}
		st.ReadyReplicas = c.Ready
		s.Replicas += c.Replicas
		s.ReadyReplicas += c.Ready
		s.UpdatedReplicas += c.Updated
		s.UpdatedReadyReplicas += c.UpdatedReady
	}
	return st
}

// conditions: SubsetProvisioned (every subset has its workload, no other remains), SubsetUpdated (the
// writes of the plan succeeded), SubsetFailure (present only while writes fail), UnitedDeploymentUpdated
// (the current revision is the newest).
func conditions(in StatusInput, s *kruiseappsv1alpha1.UnitedDeploymentStatus) []kruiseappsv1alpha1.UnitedDeploymentCondition {
	provisioned := len(in.Plan.Create) == 0 && len(in.Plan.Delete) == 0
	updated := in.Failure == nil
	out := []kruiseappsv1alpha1.UnitedDeploymentCondition{
		condition(kruiseappsv1alpha1.SubsetProvisioned, provisioned, "Provisioned", "Provisioning",
			fmt.Sprintf("%d subsets to create, %d to delete", len(in.Plan.Create), len(in.Plan.Delete))),
		condition(kruiseappsv1alpha1.SubsetUpdated, updated, "Updated", "Error", errMessage(in.Failure)),
		condition(kruiseappsv1alpha1.UnitedDeploymentUpdated, s.CurrentRevision == in.Revision, "Updated", "Updating",
			fmt.Sprintf("%d of %d pods updated and ready", s.UpdatedReadyReplicas, s.Replicas)),
	}
	if in.Failure != nil {
		out = append(out, kruiseappsv1alpha1.UnitedDeploymentCondition{Type: kruiseappsv1alpha1.SubsetFailure,
			Status: corev1.ConditionTrue, Reason: "Error", Message: in.Failure.Error()})
	}
	return out
}

func errMessage(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// condition is True with reason yes and no message, or False with reason no and message.
func condition(t kruiseappsv1alpha1.UnitedDeploymentConditionType, ok bool, yes, no, message string) kruiseappsv1alpha1.UnitedDeploymentCondition {
	if ok {
		return kruiseappsv1alpha1.UnitedDeploymentCondition{Type: t, Status: corev1.ConditionTrue, Reason: yes}
	}
	return kruiseappsv1alpha1.UnitedDeploymentCondition{Type: t, Status: corev1.ConditionFalse, Reason: no, Message: message}
}

// setCondition puts c into conds, keeping the transition time while the status does not change.
func setCondition(conds []kruiseappsv1alpha1.UnitedDeploymentCondition, c kruiseappsv1alpha1.UnitedDeploymentCondition,
	now metav1.Time) []kruiseappsv1alpha1.UnitedDeploymentCondition {
	out := make([]kruiseappsv1alpha1.UnitedDeploymentCondition, 0, len(conds)+1)
	c.LastTransitionTime = now
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
		} else if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	return append(out, c)
}

// Invalid is status with SubsetFailure and Stalled conditions saying why the spec cannot be acted on; the rest is
// left as it was, observedGeneration included, since nothing of the new spec was acted on.
func Invalid(status kruiseappsv1alpha1.UnitedDeploymentStatus, err error, now metav1.Time) kruiseappsv1alpha1.UnitedDeploymentStatus {
	out := *status.DeepCopy()
	out.Conditions = setCondition(out.Conditions, kruiseappsv1alpha1.UnitedDeploymentCondition{Type: kruiseappsv1alpha1.SubsetFailure,
		Status: corev1.ConditionTrue, Reason: "InvalidSpec", Message: err.Error()}, now)
	out.Conditions = stalled(out.Conditions, "InvalidSpec", err, now)
	return out
}
