package inject

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// PodSidecarSet is one SidecarSet's entry in a pod's kruise.io/sidecarset-hash (or -hash-without-image)
// annotation, in upstream's JSON.
type PodSidecarSet struct {
	UpdateTimestamp    metav1.Time `json:"updateTimestamp"`
	Hash               string      `json:"hash"`
	SidecarSetName     string      `json:"sidecarSetName"`
	SidecarList        []string    `json:"sidecarList"`
	ControllerRevision string      `json:"controllerRevision,omitempty"`
}

// PodHashes reads a pod's hash annotation under key, keyed by SidecarSet name. Pods injected by old
// releases carry a plain name-to-hash map, which is read too; an annotation that is neither reads as empty.
func PodHashes(pod *corev1.Pod, key string) map[string]PodSidecarSet {
	out, err := parsePodHashes(pod.Annotations[key])
	if err != nil {
		return map[string]PodSidecarSet{}
	}
	return out
}

// parsePodHashes reads either format of a hash annotation; "" is an empty map.
func parsePodHashes(raw string) (map[string]PodSidecarSet, error) {
	out := map[string]PodSidecarSet{}
	if raw == "" {
		return out, nil
	}
	if json.Unmarshal([]byte(raw), &out) == nil {
		return out, nil
	}
	plain := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &plain); err != nil {
		return nil, err
	}
	out = map[string]PodSidecarSet{}
	for name, hash := range plain {
		out[name] = PodSidecarSet{SidecarSetName: name, Hash: hash}
	}
	return out, nil
}

// SetPodHashes writes hashes to the pod's annotation under key.
func SetPodHashes(pod *corev1.Pod, key string, hashes map[string]PodSidecarSet) {
	encoded, _ := json.Marshal(hashes) // a map of plain structs always marshals
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = string(encoded)
}

// InjectedSidecarSets are the names in the pod's kruise.io/sidecarset-injected-list.
func InjectedSidecarSets(pod *corev1.Pod) []string {
	raw := pod.Annotations[kruiseappsv1alpha1.SidecarSetListAnnotation]
	if raw == "" {
		return nil
	}
	return strings.Split(raw, ",")
}

// SetInjectedSidecarSets writes names, sorted and without repeats, to kruise.io/sidecarset-injected-list.
func SetInjectedSidecarSets(pod *corev1.Pod, names []string) {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruiseappsv1alpha1.SidecarSetListAnnotation] = strings.Join(slices.Sorted(maps.Keys(set)), ",")
}
