// Package podreadiness keeps the KruisePodReady pod condition: a readiness gate that several components
// (lifecycle hooks, container recreation, ...) can hold False at the same time, each under its own
// {userAgent, key} holder. The condition's message is the sorted JSON list of holders; the condition is
// False while the list is non-empty and True once it is empty.
//
// The helpers here are pure: they change the pod in memory and report whether anything changed; the caller
// writes the pod's status (a strategic merge patch with an optimistic lock keeps the kubelet's conditions).
package podreadiness

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// Holder is one component holding the pod not ready.
type Holder struct {
	UserAgent string `json:"userAgent"`
	Key       string `json:"key"`
}

// ReasonReadinessGatesNotReady is the kubelet's reason on a Ready condition held False by a readiness gate;
// it is reused when AddNotReady takes the pod out of its endpoints before the kubelet notices.
const ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"

// Holders returns the holders recorded in the pod's KruisePodReady condition, sorted; none when the pod has
// no such condition. A message that is not a holder list is an error.
func Holders(pod *corev1.Pod) ([]Holder, error) {
	return decodeHolders(Condition(pod))
}

// Condition returns the pod's KruisePodReady condition, or nil.
func Condition(pod *corev1.Pod) *corev1.PodCondition {
	return podcondition.Get(pod, pub.KruisePodReadyConditionType)
}

// AddNotReady records the holder on a pod that carries the KruisePodReady gate and sets the condition
// False; without the gate the condition would not affect readiness, so nothing changes. It also sets the
// pod's Ready condition False, so endpoints drop the pod at once rather than after the kubelet's next
// status sync. A message that is not a holder list is replaced: holding the pod is the safe side.
func AddNotReady(pod *corev1.Pod, userAgent, key string, now metav1.Time) bool {
	if !AddsNotReady(pod, userAgent, key) {
		return false
	}
	c := ensureCondition(pod)
	holders, _ := decodeHolders(c)
	holders = append(holders, Holder{UserAgent: userAgent, Key: key})
	setHolders(c, holders, now)
	podcondition.MarkNotReady(pod, ReasonReadinessGatesNotReady,
		fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but False", pub.KruisePodReadyConditionType), now)
	return true
}

// RemoveNotReady drops the holder; the condition turns True when no holder is left. Ready is left to the
// kubelet, which turns it True once every gate and container is ready. A message that is not a holder list
// is left alone (changed is false): whether it names this holder cannot be told, and releasing a pod
// someone else holds would be the unsafe side.
func RemoveNotReady(pod *corev1.Pod, userAgent, key string, now metav1.Time) bool {
	if !RemovesNotReady(pod, userAgent, key) {
		return false
	}
	c := Condition(pod)
	holders, _ := decodeHolders(c)
	holders = slices.DeleteFunc(holders, func(h Holder) bool { return h == Holder{userAgent, key} })
	setHolders(c, holders, now)
	return true
}

// AddsNotReady reports whether AddNotReady would change the pod, leaving it as it is.
func AddsNotReady(pod *corev1.Pod, userAgent, key string) bool {
	if !HasGate(pod) {
		return false
	}
	c := Condition(pod)
	holders, err := decodeHolders(c)
	return err != nil || c == nil || c.Status != corev1.ConditionFalse || !slices.Contains(holders, Holder{userAgent, key})
}

// RemovesNotReady reports whether RemoveNotReady would change the pod, leaving it as it is.
func RemovesNotReady(pod *corev1.Pod, userAgent, key string) bool {
	holders, err := decodeHolders(Condition(pod))
	return err == nil && slices.Contains(holders, Holder{userAgent, key})
}

// decodeHolders reads a condition's message; an absent condition or an empty message holds nothing.
func decodeHolders(c *corev1.PodCondition) ([]Holder, error) {
	if c == nil || strings.TrimSpace(c.Message) == "" {
		return nil, nil
	}
	var holders []Holder
	if err := json.Unmarshal([]byte(c.Message), &holders); err != nil {
		return nil, fmt.Errorf("reading the %s condition message: %w", c.Type, err)
	}
	sortHolders(holders)
	return slices.Compact(holders), nil
}

// setHolders writes the sorted list and the status it implies; the transition time moves only with the
// status, as for every other condition.
func setHolders(c *corev1.PodCondition, holders []Holder, now metav1.Time) {
	status, message := corev1.ConditionTrue, ""
	if len(holders) > 0 {
		status, message = corev1.ConditionFalse, encodeHolders(holders)
	}
	if c.Status != status {
		c.LastTransitionTime = now
	}
	c.Status, c.Message = status, message
}

func encodeHolders(holders []Holder) string {
	sortHolders(holders)
	raw, err := json.Marshal(slices.Compact(holders))
	if err != nil {
		// A slice of string pairs always encodes; keep the pod held rather than lose the holders.
		return "[]"
	}
	return string(raw)
}

func sortHolders(holders []Holder) {
	slices.SortFunc(holders, func(a, b Holder) int {
		if c := strings.Compare(a.UserAgent, b.UserAgent); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// ensureCondition returns the pod's KruisePodReady condition, appending an empty one if it is missing.
func ensureCondition(pod *corev1.Pod) *corev1.PodCondition {
	if c := Condition(pod); c != nil {
		return c
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: pub.KruisePodReadyConditionType})
	return &pod.Status.Conditions[len(pod.Status.Conditions)-1]
}
