package plan

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func intp(v intstr.IntOrString) *intstr.IntOrString { return &v }

// spread is a WorkloadSpread "ws" with subsets a (max 2), b (max 50%) and c (unlimited), reconciled with
// the given missingReplicas.
func spread(missing ...int32) *kruiseappsv1alpha1.WorkloadSpread {
	ws := &kruiseappsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "ws", Generation: 1}}
	ws.Spec.Subsets = []kruiseappsv1alpha1.WorkloadSpreadSubset{
		{Name: "a", MaxReplicas: intp(intstr.FromInt32(2))},
		{Name: "b", MaxReplicas: intp(intstr.FromString("50%"))},
		{Name: "c"},
	}
	ws.Status.ObservedGeneration = 1
	for i, m := range missing {
		ws.Status.SubsetStatuses = append(ws.Status.SubsetStatuses,
			kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{Name: ws.Spec.Subsets[i].Name, MissingReplicas: m})
	}
	return ws
}

// pod is a running, ready pod matched to subset of ws ("" for none), created age before t0.
func pod(name, subset string, age time.Duration) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))}}
	p.Spec.NodeName = "node"
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if subset != "" {
		raw, _ := json.Marshal(Matched{Name: "ws", Subset: subset})
		p.Annotations = map[string]string{kruiseappsv1alpha1.MatchedWorkloadSpreadSubsetAnnotations: string(raw)}
	}
	return p
}
