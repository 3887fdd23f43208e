package lifecycle

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// gatedPod has the KruisePodReady gate and, unless status is empty, the condition with that status and message.
func gatedPod(status corev1.ConditionStatus, message string) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}}}
	if status != "" {
		pod.Status.Conditions = []corev1.PodCondition{{Type: pub.KruisePodReadyConditionType, Status: status, Message: message}}
	}
	return pod
}

// TestReadinessChangesAgreesWithApply: the check that spares a write must answer as ApplyReadiness would on
// a copy, for every pod and decision.
func TestReadinessChangesAgreesWithApply(t *testing.T) {
	holds := func(keys ...string) string {
		s := ""
		for i, k := range keys {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`{"userAgent":%q,"key":%q}`, NotReadyUserAgent, k)
		}
		return "[" + s + "]"
	}
	pods := map[string]*corev1.Pod{
		"no gate":                     {},
		"gate, no condition":          gatedPod("", ""),
		"condition True, no holder":   gatedPod(corev1.ConditionTrue, ""),
		"held for preDelete":          gatedPod(corev1.ConditionFalse, holds(PreDeleteHookKey)),
		"held for both":               gatedPod(corev1.ConditionFalse, holds(PreDeleteHookKey, PreUpdateHookKey)),
		"preDelete holder but True":   gatedPod(corev1.ConditionTrue, holds(PreDeleteHookKey)),
		"held by another component":   gatedPod(corev1.ConditionFalse, `[{"userAgent":"ContainerRecreate","key":"x"}]`),
		"message that is not holders": gatedPod(corev1.ConditionFalse, "not json"),
		"no gate, condition with one": {Status: corev1.PodStatus{Conditions: gatedPod(corev1.ConditionFalse, holds(PreUpdateHookKey)).Status.Conditions}},
	}
	decisions := [][]string{nil, {PreDeleteHookKey}, {PreUpdateHookKey}, {PreDeleteHookKey, PreUpdateHookKey}}
	answers := map[bool]int{}
	for name, pod := range pods {
		for _, notReady := range decisions {
			d := Decision{NotReady: notReady}
			before := pod.DeepCopy()
			got := ReadinessChanges(pod, d)
			answers[got]++
			want := ApplyReadiness(pod.DeepCopy(), d, time.Now())
			if got != want {
				t.Errorf("%s, holding %v: ReadinessChanges = %v, ApplyReadiness changed = %v", name, notReady, got, want)
			}
			if fmt.Sprint(before) != fmt.Sprint(pod) {
				t.Errorf("%s, holding %v: ReadinessChanges changed the pod", name, notReady)
			}
		}
	}
	if answers[true] == 0 || answers[false] == 0 {
		t.Errorf("answers %v: the cases must include changes and no changes", answers)
	}
}
