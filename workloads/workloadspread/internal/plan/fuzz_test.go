package plan

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Any patch either applies, leaving a pod that carries the annotation, or is refused with the pod untouched.
func FuzzInject(f *testing.F) {
	f.Add([]byte(`{"metadata":{"labels":{"a":"b"}}}`))
	f.Add([]byte(`{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"1"}}}]}}`))
	f.Add([]byte(`{"spec":{"containers":"x"}}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, patch []byte) {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}}}}
		before := pod.DeepCopy()
		subset := &kruiseappsv1alpha1.WorkloadSpreadSubset{Name: "a", Patch: runtime.RawExtension{Raw: patch}}
		if err := Inject(pod, spread(), subset, ""); err != nil {
			if !cmp.Equal(before, pod) {
				t.Errorf("a refused patch changed the pod: %s", cmp.Diff(before, pod))
			}
			return
		}
		if _, ok := MatchedOf(pod); !ok {
			t.Errorf("an injected pod lacks the annotation: %v", pod.Annotations)
		}
	})
}

// Any spec and status read back from JSON plan without panicking, and a missing replica count never goes
// below -1.
func FuzzStatus(f *testing.F) {
	seed, _ := json.Marshal(spread(1, 2, -1))
	f.Add(seed, int32(4))
	f.Fuzz(func(t *testing.T, raw []byte, replicas int32) {
		ws := &kruiseappsv1alpha1.WorkloadSpread{}
		if json.Unmarshal(raw, ws) != nil {
			return
		}
		out := Status(Input{WS: ws, Pods: []*corev1.Pod{pod("p", "a", 0)}, WorkloadReplicas: replicas, Now: t0})
		for _, s := range out.Status.SubsetStatuses {
			if s.MissingReplicas < Unlimited {
				t.Errorf("subset %s missing %d", s.Name, s.MissingReplicas)
			}
		}
		Choose(ws)
		DeletionCosts(ws, []*corev1.Pod{pod("p", "a", 0)}, replicas)
	})
}
