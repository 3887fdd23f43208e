package nodeimagemanager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestPrune(t *testing.T) {
	ttl := func(s int32) *kruiseappsv1alpha1.ImageTagPullPolicy {
		return &kruiseappsv1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To(s)}
	}
	done := func(tag string, version int64, at time.Time) kruiseappsv1alpha1.ImageTagStatus {
		return kruiseappsv1alpha1.ImageTagStatus{Tag: tag, Version: version, Phase: kruiseappsv1alpha1.ImagePhaseSucceeded,
			CompletionTime: ptr.To(metav1.NewTime(at))}
	}
	ni := &kruiseappsv1alpha1.NodeImage{
		Spec: kruiseappsv1alpha1.NodeImageSpec{Images: map[string]kruiseappsv1alpha1.ImageSpec{
			"web": {Tags: []kruiseappsv1alpha1.ImageTagSpec{
				{Tag: "expired", PullPolicy: ttl(10)},
				{Tag: "waiting", PullPolicy: ttl(60)},
				{Tag: "no-ttl"},
				{Tag: "unfinished", PullPolicy: ttl(0)},
				// Finished only in an older version: the new version has not run yet.
				{Tag: "bumped", Version: 2, PullPolicy: ttl(0)},
			}},
			"gone": {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "1", PullPolicy: ttl(0)}}},
		}},
		Status: kruiseappsv1alpha1.NodeImageStatus{ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{
			"web":  {Tags: []kruiseappsv1alpha1.ImageTagStatus{done("expired", 0, at(0)), done("waiting", 0, at(0)), done("no-ttl", 0, at(0)), done("bumped", 1, at(0))}},
			"gone": {Tags: []kruiseappsv1alpha1.ImageTagStatus{done("1", 0, at(0))}},
		}},
	}
	spec, changed, next := Prune(ni, at(15))
	want := kruiseappsv1alpha1.NodeImageSpec{Images: map[string]kruiseappsv1alpha1.ImageSpec{"web": {Tags: ni.Spec.Images["web"].Tags[1:]}}}
	if diff := cmp.Diff(want, spec); diff != "" || !changed || next != 45*time.Second {
		t.Errorf("Prune: changed %v, next %v, spec (-want +got):\n%s", changed, next, diff)
	}
	if _, changed, _ := Prune(&kruiseappsv1alpha1.NodeImage{Spec: want}, at(15)); changed {
		t.Error("nothing expired, yet the spec changed")
	}
}
