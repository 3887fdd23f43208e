package rollout

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Only the release of the stable revision itself, under a Rollout that may roll back in batches, marks its
// BatchRelease.
func TestBatchAnnotations(t *testing.T) {
	ro := func(kind, annotation string, routed bool) *rolloutsv1beta1.Rollout {
		r := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		r.Spec.WorkloadRef.Kind = kind
		if annotation != "" {
			r.Annotations[rolloutsv1beta1.RollbackInBatchAnnotation] = annotation
		}
		r.Spec.Strategy.Canary = &rolloutsv1beta1.CanaryStrategy{}
		if routed {
			r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{{Service: "app"}}
		}
		return r
	}
	status := func(stable, update string) rolloutsv1beta1.RolloutStatus {
		return rolloutsv1beta1.RolloutStatus{CanaryStatus: &rolloutsv1beta1.CanaryStatus{
			CommonStatus: rolloutsv1beta1.CommonStatus{StableRevision: stable, PodTemplateHash: update}}}
	}
	for name, tc := range map[string]struct {
		ro   *rolloutsv1beta1.Rollout
		st   rolloutsv1beta1.RolloutStatus
		want bool
	}{
		"rollback of a CloneSet":          {ro("CloneSet", "true", false), status("v1", "v1"), true},
		"rollback of a StatefulSet":       {ro("StatefulSet", "true", false), status("v1", "v1"), true},
		"forward release":                 {ro("CloneSet", "true", false), status("v1", "v2"), false},
		"annotation false":                {ro("CloneSet", "false", false), status("v1", "v1"), false},
		"no annotation":                   {ro("CloneSet", "", false), status("v1", "v1"), false},
		"Deployment":                      {ro("Deployment", "true", false), status("v1", "v1"), false},
		"traffic routing":                 {ro("CloneSet", "true", true), status("v1", "v1"), false},
		"no stable revision recorded yet": {ro("CloneSet", "true", false), status("", ""), false},
		"no release":                      {ro("CloneSet", "true", false), rolloutsv1beta1.RolloutStatus{}, false},
	} {
		got := batchAnnotations(tc.ro, tc.st)[rolloutsv1beta1.RollbackInBatchAnnotation] == "true"
		if got != tc.want {
			t.Errorf("%s: marked %v, want %v", name, got, tc.want)
		}
	}
}
