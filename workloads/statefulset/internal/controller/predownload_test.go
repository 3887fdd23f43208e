package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// What the image pre-download reads of a set, as upstream reads it.
func TestPreDownloadWorkload(t *testing.T) {
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-new"}}
	set := func(policy kruiseappsv1beta1.PodUpdateStrategyType, change func(*kruiseappsv1beta1.StatefulSet)) *kruiseappsv1beta1.StatefulSet {
		s := &kruiseappsv1beta1.StatefulSet{Spec: kruiseappsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](10),
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: policy, Partition: ptr.To[int32](5)}}},
			Status: kruiseappsv1beta1.StatefulSetStatus{UpdateRevision: "db-new", UpdatedReadyReplicas: 4}}
		if change != nil {
			change(s)
		}
		return s
	}
	cases := []struct {
		name         string
		set          *kruiseappsv1beta1.StatefulSet
		skip         bool
		updatedReady int32
	}{
		{name: "InPlaceIfPossible", set: set(kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, nil), updatedReady: 4},
		{name: "InPlaceOnly", set: set(kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType, nil), updatedReady: 4},
		{name: "ReCreate", set: set(kruiseappsv1beta1.RecreatePodUpdateStrategyType, nil), skip: true, updatedReady: 4},
		{name: "unset policy is ReCreate", set: set("", nil), skip: true, updatedReady: 4},
		{name: "OnDelete", set: set(kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		}), skip: true, updatedReady: 4},
		{name: "no rollingUpdate", set: set(kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = nil
		}), skip: true, updatedReady: 4},
		{name: "3 replicas", set: set(kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](3)
		}), skip: true, updatedReady: 4},
		{name: "partition 0 and maxUnavailable 100%: one batch", set: set(kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = nil
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		}), skip: true, updatedReady: 4},
		{name: "updated ready pods of an older update revision count as none", set: set(kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, func(s *kruiseappsv1beta1.StatefulSet) {
			s.Status.UpdateRevision = "db-older"
		})},
	}
	r := &Reconciler{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := r.preDownloadWorkload(tc.set, update)
			if w.Skip != tc.skip || w.AnyChange || w.Replicas != *tc.set.Spec.Replicas || w.UpdatedReady != tc.updatedReady ||
				w.Owner != tc.set || w.Kind.Kind != "StatefulSet" {
				t.Errorf("workload %+v; want skip %v, %d updated ready", w, tc.skip, tc.updatedReady)
			}
		})
	}
}
