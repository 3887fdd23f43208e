// Package lifecycle is the pure state machine of the lifecycle hooks workloads (CloneSet, Advanced
// StatefulSet, Advanced DaemonSet) honour around a pod's creation, in-place update and deletion.
//
// A pod's state is its lifecycle.apps.kruise.io/state label:
//
//	created         → PreparingNormal → Normal            (once the preNormal hook is absent or ALL its handlers are present)
//	update in place → Normal → PreparingUpdate → Updating (PreparingUpdate only while ANY inPlaceUpdate handler is present)
//	update finished → Updating → Updated → Normal         (Updated only while the inPlaceUpdate hook is not ALL present again)
//	delete          → PreparingDelete → deleted           (PreparingDelete only while ANY preDelete handler is present)
//
// A handler is a label with an exact value or a finalizer; an operator holds a pod in a Preparing state by
// keeping a handler on it and releases it by flipping the label or removing the finalizer.
//
// Plan decides; the caller writes. When a hook sets markPodNotReady, the pod is held not ready through the
// KruisePodReady condition (userAgent Lifecycle) while in PreparingUpdate/Updating or PreparingDelete:
// write the status (ApplyReadiness) before the state label (SetState), so a hook's operator sees the pod out
// of its endpoints before it sees the state it acts on.
package lifecycle

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// State is the pod's lifecycle state; empty when the label is missing.
func State(pod *corev1.Pod) pub.LifecycleStateType {
	if pod == nil {
		return ""
	}
	return pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
}

// SetState sets the state label and stamps the lifecycle timestamp annotation (RFC3339), only when the state
// changes. An empty state removes the label.
func SetState(pod *corev1.Pod, state pub.LifecycleStateType, now time.Time) bool {
	if pod == nil || State(pod) == state {
		return false
	}
	if state == "" {
		delete(pod.Labels, pub.LifecycleStateKey)
	} else {
		pod.Labels = setKey(pod.Labels, pub.LifecycleStateKey, string(state))
	}
	pod.Annotations = setKey(pod.Annotations, pub.LifecycleTimestampKey, now.UTC().Format(time.RFC3339))
	return true
}

func setKey(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

// IsHooked reports whether ANY of the hook's handlers is on the pod: a label with exactly the handler's
// value, or a finalizer. A nil hook hooks nothing.
func IsHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil || pod == nil {
		return false
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; ok && got == v {
			return true
		}
	}
	return slices.ContainsFunc(hook.FinalizersHandler, func(f string) bool { return slices.Contains(pod.Finalizers, f) })
}

// AllHooked reports whether ALL of the hook's handlers are on the pod (true for a hook without handlers).
// A nil hook is not hooked.
func AllHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil || pod == nil {
		return false
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			return false
		}
	}
	return true
}
