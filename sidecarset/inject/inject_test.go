package inject

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestInjectWithoutSourcesChangesNothing(t *testing.T) {
	pod := webPod("shop", nil)
	before := pod.DeepCopy()
	changed, err := Inject(pod, nil, now)
	if err != nil || changed || !apiequality.Semantic.DeepEqual(pod, before) {
		t.Errorf("changed %v, err %v, pod %+v", changed, err, pod)
	}
}

func TestInjectLeavesThePodAndTheSetsAloneOnError(t *testing.T) {
	a := sidecarSet("a", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.PatchPodMetadata = []kruiseappsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"k": "v"}}}
	})
	clash := sidecarSet("b", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Containers[0].Name = "web" })
	pod := webPod("shop", map[string]string{"app": "web"})
	before, aBefore := pod.DeepCopy(), a.DeepCopy()
	if _, err := Inject(pod, []Source{{Set: a}, {Set: clash}}, now); err == nil {
		t.Fatal("want the name clash refused")
	}
	if !apiequality.Semantic.DeepEqual(pod, before) {
		t.Errorf("the pod changed on error: %+v", pod)
	}
	if !apiequality.Semantic.DeepEqual(a, aBefore) {
		t.Errorf("the SidecarSet changed: %+v", a)
	}
}

func TestInjectDoesNotChangeTheSets(t *testing.T) {
	set := sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].ShareVolumePolicy.Type = kruiseappsv1alpha1.ShareVolumePolicyEnabled
		s.Spec.Containers[0].UpgradeStrategy = kruiseappsv1alpha1.SidecarContainerUpgradeStrategy{
			UpgradeType: kruiseappsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty"}
	})
	before := set.DeepCopy()
	pod := webPod("shop", map[string]string{"app": "web"})
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	if _, err := Inject(pod, []Source{{Set: set}}, now); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(set, before) {
		t.Errorf("Inject changed the SidecarSet: %+v", set.Spec.Containers)
	}
}

// A pod copied from an injected one (with its sidecars and annotations) gets the sidecars replaced, not
// added twice.
func TestInjectingAnInjectedPodAgainReplacesInPlace(t *testing.T) {
	set := sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.Containers = append(s.Spec.Containers, kruiseappsv1alpha1.SidecarContainer{
			Container:       corev1.Container{Name: "envoy", Image: "envoy:1"},
			UpgradeStrategy: kruiseappsv1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: kruiseappsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty"},
		})
	})
	once := injected(t, set)
	twice := once.DeepCopy()
	if _, err := Inject(twice, []Source{{Set: set}}, now); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(once, twice) {
		t.Errorf("a second injection changed the pod:\nonce:  %+v\ntwice: %+v", once.Spec, twice.Spec)
	}
}

func TestInjectRefusesAnUnreadableHashAnnotation(t *testing.T) {
	pod := webPod("shop", map[string]string{"app": "web"})
	pod.Annotations = map[string]string{kruiseappsv1alpha1.SidecarSetHashAnnotation: "{broken"}
	_, err := Inject(pod, []Source{{Set: sidecarSet("s")}}, now)
	if err == nil || !containsAll(err.Error(), "metadata.annotations[kruise.io/sidecarset-hash]") {
		t.Errorf("error %v, want one naming the annotation", err)
	}
}

func TestInjectRefusesConflictingVolumes(t *testing.T) {
	withLog := func(medium corev1.StorageMedium) func(*kruiseappsv1alpha1.SidecarSet) {
		return func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: "/log"}}
			s.Spec.Volumes = []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}}
		}
	}
	same := []Source{{Set: sidecarSet("a", withLog(""))}, {Set: sidecarSet("b", withLog(""))}}
	pod := webPod("shop", map[string]string{"app": "web"})
	if _, err := Inject(pod, same, now); err != nil {
		t.Fatalf("alike volumes refused: %v", err)
	}
	if n := len(pod.Spec.Volumes); n != 1 {
		t.Errorf("%d volumes, want the shared one once", n)
	}
	differ := []Source{{Set: sidecarSet("a", withLog(""))}, {Set: sidecarSet("b", withLog(corev1.StorageMediumMemory))}}
	_, err := Inject(webPod("shop", map[string]string{"app": "web"}), differ, now)
	if err == nil || !containsAll(err.Error(), "SidecarSet b", "spec.volumes[log]", "SidecarSet a") {
		t.Errorf("error %v, want the volume conflict named", err)
	}
}

// fuzzInput is what FuzzInject decodes its bytes into.
type fuzzInput struct {
	Pod  *corev1.Pod                      `json:"pod"`
	Sets []*kruiseappsv1alpha1.SidecarSet `json:"sets"`
}

// FuzzInject feeds arbitrary pods and SidecarSets (seeded with the golden cases) to Select and Inject: they
// must not panic, and a pod they accept must not end up with two containers of one name.
func FuzzInject(f *testing.F) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "pod.yaml")); err != nil {
			continue
		}
		c := loadCase(f, dir)
		seed, _ := json.Marshal(fuzzInput{Pod: c.pod, Sets: c.sets})
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in fuzzInput
		if json.Unmarshal(data, &in) != nil || in.Pod == nil {
			return
		}
		hadDuplicates := hasDuplicateNames(in.Pod)
		selected, err := Select(in.Sets, in.Pod, nil)
		if err != nil {
			return
		}
		var sources []Source
		for _, s := range selected {
			sources = append(sources, Source{Set: s})
		}
		if _, err := Inject(in.Pod, sources, now); err != nil {
			return
		}
		if !hadDuplicates && hasDuplicateNames(in.Pod) {
			t.Errorf("accepted pod has repeated container names: %+v", in.Pod.Spec)
		}
	})
}

func hasDuplicateNames(pod *corev1.Pod) bool {
	var names []string
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return len(slices.Compact(names)) != len(pod.Spec.InitContainers)+len(pod.Spec.Containers)
}
