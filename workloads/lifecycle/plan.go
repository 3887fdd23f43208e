package lifecycle

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// Intent is what the workload wants to do with a pod.
type Intent string

const (
	// IntentCreate: the pod is being built. It starts PreparingNormal; Proceed is true.
	IntentCreate Intent = "Create"
	// IntentSettle: nothing is asked of the pod (call it for every pod on every pass): PreparingNormal →
	// Normal once the preNormal hook is absent or all its handlers are present, Updated → Normal once the
	// inPlaceUpdate hook is absent or all its handlers are present again. Proceed is false.
	IntentSettle Intent = "Settle"
	// IntentUpdate: the workload wants to update the pod in place. PreparingNormal, Normal, Updated (and an
	// empty or unknown state) → PreparingUpdate while any inPlaceUpdate handler is present, else Updating;
	// PreparingUpdate → Updating once no handler is left; Updating stays. Proceed says the in-place update
	// may be applied now, together with the Updating label. A PreparingDelete pod is not updated.
	IntentUpdate Intent = "Update"
	// IntentUpdateFinished: the pod runs the target revision (its in-place update completed, or it reached
	// PreparingUpdate and was rolled back to the revision it runs). Updating and PreparingUpdate → Updated if
	// the inPlaceUpdate hook is defined and not all its handlers are present, else Normal; otherwise as
	// IntentSettle. Proceed is false.
	IntentUpdateFinished Intent = "UpdateFinished"
	// IntentDelete: the workload wants to delete the pod. Any state → PreparingDelete while any preDelete
	// handler is present; otherwise Proceed says delete now.
	IntentDelete Intent = "Delete"
	// IntentCancelDelete: the workload keeps a pod it had started to delete (e.g. it scales up again):
	// PreparingDelete → PreparingNormal, refused when any hook marks pods not ready, since the pod may
	// already be out of traffic and its operator mid-way. Proceed says the pod is kept.
	IntentCancelDelete Intent = "CancelDelete"
)

// Decision is what the caller does with the pod.
type Decision struct {
	// State is the state the pod must be in; the current one when nothing changes.
	State pub.LifecycleStateType
	// Proceed says the operation asked for may be carried out now (see each Intent).
	Proceed bool
	// NotReady lists the Lifecycle holder keys (PreUpdateHookKey, PreDeleteHookKey) the pod's KruisePodReady
	// condition must hold in State; the other Lifecycle keys must be released. ApplyReadiness does both.
	NotReady []string
}

// hooks are the workload's hooks; nil when not defined.
type hooks struct {
	preNormal, inPlaceUpdate, preDelete *pub.LifecycleHook
}

func hooksOf(lc *pub.Lifecycle) hooks {
	if lc == nil {
		return hooks{}
	}
	return hooks{preNormal: lc.PreNormal, inPlaceUpdate: lc.InPlaceUpdate, preDelete: lc.PreDelete}
}

// Plan decides the pod's next state under the workload's hooks lc (nil: none) for the intent. It never
// fails: an empty or unknown state counts as Normal for updates and deletes and is otherwise left as is.
func Plan(lc *pub.Lifecycle, pod *corev1.Pod, intent Intent) Decision {
	if pod == nil {
		return Decision{}
	}
	h := hooksOf(lc)
	state, proceed := h.transition(pod, intent)
	return Decision{State: state, Proceed: proceed, NotReady: h.notReadyKeys(state)}
}

func (h hooks) transition(pod *corev1.Pod, intent Intent) (pub.LifecycleStateType, bool) {
	cur := State(pod)
	switch intent {
	case IntentCreate:
		return pub.LifecycleStatePreparingNormal, true
	case IntentSettle:
		return h.settle(pod, cur), false
	case IntentUpdate:
		return h.update(pod, cur)
	case IntentUpdateFinished:
		return h.finish(pod, cur), false
	case IntentDelete:
		return h.remove(pod, cur)
	case IntentCancelDelete:
		return h.cancelDelete(cur)
	default:
		return cur, false
	}
}

func (h hooks) settle(pod *corev1.Pod, cur pub.LifecycleStateType) pub.LifecycleStateType {
	switch {
	case cur == pub.LifecycleStatePreparingNormal && satisfied(h.preNormal, pod):
		return pub.LifecycleStateNormal
	case cur == pub.LifecycleStateUpdated && satisfied(h.inPlaceUpdate, pod):
		return pub.LifecycleStateNormal
	default:
		return cur
	}
}

// satisfied: the hook is absent or all its handlers are present.
func satisfied(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	return hook == nil || AllHooked(hook, pod)
}

func (h hooks) update(pod *corev1.Pod, cur pub.LifecycleStateType) (pub.LifecycleStateType, bool) {
	switch {
	case cur == pub.LifecycleStatePreparingDelete:
		return cur, false
	case cur == pub.LifecycleStateUpdating:
		return cur, true
	case IsHooked(h.inPlaceUpdate, pod):
		return pub.LifecycleStatePreparingUpdate, false
	default:
		return pub.LifecycleStateUpdating, true
	}
}

func (h hooks) finish(pod *corev1.Pod, cur pub.LifecycleStateType) pub.LifecycleStateType {
	if cur != pub.LifecycleStateUpdating && cur != pub.LifecycleStatePreparingUpdate {
		return h.settle(pod, cur)
	}
	if satisfied(h.inPlaceUpdate, pod) {
		return pub.LifecycleStateNormal
	}
	return pub.LifecycleStateUpdated
}

func (h hooks) remove(pod *corev1.Pod, cur pub.LifecycleStateType) (pub.LifecycleStateType, bool) {
	if IsHooked(h.preDelete, pod) {
		return pub.LifecycleStatePreparingDelete, false
	}
	return cur, true
}

func (h hooks) cancelDelete(cur pub.LifecycleStateType) (pub.LifecycleStateType, bool) {
	switch {
	case cur != pub.LifecycleStatePreparingDelete:
		return cur, true
	case marksNotReady(h.preDelete) || marksNotReady(h.inPlaceUpdate):
		return cur, false
	default:
		return pub.LifecycleStatePreparingNormal, true
	}
}

func marksNotReady(hook *pub.LifecycleHook) bool {
	return hook != nil && hook.MarkPodNotReady
}
