package plan

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// upgradability reads the SidecarSetUpgradable condition's message: SidecarSet name to whether it can
// update the pod in place.
func upgradability(pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	if c := podcondition.Get(pod, kruiseappsv1alpha1.SidecarSetUpgradable); c != nil && c.Message != "" {
		_ = json.Unmarshal([]byte(c.Message), &out) // a message that is not ours reads as empty
	}
	return out
}

// conditionWrites are the pods whose SidecarSetUpgradable condition changes: the outdated pods the set
// cannot update, and those it marked so before and now can (or did, by re-creation).
func conditionWrites(in Input, notUpgradable []*corev1.Pod, now metav1.Time) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range in.Pods {
		if w := withUpgradable(pod, in.Set.Name, !slices.Contains(notUpgradable, pod), now); w != nil {
			out = append(out, w)
		}
	}
	return out
}

// withUpgradable returns a copy of pod whose SidecarSetUpgradable condition records whether set can
// update it, or nil when the condition already says so. The condition is True only while every
// SidecarSet in it can.
func withUpgradable(pod *corev1.Pod, set string, upgradable bool, now metav1.Time) *corev1.Pod {
	entries := upgradability(pod)
	if v, ok := entries[set]; (ok && v == upgradable) || (!ok && upgradable) {
		return nil // recorded already; a pod never marked needs no True
	}
	entries[set] = upgradable
	status, reason := corev1.ConditionTrue, kruiseappsv1alpha1.SidecarSetUpgradableReasonAllUpgradable
	for _, ok := range entries {
		if !ok {
			status, reason = corev1.ConditionFalse, kruiseappsv1alpha1.SidecarSetUpgradableReasonImmutableField
		}
	}
	msg, _ := json.Marshal(entries) // a map of bools always marshals
	out := pod.DeepCopy()
	podcondition.Set(out, kruiseappsv1alpha1.SidecarSetUpgradable, status, reason, now)
	podcondition.Get(out, kruiseappsv1alpha1.SidecarSetUpgradable).Message = string(msg)
	return out
}
