package sidecarset

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flotilla-dev/flotilla/sidecarset/launchpriority"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// TestLaunchPriorityAfterInjection plays the module's two pod mutations in the chain's order: the sidecars
// injected first take their place in the launch order.
func TestLaunchPriorityAfterInjection(t *testing.T) {
	set := func(name string, policy kruiseappsv1alpha1.PodInjectPolicyType, env ...corev1.EnvVar) *kruiseappsv1alpha1.SidecarSet {
		return &kruiseappsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kruiseappsv1alpha1.SidecarSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Containers: []kruiseappsv1alpha1.SidecarContainer{{PodInjectPolicy: policy,
					Container: corev1.Container{Name: name, Image: name + ":v1", Env: env}}},
			}}
	}
	for name, tc := range map[string]struct {
		annotations map[string]string
		appEnv      []corev1.EnvVar
		sets        []*kruiseappsv1alpha1.SidecarSet
		want        map[string]string // container: barrier key; "" for none
	}{
		"ordered: a sidecar before the app starts first, one after it last": {
			annotations: map[string]string{kruiseappspub.ContainerLaunchPriorityKey: kruiseappspub.ContainerLaunchOrdered},
			sets: []*kruiseappsv1alpha1.SidecarSet{set("proxy", kruiseappsv1alpha1.BeforeAppContainerType),
				set("log", kruiseappsv1alpha1.AfterAppContainerType)},
			want: map[string]string{"proxy": "p_0", "app": "p_-1", "log": "p_-2"},
		},
		"a sidecar's own priority env orders it": {
			sets: []*kruiseappsv1alpha1.SidecarSet{set("proxy", kruiseappsv1alpha1.AfterAppContainerType,
				corev1.EnvVar{Name: kruiseappspub.ContainerLaunchPriorityEnvName, Value: "10"})},
			want: map[string]string{"app": "p_0", "proxy": "p_10"},
		},
		"no priority asked: injection only": {
			sets: []*kruiseappsv1alpha1.SidecarSet{set("proxy", kruiseappsv1alpha1.BeforeAppContainerType)},
			want: map[string]string{"proxy": "", "app": ""},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
			for _, s := range tc.sets {
				b = b.WithObjects(s)
			}
			injector := &podInjector{reader: b.Build(), namespace: "flotilla-system", clock: clock.RealClock{}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-", Labels: map[string]string{"app": "web"},
				Annotations: tc.annotations}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1", Env: tc.appEnv}}}}
			for _, m := range []func(context.Context, *corev1.Pod) (bool, error){injector.mutate, assignLaunchPriority} {
				if _, err := m(t.Context(), pod); err != nil {
					t.Fatal(err)
				}
			}
			got := map[string]string{}
			for i := range pod.Spec.Containers {
				c := &pod.Spec.Containers[i]
				got[c.Name] = barrierKey(t, c, pod.Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("containers %v, want %v", got, tc.want)
			}
			for c, key := range tc.want {
				if got[c] != key {
					t.Errorf("container %s waits on %q, want %q (all: %v)", c, got[c], key, got)
				}
			}
		})
	}
}

// barrierKey is the key c waits on, checking that it refers to the pod's barrier.
func barrierKey(t *testing.T, c *corev1.Container, pod string) string {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == kruiseappspub.ContainerLaunchBarrierEnvName {
			ref := e.ValueFrom.ConfigMapKeyRef
			if ref.Name != launchpriority.BarrierName(pod) {
				t.Errorf("container %s waits on ConfigMap %s, want %s", c.Name, ref.Name, launchpriority.BarrierName(pod))
			}
			return ref.Key
		}
	}
	return ""
}

func TestGenerateName(t *testing.T) {
	if got := generateName("web-"); !strings.HasPrefix(got, "web-") || len(got) != len("web-")+generatedSuffixLength {
		t.Errorf("generateName(web-) = %q", got)
	}
	long := strings.Repeat("a", 70)
	if got := generateName(long); len(got) != 63 || !strings.HasPrefix(got, long[:maxGeneratedBase]) {
		t.Errorf("generateName(70 characters) = %q (%d), want 63 characters", got, len(got))
	}
}
