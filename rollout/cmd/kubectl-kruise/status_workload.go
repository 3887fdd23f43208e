package main

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// workloadProgress is where a workload's update stands, with the line kubectl's status viewers print.
type workloadProgress struct {
	Outcome outcome
	Message string
}

func progressing(format string, args ...any) workloadProgress {
	return workloadProgress{outcomeProgressing, fmt.Sprintf(format, args...)}
}

func completed(format string, args ...any) workloadProgress {
	return workloadProgress{outcomeDone, fmt.Sprintf(format, args...)}
}

// workloadStatus judges one read of a workload. Unfinished updates of a paused workload are reported as
// paused, so a CI job does not wait for an update that nobody will resume.
func workloadStatus(k *workloadKind, obj *unstructured.Unstructured) (workloadProgress, error) {
	var p workloadProgress
	var err error
	switch k {
	case kindDeployment:
		p, err = decodeAnd(obj, deploymentProgress)
	case kindStatefulSet:
		p, err = decodeAnd(obj, statefulSetProgress)
	case kindDaemonSet:
		p, err = decodeAnd(obj, daemonSetProgress)
	case kindCloneSet:
		p, err = decodeAnd(obj, cloneSetProgress)
	case kindAdvancedStatefulSet:
		p, err = decodeAnd(obj, advancedStatefulSetProgress)
	default:
		return p, fmt.Errorf("no status viewer has been implemented for %s", k.GroupResource())
	}
	if err != nil || p.Outcome == outcomeDone || k.PausePath == nil {
		return p, err
	}
	if paused, _, _ := unstructured.NestedBool(obj.Object, k.PausePath...); paused {
		p = workloadProgress{outcomePaused, p.Message + " (the update is paused)"}
	}
	return p, nil
}

// decodeAnd decodes obj into its typed form and judges it with fn.
func decodeAnd[T any](obj *unstructured.Unstructured, fn func(*T) (workloadProgress, error)) (workloadProgress, error) {
	typed := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return workloadProgress{}, fmt.Errorf("decoding %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return fn(typed)
}

// replicasOf is spec.replicas with the API default of 1.
func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// deploymentProgress follows kubectl's Deployment status viewer.
func deploymentProgress(d *appsv1.Deployment) (workloadProgress, error) {
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return progressing("Waiting for deployment spec update to be observed..."), nil
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return workloadProgress{outcomeFailed, fmt.Sprintf("deployment %q exceeded its progress deadline", d.Name)}, nil
		}
	}
	replicas := replicasOf(d.Spec.Replicas)
	switch {
	case st.UpdatedReplicas < replicas:
		return progressing("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, st.UpdatedReplicas, replicas), nil
	case st.Replicas > st.UpdatedReplicas:
		return progressing("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, st.Replicas-st.UpdatedReplicas), nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return progressing("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, st.AvailableReplicas, st.UpdatedReplicas), nil
	}
	return completed("deployment %q successfully rolled out", d.Name), nil
}

// statefulSetProgress follows kubectl's StatefulSet status viewer.
func statefulSetProgress(s *appsv1.StatefulSet) (workloadProgress, error) {
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return workloadProgress{}, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
	}
	var partition int32
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = *ru.Partition
	}
	return setProgress(setState{
		Kind: "statefulset", Generation: s.Generation, ObservedGeneration: s.Status.ObservedGeneration,
		Replicas: replicasOf(s.Spec.Replicas), Partition: partition, WaitReady: true,
		Ready: s.Status.ReadyReplicas, Updated: s.Status.UpdatedReplicas, Available: s.Status.AvailableReplicas,
		UpdateRevision: s.Status.UpdateRevision, CurrentRevision: s.Status.CurrentRevision,
	}), nil
}

// daemonSetProgress follows kubectl's DaemonSet status viewer.
func daemonSetProgress(d *appsv1.DaemonSet) (workloadProgress, error) {
	if d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return workloadProgress{}, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
	}
	st := d.Status
	switch {
	case d.Generation > st.ObservedGeneration:
		return progressing("Waiting for daemon set spec update to be observed..."), nil
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		return progressing("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", d.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled), nil
	case st.NumberAvailable < st.DesiredNumberScheduled:
		return progressing("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", d.Name, st.NumberAvailable, st.DesiredNumberScheduled), nil
	}
	return completed("daemon set %q successfully rolled out", d.Name), nil
}

