package lifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

const (
	preparingNormal = pub.LifecycleStatePreparingNormal
	normal          = pub.LifecycleStateNormal
	preparingUpdate = pub.LifecycleStatePreparingUpdate
	updating        = pub.LifecycleStateUpdating
	updated         = pub.LifecycleStateUpdated
	preparingDelete = pub.LifecycleStatePreparingDelete
)

// labelHooks uses one label per hook: n=true (preNormal), u=true (inPlaceUpdate), d=true (preDelete).
func labelHooks(markNotReady bool) *pub.Lifecycle {
	return &pub.Lifecycle{
		PreNormal:     &pub.LifecycleHook{LabelsHandler: map[string]string{"n": "true"}},
		InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"u": "true"}, MarkPodNotReady: markNotReady},
		PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{"d": "true"}, MarkPodNotReady: markNotReady},
	}
}

func inState(state pub.LifecycleStateType, labels ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
	if state != "" {
		pod.Labels[pub.LifecycleStateKey] = string(state)
	}
	for i := 0; i+1 < len(labels); i += 2 {
		pod.Labels[labels[i]] = labels[i+1]
	}
	return pod
}

func TestPlan(t *testing.T) {
	marked, unmarked := labelHooks(true), labelHooks(false)
	upd, del := []string{PreUpdateHookKey}, []string{PreDeleteHookKey}
	cases := []struct {
		name   string
		lc     *pub.Lifecycle
		pod    *corev1.Pod
		intent Intent
		want   Decision
	}{
		{name: "nil pod", lc: marked, intent: IntentUpdate},
		{name: "unknown intent changes nothing", lc: marked, pod: inState(normal, "u", "true"), intent: "Reboot", want: Decision{State: normal}},

		{name: "create", lc: marked, pod: inState(""), intent: IntentCreate, want: Decision{State: preparingNormal, Proceed: true}},

		{name: "settle: preNormal handler missing", lc: marked, pod: inState(preparingNormal), intent: IntentSettle, want: Decision{State: preparingNormal}},
		{name: "settle: preNormal handlers all present", lc: marked, pod: inState(preparingNormal, "n", "true"), intent: IntentSettle, want: Decision{State: normal}},
		{name: "settle: no preNormal hook", lc: nil, pod: inState(preparingNormal), intent: IntentSettle, want: Decision{State: normal}},
		{name: "settle: Updated waits for the hook", lc: marked, pod: inState(updated, "u", "false"), intent: IntentSettle, want: Decision{State: updated}},
		{name: "settle: Updated re-hooked", lc: marked, pod: inState(updated, "u", "true"), intent: IntentSettle, want: Decision{State: normal}},
		{name: "settle: Updated without an inPlaceUpdate hook", lc: nil, pod: inState(updated), intent: IntentSettle, want: Decision{State: normal}},
		{name: "settle: a legacy pod keeps no state", lc: marked, pod: inState(""), intent: IntentSettle, want: Decision{State: ""}},
		{name: "settle: PreparingUpdate stays held", lc: marked, pod: inState(preparingUpdate, "u", "true"), intent: IntentSettle, want: Decision{State: preparingUpdate, NotReady: upd}},
		{name: "settle: PreparingDelete stays held", lc: marked, pod: inState(preparingDelete), intent: IntentSettle, want: Decision{State: preparingDelete, NotReady: del}},

		{name: "update: hooked pod prepares", lc: marked, pod: inState(normal, "u", "true"), intent: IntentUpdate, want: Decision{State: preparingUpdate, NotReady: upd}},
		{name: "update: unhooked pod updates at once", lc: marked, pod: inState(normal, "u", "false"), intent: IntentUpdate, want: Decision{State: updating, Proceed: true, NotReady: upd}},
		{name: "update: without markPodNotReady nothing is held", lc: unmarked, pod: inState(normal, "u", "true"), intent: IntentUpdate, want: Decision{State: preparingUpdate}},
		{name: "update: no hooks", lc: nil, pod: inState(normal), intent: IntentUpdate, want: Decision{State: updating, Proceed: true}},
		{name: "update: a legacy pod counts as Normal", lc: marked, pod: inState("", "u", "true"), intent: IntentUpdate, want: Decision{State: preparingUpdate, NotReady: upd}},
		{name: "update: an unknown state counts as Normal", lc: unmarked, pod: inState("Bogus"), intent: IntentUpdate, want: Decision{State: updating, Proceed: true}},
		{name: "update: PreparingNormal pod", lc: unmarked, pod: inState(preparingNormal, "u", "true"), intent: IntentUpdate, want: Decision{State: preparingUpdate}},
		{name: "update: PreparingUpdate still hooked", lc: marked, pod: inState(preparingUpdate, "u", "true"), intent: IntentUpdate, want: Decision{State: preparingUpdate, NotReady: upd}},
		{name: "update: PreparingUpdate released", lc: marked, pod: inState(preparingUpdate, "u", "false"), intent: IntentUpdate, want: Decision{State: updating, Proceed: true, NotReady: upd}},
		{name: "update: Updating goes on", lc: marked, pod: inState(updating, "u", "true"), intent: IntentUpdate, want: Decision{State: updating, Proceed: true, NotReady: upd}},
		{name: "update: Updated pod not re-hooked yet", lc: marked, pod: inState(updated, "u", "false"), intent: IntentUpdate, want: Decision{State: updating, Proceed: true, NotReady: upd}},
		{name: "update: Updated pod re-hooked", lc: marked, pod: inState(updated, "u", "true"), intent: IntentUpdate, want: Decision{State: preparingUpdate, NotReady: upd}},
		{name: "update: a PreparingDelete pod is not updated", lc: marked, pod: inState(preparingDelete), intent: IntentUpdate, want: Decision{State: preparingDelete, NotReady: del}},

		{name: "finished: hook not re-added", lc: marked, pod: inState(updating, "u", "false"), intent: IntentUpdateFinished, want: Decision{State: updated}},
		{name: "finished: hook already re-added", lc: marked, pod: inState(updating, "u", "true"), intent: IntentUpdateFinished, want: Decision{State: normal}},
		{name: "finished: no inPlaceUpdate hook", lc: &pub.Lifecycle{}, pod: inState(updating), intent: IntentUpdateFinished, want: Decision{State: normal}},
		{name: "finished: a hook without handlers", lc: &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{MarkPodNotReady: true}}, pod: inState(updating), intent: IntentUpdateFinished, want: Decision{State: normal}},
		{name: "finished: rolled back before the operator acted", lc: marked, pod: inState(preparingUpdate, "u", "true"), intent: IntentUpdateFinished, want: Decision{State: normal}},
		{name: "finished: rolled back after the operator acted", lc: marked, pod: inState(preparingUpdate, "u", "false"), intent: IntentUpdateFinished, want: Decision{State: updated}},
		{name: "finished: Updated re-hooked", lc: marked, pod: inState(updated, "u", "true"), intent: IntentUpdateFinished, want: Decision{State: normal}},
		{name: "finished: PreparingNormal settles too", lc: marked, pod: inState(preparingNormal, "n", "true"), intent: IntentUpdateFinished, want: Decision{State: normal}},
		{name: "finished: PreparingDelete stays", lc: marked, pod: inState(preparingDelete), intent: IntentUpdateFinished, want: Decision{State: preparingDelete, NotReady: del}},

		{name: "delete: hooked pod prepares", lc: marked, pod: inState(normal, "d", "true"), intent: IntentDelete, want: Decision{State: preparingDelete, NotReady: del}},
		{name: "delete: unhooked pod goes at once", lc: marked, pod: inState(normal), intent: IntentDelete, want: Decision{State: normal, Proceed: true}},
		{name: "delete: no hooks", lc: nil, pod: inState(updated), intent: IntentDelete, want: Decision{State: updated, Proceed: true}},
		{name: "delete: PreparingDelete still hooked", lc: marked, pod: inState(preparingDelete, "d", "true"), intent: IntentDelete, want: Decision{State: preparingDelete, NotReady: del}},
		{name: "delete: PreparingDelete released, still held until gone", lc: marked, pod: inState(preparingDelete, "d", "fasle"), intent: IntentDelete, want: Decision{State: preparingDelete, Proceed: true, NotReady: del}},
		{name: "delete: a pod mid-update swaps its holder", lc: marked, pod: inState(updating, "d", "true"), intent: IntentDelete, want: Decision{State: preparingDelete, NotReady: del}},

		{name: "cancel delete: allowed without markPodNotReady", lc: unmarked, pod: inState(preparingDelete, "d", "true"), intent: IntentCancelDelete, want: Decision{State: preparingNormal, Proceed: true}},
		{name: "cancel delete: refused with markPodNotReady", lc: marked, pod: inState(preparingDelete, "d", "true"), intent: IntentCancelDelete, want: Decision{State: preparingDelete, NotReady: del}},
		{name: "cancel delete: nothing to cancel", lc: marked, pod: inState(normal), intent: IntentCancelDelete, want: Decision{State: normal, Proceed: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Plan(tc.lc, tc.pod, tc.intent)); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}
