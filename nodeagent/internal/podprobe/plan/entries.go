package plan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Skipped is a probe of a marker left out of a pod's entry: its port does not resolve (ResolvePorts).
type Skipped struct {
	Pod   string // namespace/name
	Probe string
	Err   error
}

func (s Skipped) String() string {
	return fmt.Sprintf("probe %s of pod %s: %v", s.Probe, s.Pod, s.Err)
}

// Desired is what a PodProbeMarker wants written into the NodePodProbes.
type Desired struct {
	// ByNode holds, per node, one entry for each eligible pod on it with the marker's probes it runs; an
	// entry whose every probe was skipped has none.
	ByNode map[string][]kruiseappsv1alpha1.PodProbe
	// Matched counts the eligible pods: the marker's status.matchedPods.
	Matched int
	// Skipped are the probes left out, in the pods' order.
	Skipped []Skipped
}

// Want is what marker wants written for pods, those of its namespace its selector matches (the caller
// selects them): the eligible ones get an entry on their node, with each probe of the marker named
// "<marker>#<probe>" and its ports resolved against the pod's containers.
func Want(marker *kruiseappsv1alpha1.PodProbeMarker, pods []*corev1.Pod) Desired {
	d := Desired{ByNode: map[string][]kruiseappsv1alpha1.PodProbe{}}
	for _, pod := range pods {
		if pod.Namespace != marker.Namespace || !Eligible(pod) {
			continue
		}
		d.Matched++
		entry := kruiseappsv1alpha1.PodProbe{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID), IP: pod.Status.PodIP}
		for _, p := range marker.Spec.Probes {
			spec, err := ResolvePorts(p.Probe, p.ContainerName, pod)
			if err != nil {
				d.Skipped = append(d.Skipped, Skipped{Pod: pod.Namespace + "/" + pod.Name, Probe: p.Name, Err: err})
				continue
			}
			entry.Probes = append(entry.Probes, kruiseappsv1alpha1.ContainerProbe{
				Name: kruiseappsv1alpha1.ContainerProbeName(marker.Name, p.Name), ContainerName: p.ContainerName, Probe: spec})
		}
		d.ByNode[pod.Spec.NodeName] = append(d.ByNode[pod.Spec.NodeName], entry)
	}
	return d
}

// WithMarker is spec holding, of the probes of the marker name in namespace ns, exactly those of want (the
// marker's entries for this node; nil takes all its probes out). An entry of want updates the entry of the
// same pod (namespace, name and UID) in place: its probes replace the marker's there, the others' stay in
// their order, and the pod's IP is taken when it reports one. The marker's probes go from every other entry
// of its namespace; an entry left without probes is dropped, and a pod with no entry yet gets one at the end.
// changed tells whether the spec differs from the one given, which is not changed.
func WithMarker(spec kruiseappsv1alpha1.NodePodProbeSpec, ns, name string, want []kruiseappsv1alpha1.PodProbe) (
	out kruiseappsv1alpha1.NodePodProbeSpec, changed bool) {
	prefix := kruiseappsv1alpha1.ContainerProbeName(name, "")
	wanted := make(map[string]kruiseappsv1alpha1.PodProbe, len(want))
	for _, w := range want {
		wanted[entryKey(w)] = w
	}
	for _, e := range spec.PodProbes {
		if e.Namespace != ns {
			out.PodProbes = append(out.PodProbes, e)
			continue
		}
		w, ok := wanted[entryKey(e)]
		delete(wanted, entryKey(e))
		next := e
		next.Probes = mergeProbes(e.Probes, prefix, w.Probes)
		if ok && w.IP != "" {
			next.IP = w.IP
		}
		if len(next.Probes) > 0 {
			out.PodProbes = append(out.PodProbes, next)
		}
	}
	for _, w := range want {
		if _, left := wanted[entryKey(w)]; left && len(w.Probes) > 0 {
			out.PodProbes = append(out.PodProbes, *w.DeepCopy())
		}
	}
	return out, !sameEntries(spec.PodProbes, out.PodProbes)
}

func entryKey(e kruiseappsv1alpha1.PodProbe) string {
	return e.Namespace + "/" + e.Name + "/" + e.UID
}

// mergeProbes keeps the probes not named with prefix, replaces in place those of want's names, drops the other
// ones named with prefix and adds the rest of want at the end.
func mergeProbes(have []kruiseappsv1alpha1.ContainerProbe, prefix string, want []kruiseappsv1alpha1.ContainerProbe) []kruiseappsv1alpha1.ContainerProbe {
	byName := make(map[string]int, len(want))
	for i, w := range want {
		byName[w.Name] = i
	}
	used := make([]bool, len(want))
	var out []kruiseappsv1alpha1.ContainerProbe
	for _, p := range have {
		if !strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
			continue
		}
		if i, ok := byName[p.Name]; ok && !used[i] {
			out = append(out, *want[i].DeepCopy())
			used[i] = true
		}
	}
	for i, w := range want {
		if !used[i] {
			out = append(out, *w.DeepCopy())
		}
	}
	return out
}

func sameEntries(a, b []kruiseappsv1alpha1.PodProbe) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return equality.Semantic.DeepEqual(a, b)
}

// MarkerKeys are the markers whose probes npp holds, as "<namespace>/<marker>": the keys of the NodePodProbe
// index that finds a marker's NodePodProbes when its pods have left them.
func MarkerKeys(npp *kruiseappsv1alpha1.NodePodProbe) []string {
	seen := map[string]bool{}
	var keys []string
	for _, e := range npp.Spec.PodProbes {
		for _, p := range e.Probes {
			marker, _, ok := kruiseappsv1alpha1.ParseContainerProbeName(p.Name)
			if k := MarkerKey(e.Namespace, marker); ok && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// MarkerKey is the index key of the marker name of namespace ns.
func MarkerKey(ns, name string) string { return ns + "/" + name }
