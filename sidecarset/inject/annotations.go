package inject

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/memo"
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
// The map is the caller's to change.
func PodHashes(pod *corev1.Pod, key string) map[string]PodSidecarSet {
	out := maps.Clone(parsedHashesOf(pod.Annotations[key]))
	if out == nil {
		out = map[string]PodSidecarSet{}
	}
	return out
}

// podHash is one SidecarSet's entry of PodHashes, read without copying the map.
func podHash(pod *corev1.Pod, key, setName string) PodSidecarSet {
	return parsedHashesOf(pod.Annotations[key])[setName]
}

// parsedHashes keeps parsed hash annotations by their text. A SidecarSet's reconcile reads the annotation of
// every pod it selects, and runs after each of their events: parsing them all every time was most of the
// manager's CPU while pods were created. Pods injected or updated in the same second carry the same text,
// and a pod's text changes only when it is written. The maps it keeps are never changed (PodHashes hands out
// copies).
var parsedHashes = memo.New[string, map[string]PodSidecarSet](hashMemoSize)

const hashMemoSize = 4096

// parsedHashesOf is raw parsed, once while the memo keeps it; an annotation that does not parse reads as empty.
func parsedHashesOf(raw string) map[string]PodSidecarSet {
	if raw == "" {
		return nil
	}
	return parsedHashes.Get(raw, func() map[string]PodSidecarSet {
		parsed, err := parsePodHashes(raw)
		if err != nil {
			return map[string]PodSidecarSet{}
		}
		return parsed
	})
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
