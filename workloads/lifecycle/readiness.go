package lifecycle

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// The KruisePodReady holders of hooks that mark pods not ready, as upstream names them.
const (
	NotReadyUserAgent = "Lifecycle"
	PreDeleteHookKey  = "preDeleteHook"
	PreUpdateHookKey  = "preUpdateHook"
)

// notReadyKeys are the holders the pod keeps in state: the inPlaceUpdate one from PreparingUpdate until the
// update is finished (released at Updated, so an operator waiting for a ready pod can re-add its hook), the
// preDelete one in PreparingDelete.
func (h hooks) notReadyKeys(state pub.LifecycleStateType) []string {
	var keys []string
	if state == pub.LifecycleStatePreparingDelete && marksNotReady(h.preDelete) {
		keys = append(keys, PreDeleteHookKey)
	}
	inUpdate := state == pub.LifecycleStatePreparingUpdate || state == pub.LifecycleStateUpdating
	if inUpdate && marksNotReady(h.inPlaceUpdate) {
		keys = append(keys, PreUpdateHookKey)
	}
	return keys
}

// ApplyReadiness adds the decision's Lifecycle holders to the pod's KruisePodReady condition and releases the
// others; it reports whether the pod's status changed. A pod without the KruisePodReady gate cannot be held
// (podreadiness.AddNotReady).
func ApplyReadiness(pod *corev1.Pod, d Decision, now time.Time) bool {
	at := metav1.NewTime(now)
	changed := false
	for _, key := range readinessKeys {
		if slices.Contains(d.NotReady, key) {
			changed = podreadiness.AddNotReady(pod, NotReadyUserAgent, key, at) || changed
		} else {
			changed = podreadiness.RemoveNotReady(pod, NotReadyUserAgent, key, at) || changed
		}
	}
	return changed
}

var readinessKeys = []string{PreDeleteHookKey, PreUpdateHookKey}

// ReadinessChanges reports whether ApplyReadiness would change the pod, leaving it as it is: the check a
// controller makes for each of its pods on every reconcile, so it copies nothing.
func ReadinessChanges(pod *corev1.Pod, d Decision) bool {
	for _, key := range readinessKeys {
		held := slices.Contains(d.NotReady, key)
		if held && podreadiness.AddsNotReady(pod, NotReadyUserAgent, key) ||
			!held && podreadiness.RemovesNotReady(pod, NotReadyUserAgent, key) {
			return true
		}
	}
	return false
}
