package launchpriority

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func container(name string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Image: name + ":v1", Env: env}
}

func priorityEnv(v string) corev1.EnvVar {
	return corev1.EnvVar{Name: kruiseappspub.ContainerLaunchPriorityEnvName, Value: v}
}

func barrierEnv(pod string, p int) corev1.EnvVar {
	return corev1.EnvVar{Name: kruiseappspub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: pod + "-barrier"}, Key: Key(p)},
	}}
}

func pod(name string, annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: annotations},
		Spec: corev1.PodSpec{Containers: containers}}
}

var ordered = map[string]string{kruiseappspub.ContainerLaunchPriorityKey: kruiseappspub.ContainerLaunchOrdered}

func TestAssign(t *testing.T) {
	generate := func(base string) string { return base + "x7k2q" }
	for name, tc := range map[string]struct {
		in, want *corev1.Pod
		changed  bool
		err      string
	}{
		"ordered: first container highest": {
			in: pod("p", ordered, container("scs"), container("app"), container("log")),
			want: pod("p", ordered, container("scs", barrierEnv("p", 0)), container("app", barrierEnv("p", -1)),
				container("log", barrierEnv("p", -2))),
			changed: true,
		},
		"ordered ignores the priority env": {
			in:      pod("p", ordered, container("a", priorityEnv("-5")), container("b", priorityEnv("5"))),
			want:    pod("p", ordered, container("a", priorityEnv("-5"), barrierEnv("p", 0)), container("b", priorityEnv("5"), barrierEnv("p", -1))),
			changed: true,
		},
		"priority env: unset is 0": {
			in:      pod("p", nil, container("app"), container("proxy", priorityEnv("100"))),
			want:    pod("p", nil, container("app", barrierEnv("p", 0)), container("proxy", priorityEnv("100"), barrierEnv("p", 100))),
			changed: true,
		},
		"priority env: negative and equal priorities": {
			in: pod("p", nil, container("a", priorityEnv("-100")), container("b", priorityEnv("3")), container("c", priorityEnv("3"))),
			want: pod("p", nil, container("a", priorityEnv("-100"), barrierEnv("p", -100)),
				container("b", priorityEnv("3"), barrierEnv("p", 3)), container("c", priorityEnv("3"), barrierEnv("p", 3))),
			changed: true,
		},
		"all one priority: nothing to order": {
			in:   pod("p", nil, container("a", priorityEnv("7")), container("b", priorityEnv("7"))),
			want: pod("p", nil, container("a", priorityEnv("7")), container("b", priorityEnv("7"))),
		},
		"no priority asked": {
			in:   pod("p", map[string]string{kruiseappspub.ContainerLaunchPriorityKey: "Parallel"}, container("a"), container("b")),
			want: pod("p", map[string]string{kruiseappspub.ContainerLaunchPriorityKey: "Parallel"}, container("a"), container("b")),
		},
		"one container": {
			in:   pod("p", ordered, container("a")),
			want: pod("p", ordered, container("a")),
		},
		"not an integer refuses the pod": {
			in:  pod("p", nil, container("a"), container("b", priorityEnv("high"))),
			err: `spec.containers[1].env[KRUISE_CONTAINER_PRIORITY]: invalid value "high": must be an integer`,
		},
		"a copied barrier env is replaced": {
			in:      pod("p", ordered, container("a", barrierEnv("old", 4)), container("b")),
			want:    pod("p", ordered, container("a", barrierEnv("p", 0)), container("b", barrierEnv("p", -1))),
			changed: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := tc.in.DeepCopy()
			changed, err := Assign(got, generate)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || changed != tc.changed {
				t.Fatalf("Assign = %v, %v; want %v, nil", changed, err, tc.changed)
			}
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("pod = %+v\nwant %+v", got.Spec.Containers, tc.want.Spec.Containers)
			}
		})
	}
}

func TestAssignNamesAGeneratedPod(t *testing.T) {
	in := pod("", ordered, container("a"), container("b"))
	in.GenerateName = "web-"
	if changed, err := Assign(in, func(base string) string { return base + "x7k2q" }); !changed || err != nil {
		t.Fatalf("Assign = %v, %v", changed, err)
	}
	if in.Name != "web-x7k2q" {
		t.Errorf("name = %q, want web-x7k2q", in.Name)
	}
	if got := in.Spec.Containers[1].Env[0].ValueFrom.ConfigMapKeyRef; got.Name != "web-x7k2q-barrier" || got.Key != "p_-1" {
		t.Errorf("barrier ref = %+v, want web-x7k2q-barrier/p_-1", got)
	}
	unnamed := pod("", ordered, container("a"), container("b"))
	if changed, err := Assign(unnamed, nil); changed || err != nil || len(unnamed.Spec.Containers[0].Env) != 0 {
		t.Errorf("a pod with neither name nor generateName: Assign = %v, %v, env %v", changed, err, unnamed.Spec.Containers[0].Env)
	}
}

func TestPriority(t *testing.T) {
	for name, tc := range map[string]struct {
		c    corev1.Container
		want int
		ok   bool
	}{
		"barrier env":       {container("a", barrierEnv("p", -3)), -3, true},
		"no barrier env":    {container("a", priorityEnv("3")), 0, false},
		"value, not a ref":  {container("a", corev1.EnvVar{Name: kruiseappspub.ContainerLaunchBarrierEnvName, Value: "x"}), 0, false},
		"malformed key":     {container("a", corev1.EnvVar{Name: kruiseappspub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "q"}}}), 0, false},
		"secret, not a key": {container("a", corev1.EnvVar{Name: kruiseappspub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "p_1"}}}), 0, false},
	} {
		if got, ok := Priority(&tc.c); got != tc.want || ok != tc.ok {
			t.Errorf("%s: Priority = %d, %v; want %d, %v", name, got, ok, tc.want, tc.ok)
		}
	}
}
