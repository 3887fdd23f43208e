package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func hotSet(image, resourceVersion string) *kruiseappsv1alpha1.SidecarSet {
	s := testSet()
	s.ResourceVersion = resourceVersion
	s.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation] = image
	s.Spec.Containers = []kruiseappsv1alpha1.SidecarContainer{{
		Container: corev1.Container{Name: "sidecar", Image: image},
		UpgradeStrategy: kruiseappsv1alpha1.SidecarContainerUpgradeStrategy{
			UpgradeType: kruiseappsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty"},
	}}
	return s
}

// hotPod is a pod the seed's hot-upgrade SidecarSet injected at v1: sidecar-1 working, sidecar-2 idle.
func hotPod() *corev1.Pod {
	p := podAt("hot", "v1", "shape", true)
	p.Spec.Containers = []corev1.Container{{Name: "sidecar-1", Image: "v1"}, {Name: "sidecar-2", Image: "empty"}, {Name: "app", Image: "app"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "sidecar-1", Image: "v1", ImageID: "id-v1", Ready: true},
		{Name: "sidecar-2", Image: "empty", ImageID: "id-empty", Ready: true},
		{Name: "app", Image: "app", ImageID: "id-app", Ready: true},
	}
	inject.SetWorkingHotUpgradeContainers(p, map[string]string{"sidecar": "sidecar-1"})
	for k, v := range map[string]string{"sidecar-1": "1", "sidecar-2": "0"} {
		p.Annotations[kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(k)] = v
		p.Annotations[kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(k)] = map[string]string{"1": "0", "0": "1"}[v]
	}
	return p
}

// kubeletRuns plays the kubelet: the container runs image as a new image ID, ready.
func kubeletRuns(p *corev1.Pod, name, image string) {
	for i := range p.Status.ContainerStatuses {
		if cs := &p.Status.ContainerStatuses[i]; cs.Name == name {
			cs.Image, cs.ImageID, cs.Ready = image, "id-"+image+"-again", true
		}
	}
}

func images(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

func versions(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range []string{"sidecar-1", "sidecar-2"} {
		out[c] = p.Annotations[kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(c)] + "/" +
			p.Annotations[kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(c)]
	}
	return out
}

// A hot upgrade from v1 to v2 and on to v3: the idle container takes the new image and the work, the old
// one goes back to the empty image once the pod is ready, and the next upgrade uses it again.
func TestHotUpgrade(t *testing.T) {
	set := hotSet("v2", "200")
	pod := hotPod()
	p := Compute(Input{Set: set, Pods: []*corev1.Pod{pod}, Now: now})
	if len(p.Update) != 1 || len(p.Reset) != 0 {
		t.Fatalf("update %v reset %v; want the pod updated", names(p.Update), names(p.Reset))
	}
	pod, err := UpdatePod(pod, set, "rev2", now)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "upgrading", pod, []string{"sidecar-1=v1", "sidecar-2=v2", "app=app"}, "sidecar-2",
		map[string]string{"sidecar-1": "1/200", "sidecar-2": "200/1"})
	if p := Compute(Input{Set: set, Pods: []*corev1.Pod{pod}, Now: now}); len(p.Reset) != 0 || p.Counts.Ready != 0 || p.Counts.Updated != 1 {
		t.Fatalf("before the kubelet runs v2: reset %v counts %+v", names(p.Reset), p.Counts)
	}

	kubeletRuns(pod, "sidecar-2", "v2")
	p = Compute(Input{Set: set, Pods: []*corev1.Pod{pod}, Now: now})
	if len(p.Reset) != 1 || p.Counts.Ready != 0 {
		t.Fatalf("v2 runs: reset %v counts %+v; want the old container reset, the pod not ready yet", names(p.Reset), p.Counts)
	}
	pod, err = ResetPod(pod, set, "rev2", now)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "reset", pod, []string{"sidecar-1=empty", "sidecar-2=v2", "app=app"}, "sidecar-2",
		map[string]string{"sidecar-1": "0/200", "sidecar-2": "200/0"})
	kubeletRuns(pod, "sidecar-1", "empty")
	p = Compute(Input{Set: set, Pods: []*corev1.Pod{pod}, Now: now})
	if diff := cmp.Diff(Counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1}, p.Counts); diff != "" || len(p.Reset) != 0 {
		t.Fatalf("settled: reset %v counts (-want +got):\n%s", names(p.Reset), diff)
	}

	next := hotSet("v3", "300")
	pod, err = UpdatePod(pod, next, "rev3", now)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "the next upgrade", pod, []string{"sidecar-1=v3", "sidecar-2=v2", "app=app"}, "sidecar-1",
		map[string]string{"sidecar-1": "300/200", "sidecar-2": "200/300"})
}

// An upgrade that comes while the last one still runs both versions replaces the older one.
func TestHotUpgradeBeforeReset(t *testing.T) {
	pod, err := UpdatePod(hotPod(), hotSet("v2", "200"), "rev2", now)
	if err != nil {
		t.Fatal(err)
	}
	kubeletRuns(pod, "sidecar-2", "v2")
	pod, err = UpdatePod(pod, hotSet("v3", "300"), "rev3", now)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "v3 before v1 was reset", pod, []string{"sidecar-1=v3", "sidecar-2=v2", "app=app"}, "sidecar-1",
		map[string]string{"sidecar-1": "300/200", "sidecar-2": "200/300"})
}

func check(t *testing.T, what string, pod *corev1.Pod, wantImages []string, wantWorking string, wantVersions map[string]string) {
	t.Helper()
	if diff := cmp.Diff(wantImages, images(pod)); diff != "" {
		t.Errorf("%s: images (-want +got):\n%s", what, diff)
	}
	if got := inject.WorkingHotUpgradeContainers(pod)["sidecar"]; got != wantWorking {
		t.Errorf("%s: working container %s, want %s", what, got, wantWorking)
	}
	if diff := cmp.Diff(wantVersions, versions(pod)); diff != "" {
		t.Errorf("%s: version/versionalt (-want +got):\n%s", what, diff)
	}
}
