package sidecarset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// pinned follows upstream's choice of the revision a new pod gets: the pinned one with policy Always or while
// paused; with Partial, pods the update selector leaves out, and of the rest a percentage partition's share.
func TestPinned(t *testing.T) {
	canary := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"canary": "true"}}}
	plain := &corev1.Pod{}
	low, high := func() float64 { return 0.1 }, func() float64 { return 0.9 }
	for _, tc := range []struct {
		name   string
		set    func(*kruiseappsv1alpha1.SidecarSet)
		pod    *corev1.Pod
		draw   func() float64
		pinned bool
	}{
		{"no revision named", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Revision = nil }, plain, low, false},
		{"Always", policy(kruiseappsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy), canary, high, true},
		{"Partial, paused", func(s *kruiseappsv1alpha1.SidecarSet) {
			policy(kruiseappsv1alpha1.PartialSidecarSetInjectRevisionPolicy)(s)
			s.Spec.UpdateStrategy.Paused = true
		}, canary, high, true},
		{"Partial, a pod the selector leaves out", partial(selector, nil), plain, high, true},
		{"Partial, a selected pod, no partition", partial(selector, nil), canary, low, false},
		{"Partial, a selected pod, a number partition", partial(selector, ptr.To(intstr.FromInt32(5))), canary, low, false},
		{"Partial, a selected pod drawn within 30%", partial(selector, ptr.To(intstr.FromString("30%"))), canary, low, true},
		{"Partial, a selected pod drawn beyond 30%", partial(selector, ptr.To(intstr.FromString("30%"))), canary, high, false},
		{"Partial without a selector, drawn within 30%", partial(nil, ptr.To(intstr.FromString("30%"))), plain, low, true},
		{"Partial without a selector or partition", partial(nil, nil), plain, low, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := &kruiseappsv1alpha1.SidecarSet{Spec: kruiseappsv1alpha1.SidecarSetSpec{InjectionStrategy: kruiseappsv1alpha1.SidecarSetInjectionStrategy{
				Revision: &kruiseappsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("scs-abc")}}}}
			tc.set(set)
			if got := pinned(set, tc.pod, tc.draw); got != tc.pinned {
				t.Errorf("pinned %v, want %v", got, tc.pinned)
			}
		})
	}
}

var selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}

func policy(p kruiseappsv1alpha1.SidecarSetInjectRevisionPolicy) func(*kruiseappsv1alpha1.SidecarSet) {
	return func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Revision.Policy = p }
}

func partial(sel *metav1.LabelSelector, partition *intstr.IntOrString) func(*kruiseappsv1alpha1.SidecarSet) {
	return func(s *kruiseappsv1alpha1.SidecarSet) {
		policy(kruiseappsv1alpha1.PartialSidecarSetInjectRevisionPolicy)(s)
		s.Spec.UpdateStrategy.Selector, s.Spec.UpdateStrategy.Partition = sel, partition
	}
}
