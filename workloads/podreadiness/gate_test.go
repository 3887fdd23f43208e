package podreadiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func ownedBy(apiVersion string, controller bool) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{
		APIVersion: apiVersion, Kind: "Owner", Name: "o", UID: "u", Controller: ptr.To(controller),
	}}}}
}

func TestInjectGate(t *testing.T) {
	otherGate := corev1.PodReadinessGate{ConditionType: "example.com/other"}
	kruiseGate := corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType}
	withGates := func(p *corev1.Pod, gates ...corev1.PodReadinessGate) *corev1.Pod {
		p.Spec.ReadinessGates = gates
		return p
	}
	cases := []struct {
		name        string
		pod         *corev1.Pod
		wantChanged bool
		wantGates   []corev1.PodReadinessGate
	}{
		{name: "nil pod"},
		{name: "no owner", pod: &corev1.Pod{}},
		{name: "CloneSet", pod: ownedBy("apps.kruise.io/v1alpha1", true), wantChanged: true, wantGates: []corev1.PodReadinessGate{kruiseGate}},
		{name: "Advanced StatefulSet", pod: ownedBy("apps.kruise.io/v1beta1", true), wantChanged: true, wantGates: []corev1.PodReadinessGate{kruiseGate}},
		{
			name: "appended after other gates", pod: withGates(ownedBy("apps.kruise.io/v1alpha1", true), otherGate),
			wantChanged: true, wantGates: []corev1.PodReadinessGate{otherGate, kruiseGate},
		},
		{name: "already there", pod: withGates(ownedBy("apps.kruise.io/v1alpha1", true), kruiseGate), wantGates: []corev1.PodReadinessGate{kruiseGate}},
		{name: "not the controller", pod: ownedBy("apps.kruise.io/v1alpha1", false)},
		{name: "ReplicaSet", pod: ownedBy("apps/v1", true)},
		{name: "a look-alike group", pod: ownedBy("apps.kruise.io.example.com/v1", true)},
		{name: "malformed apiVersion", pod: ownedBy("apps.kruise.io/v1/extra", true)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := InjectGate(tc.pod); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if tc.pod == nil {
				return
			}
			if diff := cmp.Diff(tc.wantGates, tc.pod.Spec.ReadinessGates); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHasGate(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "a"}}}}
	if HasGate(pod) || HasGate(nil) {
		t.Error("HasGate sees a KruisePodReady gate the pod does not declare")
	}
	if !AddGate(pod) || AddGate(pod) || !HasGate(pod) {
		t.Error("AddGate is not idempotent")
	}
}

func TestInitCondition(t *testing.T) {
	deleting := gatedPod()
	deleting.DeletionTimestamp = &now
	cases := []struct {
		name        string
		pod         *corev1.Pod
		wantChanged bool
		want        []corev1.PodCondition
	}{
		{name: "nil pod"},
		{name: "no gate", pod: &corev1.Pod{}},
		{name: "being deleted", pod: deleting},
		{
			name: "gate without condition", pod: gatedPod(ready(corev1.ConditionFalse)), wantChanged: true,
			want: []corev1.PodCondition{ready(corev1.ConditionFalse), {Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		},
		{name: "a holder is kept", pod: gatedPod(heldSince(earlier, "["+lifecycleDelete+"]")), want: []corev1.PodCondition{heldSince(earlier, "["+lifecycleDelete+"]")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := InitCondition(tc.pod, now); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if tc.pod == nil {
				return
			}
			if diff := cmp.Diff(tc.want, tc.pod.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNeedsController(t *testing.T) {
	owners := &ownerKinds{kinds: map[schema.GroupKind]bool{}}
	owners.add([]schema.GroupKind{{Group: "apps.kruise.io", Kind: "Owner"}})
	gated := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
		return p
	}
	withCondition := gated(&corev1.Pod{})
	withCondition.Status.Conditions = []corev1.PodCondition{{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "no gate", pod: &corev1.Pod{}},
		{name: "condition already there", pod: withCondition},
		{name: "no controller", pod: gated(&corev1.Pod{}), want: true},
		{name: "controlled by a kind that initialises its own pods", pod: gated(ownedBy("apps.kruise.io/v1alpha1", true))},
		{name: "same kind in another version", pod: gated(ownedBy("apps.kruise.io/v1beta1", true))},
		{name: "owned, not controlled, by that kind", pod: gated(ownedBy("apps.kruise.io/v1alpha1", false)), want: true},
		{name: "controlled by another group's kind", pod: gated(ownedBy("example.com/v1", true)), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := owners.needsController(tc.pod); got != tc.want {
				t.Errorf("needsController = %v, want %v", got, tc.want)
			}
		})
	}
}
