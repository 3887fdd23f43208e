package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(-d)) }

// readyPod is a running, ready pod named name.
func readyPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }

func annotated(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

func labelled(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[key] = value }
}

func pods(names ...string) []*corev1.Pod {
	out := make([]*corev1.Pod, len(names))
	for i, n := range names {
		out[i] = readyPod(n)
	}
	return out
}

func maxUnavailable(v intstr.IntOrString) *kruisepolicyv1alpha1.PodUnavailableBudget {
	return &kruisepolicyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 3},
		Spec: kruisepolicyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: &v,
		},
	}
}
