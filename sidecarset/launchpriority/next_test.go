package launchpriority

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// launching is a pod whose containers have the given priorities, with the containers named in ready ready.
func launching(priorities map[string]int, order []string, ready ...string) *corev1.Pod {
	p := pod("p", nil)
	for _, name := range order {
		c := container(name)
		if prio, ok := priorities[name]; ok {
			c.Env = []corev1.EnvVar{barrierEnv("p", prio)}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
		isReady := false
		for _, r := range ready {
			isReady = isReady || r == name
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, Ready: isReady})
	}
	return p
}

func keys(ps ...int) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[Key(p)] = "true"
	}
	return out
}

func TestNext(t *testing.T) {
	three := map[string]int{"scs": 0, "app": -1, "log": -2}
	order := []string{"scs", "app", "log"}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		keys map[string]string
		want Step
	}{
		"no barrier yet: the highest opens": {
			pod: launching(three, order), keys: nil,
			want: Step{Open: ptr.To(0), Containers: []string{"scs"}},
		},
		"highest open, its container not ready: wait": {
			pod: launching(three, order), keys: keys(0),
			want: Step{},
		},
		"highest ready: the next opens": {
			pod: launching(three, order, "scs"), keys: keys(0),
			want: Step{Open: ptr.To(-1), Containers: []string{"app"}},
		},
		"the lowest opens and completes": {
			pod: launching(three, order, "scs", "app"), keys: keys(0, -1),
			want: Step{Open: ptr.To(-2), Containers: []string{"log"}, Complete: true},
		},
		"lowest already open: complete": {
			pod: launching(three, order, "scs", "app"), keys: keys(0, -1, -2),
			want: Step{Complete: true},
		},
		"all ready: complete": {
			pod: launching(three, order, "scs", "app", "log"), keys: keys(0, -1, -2),
			want: Step{Complete: true},
		},
		"a higher container restarted and is not ready: wait, its key stays open": {
			pod: launching(three, order, "app"), keys: keys(0, -1),
			want: Step{},
		},
		"one priority shared by two containers waits for both": {
			pod:  launching(map[string]int{"a": 5, "b": 5, "c": 1}, []string{"a", "b", "c"}, "a"),
			keys: keys(5),
			want: Step{},
		},
		"both of a shared priority are released together": {
			pod:  launching(map[string]int{"a": 5, "b": 5, "c": 1}, []string{"a", "b", "c"}),
			keys: nil,
			want: Step{Open: ptr.To(5), Containers: []string{"a", "b"}},
		},
		"containers without a barrier do not count": {
			pod:  launching(map[string]int{"a": 5, "c": 1}, []string{"a", "b", "c"}, "a"),
			keys: keys(5),
			want: Step{Open: ptr.To(1), Containers: []string{"c"}, Complete: true},
		},
		"no status yet: the highest opens": {
			pod:  func() *corev1.Pod { p := launching(three, order); p.Status = corev1.PodStatus{}; return p }(),
			want: Step{Open: ptr.To(0), Containers: []string{"scs"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Next(tc.pod, tc.keys); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Next = %+v (open %v), want %+v (open %v)", got, deref(got.Open), tc.want, deref(tc.want.Open))
			}
		})
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
