package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

var now = metav1.NewTime(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))

func testSet(mutate ...func(*kruiseappsv1alpha1.SidecarSet)) *kruiseappsv1alpha1.SidecarSet {
	s := &kruiseappsv1alpha1.SidecarSet{
		// The hashes as the defaulting webhook records them: "new", and "shape" without images.
		ObjectMeta: metav1.ObjectMeta{Name: "scs", Annotations: map[string]string{
			kruiseappsv1alpha1.SidecarSetHashAnnotation: "new", kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation: "shape"}},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "scs", Image: "busybox:1.35.0"}}},
			UpdateStrategy: kruiseappsv1alpha1.SidecarSetUpdateStrategy{
				Type: kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// podAt is a pod injected by scs at hash (and shape for the hash without image), ready or not.
func podAt(name, hash, shape string, ready bool, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "nginx"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "scs", Image: "busybox:latest"}, {Name: "nginx", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i := 0; i+1 < len(labels); i += 2 {
		p.Labels[labels[i]] = labels[i+1]
	}
	inject.SetPodHashes(p, kruiseappsv1alpha1.SidecarSetHashAnnotation, map[string]inject.PodSidecarSet{"scs": {Hash: hash, SidecarSetName: "scs"}})
	inject.SetPodHashes(p, kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation, map[string]inject.PodSidecarSet{"scs": {Hash: shape, SidecarSetName: "scs"}})
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	podcondition.Set(p, corev1.PodReady, status, "", now)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "scs", Image: "busybox:latest", ImageID: "id-old"}}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func pods(n int, hash string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, podAt(fmt.Sprintf("p%d", i), hash, "shape", true))
	}
	return out
}

func TestCompute(t *testing.T) {
	cases := []struct {
		name        string
		set         *kruiseappsv1alpha1.SidecarSet
		pods        []*corev1.Pod
		wantCounts  Counts
		wantUpdate  []string
		wantBlocked string
	}{
		{name: "maxUnavailable 1 updates one pod at a time", set: testSet(), pods: pods(3, "old"),
			wantCounts: Counts{Matched: 3, Ready: 3}, wantUpdate: []string{"p0"}},
		{name: "an updated pod not yet ready holds the next one back", set: testSet(),
			pods:       []*corev1.Pod{podAt("a", "new", "shape", false), podAt("b", "old", "shape", true)},
			wantCounts: Counts{Matched: 2, Updated: 1, Ready: 1}},
		{name: "partition keeps that many matched pods at the old version", set: testSet(func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		}), pods: pods(5, "old"), wantCounts: Counts{Matched: 5, Ready: 5}, wantUpdate: []string{"p0", "p1", "p2"}},
		{name: "seed: 100 pods, partition 80, maxUnavailable 30 updates 20 at once", set: testSet(func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(80))
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(30))
		}), pods: pods(100, "old"), wantCounts: Counts{Matched: 100, Ready: 100}, wantUpdate: names(pods(20, "old"))},
		{name: "a percentage partition rounds up", set: testSet(func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(5))
		}), pods: pods(3, "old"), wantCounts: Counts{Matched: 3, Ready: 3}, wantUpdate: []string{"p0"}},
		{name: "seed canary: only pods the update selector picks", set: testSet(func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary.release": "true"}}
		}), pods: []*corev1.Pod{podAt("a", "old", "shape", true), podAt("nginx", "old", "shape", true, "canary.release", "true"),
			podAt("c", "old", "shape", true)},
			wantCounts: Counts{Matched: 3, Ready: 3}, wantUpdate: []string{"nginx"}},
		{name: "not-ready pods go first", set: testSet(), pods: []*corev1.Pod{podAt("ready", "old", "shape", true), podAt("unready", "old", "shape", false)},
			wantCounts: Counts{Matched: 2, Ready: 1}, wantUpdate: []string{"unready"}},
		{name: "NotUpdate only injects", set: testSet(func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType
		}), pods: pods(2, "old"), wantCounts: Counts{Matched: 2, Ready: 2}, wantBlocked: BlockedNotUpdate},
		{name: "paused", set: testSet(func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }),
			pods: pods(2, "old"), wantCounts: Counts{Matched: 2, Ready: 2}, wantBlocked: BlockedPaused},
		{name: "all updated: nothing to do", set: testSet(func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }),
			pods: pods(2, "new"), wantCounts: Counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2}},
		{name: "a pod whose sidecars changed beyond images is not updated", set: testSet(),
			pods:       []*corev1.Pod{podAt("a", "old", "other-shape", true)},
			wantCounts: Counts{Matched: 1, Ready: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(Input{Set: tc.set, Pods: tc.pods, Now: now})
			if diff := cmp.Diff(tc.wantCounts, p.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUpdate, names(p.Update)); diff != "" {
				t.Errorf("updated pods (-want +got):\n%s", diff)
			}
			if p.Blocked != tc.wantBlocked {
				t.Errorf("blocked %q, want %q", p.Blocked, tc.wantBlocked)
			}
		})
	}
}