// cloneSetProgress follows upstream's CloneSet status viewer: an in-place update is done once
// replicas-partition pods are updated; a recreating one also waits for every pod to be ready.
func cloneSetProgress(cs *kruiseappsv1alpha1.CloneSet) (workloadProgress, error) {
	us := cs.Spec.UpdateStrategy
	replicas := replicasOf(cs.Spec.Replicas)
	partition, err := scaledPartition(us.Partition, replicas)
	if err != nil {
		return workloadProgress{}, err
	}
	inPlace := us.Type == kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType ||
		us.Type == kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	return setProgress(setState{
		Kind: "CloneSet", Generation: cs.Generation, ObservedGeneration: cs.Status.ObservedGeneration,
		Replicas: replicas, Partition: partition, WaitReady: !inPlace,
		Ready: cs.Status.ReadyReplicas, Updated: cs.Status.UpdatedReplicas, Available: cs.Status.AvailableReplicas,
		UpdateRevision: cs.Status.UpdateRevision, CurrentRevision: cs.Status.UpdateRevision,
	}), nil
}

// scaledPartition is a number-or-percentage partition as a pod count, percentages rounded up.
func scaledPartition(p *intstr.IntOrString, replicas int32) (int32, error) {
	if p == nil {
		return 0, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(p, int(replicas), true)
	if err != nil {
		return 0, fmt.Errorf("spec.updateStrategy.partition: %w", err)
	}
	return int32(min(max(n, 0), int(replicas))), nil //nolint:gosec // bounded by replicas
}

// advancedStatefulSetProgress is the CloneSet rule with spec.updateStrategy.rollingUpdate.partition.
func advancedStatefulSetProgress(s *kruiseappsv1beta1.StatefulSet) (workloadProgress, error) {
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return workloadProgress{}, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
	}
	var partition int32
	inPlace := false
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		partition = min(max(ptrValue(ru.Partition), 0), replicasOf(s.Spec.Replicas))
		inPlace = ru.PodUpdatePolicy == kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType ||
			ru.PodUpdatePolicy == kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType
	}
	return setProgress(setState{
		Kind: "statefulset", Generation: s.Generation, ObservedGeneration: s.Status.ObservedGeneration,
		Replicas: replicasOf(s.Spec.Replicas), Partition: partition, WaitReady: !inPlace,
		Ready: s.Status.ReadyReplicas, Updated: s.Status.UpdatedReplicas, Available: s.Status.AvailableReplicas,
		UpdateRevision: s.Status.UpdateRevision, CurrentRevision: s.Status.CurrentRevision,
	}), nil
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// setState is what the StatefulSet-like viewers read from a workload.
type setState struct {
	Kind                            string
	Generation, ObservedGeneration  int64
	Replicas, Partition             int32
	Ready, Updated, Available       int32
	UpdateRevision, CurrentRevision string
	// WaitReady: every pod must be ready too (recreating updates); in-place updates only count updated pods.
	WaitReady bool
}

// setProgress judges a StatefulSet-like workload: the spec observed, replicas-partition pods updated,
// and (WaitReady) every pod ready.
func setProgress(s setState) workloadProgress {
	want := s.Replicas - s.Partition
	switch {
	case s.ObservedGeneration == 0 || s.Generation > s.ObservedGeneration:
		return progressing("Waiting for %s spec update to be observed...", s.Kind)
	case s.WaitReady && s.Ready < s.Replicas:
		return progressing("Waiting for %d pods to be ready...", s.Replicas-s.Ready)
	case s.Partition > 0 && s.Updated < want:
		return progressing("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...", s.Updated, want)
	case s.Partition > 0:
		return completed("partitioned roll out complete: %d new pods have been updated...", s.Updated)
	case s.Updated < want || s.UpdateRevision != s.CurrentRevision:
		return progressing("Waiting for %s rolling update to complete %d pods at revision %s...", s.Kind, s.Updated, s.UpdateRevision)
	}
	return completed("%s rolling update complete %d pods at revision %s...", s.Kind, s.Available, s.UpdateRevision)
}