func TestNotUpgradableCondition(t *testing.T) {
	pod := podAt("a", "old", "other-shape", true)
	p := Compute(Input{Set: testSet(), Pods: []*corev1.Pod{pod}, Now: now})
	if len(p.NotUpgradable) != 1 || len(p.Conditions) != 1 {
		t.Fatalf("not upgradable %v, condition writes %v; want the pod in both", names(p.NotUpgradable), names(p.Conditions))
	}
	c := podcondition.Get(p.Conditions[0], kruiseappsv1alpha1.SidecarSetUpgradable)
	if c.Status != corev1.ConditionFalse || c.Reason != kruiseappsv1alpha1.SidecarSetUpgradableReasonImmutableField || c.Message != `{"scs":false}` {
		t.Errorf("condition %+v", c)
	}
	marked := p.Conditions[0]
	if again := Compute(Input{Set: testSet(), Pods: []*corev1.Pod{marked}, Now: now}); len(again.Conditions) != 0 {
		t.Errorf("a recorded condition is written again")
	}
	back := podAt("a", "old", "shape", true) // the SidecarSet went back to what the pod has, images aside
	back.Status.Conditions = marked.Status.Conditions
	p = Compute(Input{Set: testSet(), Pods: []*corev1.Pod{back}, Now: now})
	if len(p.Conditions) != 1 || podcondition.Get(p.Conditions[0], kruiseappsv1alpha1.SidecarSetUpgradable).Status != corev1.ConditionTrue {
		t.Errorf("the condition does not turn True once the pod can be updated: %v", names(p.Conditions))
	}
	if fresh := Compute(Input{Set: testSet(), Pods: pods(1, "old"), Now: now}); len(fresh.Conditions) != 0 {
		t.Errorf("a pod never marked gets a condition write")
	}
}

func TestUpdatePodThenComplete(t *testing.T) {
	set := testSet()
	pod := podAt("a", "old", "shape", true)
	out, err := UpdatePod(pod, set, "scs-rev2", now)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Spec.Containers[0].Image; got != "busybox:1.35.0" {
		t.Errorf("sidecar image %s", got)
	}
	if out.Spec.Containers[1].Image != "nginx" || pod.Spec.Containers[0].Image != "busybox:latest" {
		t.Errorf("the app container or the input pod changed")
	}
	entry := inject.PodHashes(out, kruiseappsv1alpha1.SidecarSetHashAnnotation)["scs"]
	if entry.Hash != "new" || entry.ControllerRevision != "scs-rev2" || !entry.UpdateTimestamp.Equal(&now) {
		t.Errorf("hash entry %+v", entry)
	}
	if !inject.IsUpdated(out, set) || ReadyAndConsistent(out, set) {
		t.Errorf("updated %v, consistent %v; want updated and not yet consistent (the kubelet still runs id-old)",
			inject.IsUpdated(out, set), ReadyAndConsistent(out, set))
	}
	out.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "scs", Image: "busybox:1.35.0", ImageID: "id-new"}
	if !ReadyAndConsistent(out, set) {
		t.Errorf("a pod running the new image is not consistent")
	}
	p := Compute(Input{Set: set, Pods: []*corev1.Pod{out}, Now: now})
	if diff := cmp.Diff(Counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1}, p.Counts); diff != "" {
		t.Errorf("counts after the update (-want +got):\n%s", diff)
	}
}

func TestNativeSidecarUpdates(t *testing.T) {
	set := testSet()
	pod := podAt("a", "old", "shape", true)
	pod.Spec.InitContainers = []corev1.Container{{Name: "scs", Image: "busybox:latest", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
	pod.Spec.Containers = pod.Spec.Containers[1:]
	out, err := UpdatePod(pod, set, "r", now)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Spec.InitContainers[0].Image; got != "busybox:1.35.0" {
		t.Errorf("native sidecar image %s", got)
	}
}
