package plan

import (
	"maps"
	"slices"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ordinals"
)

// Workload is what the records depend on of a PersistentPodState's StatefulSet.
type Workload struct {
	// Exists: the StatefulSet exists and is not being deleted.
	Exists bool
	Name   string
	// Start, Replicas and Reserved place its replicas (spec.ordinals.start, spec.replicas, spec.reserveOrdinals).
	Start, Replicas int32
	Reserved        ordinals.Reserved
}

// Pod is what one pod of the StatefulSet contributes to the records.
type Pod struct {
	Name, NodeName string
	Ready          bool
	Annotations    map[string]string
}

// Status is the status a PersistentPodState should have at generation gen. A Ready pod on a node whose
// labels are known (nodeLabels, by node name) is recorded: its node, the node's values of the spec's topology
// keys, its values of the spec's annotation keys. A record stays when its pod is not Ready or its node is not
// known. A record goes when the StatefulSet scaled its ordinal away and the pod is gone (not with the
// WhenDeleted policy), and every record goes when the StatefulSet is gone or being deleted, as upstream.
func Status(pps *kruiseappsv1alpha1.PersistentPodState, gen int64, w Workload, pods []Pod,
	nodeLabels map[string]map[string]string) kruiseappsv1alpha1.PersistentPodStateStatus {
	out := kruiseappsv1alpha1.PersistentPodStateStatus{ObservedGeneration: gen}
	if !w.Exists {
		return out
	}
	states := maps.Clone(pps.Status.PodStates)
	if states == nil {
		states = map[string]kruiseappsv1alpha1.PodState{}
	}
	for _, p := range pods {
		if labels, known := nodeLabels[p.NodeName]; p.Ready && p.NodeName != "" && known {
			states[p.Name] = record(&pps.Spec, p, labels)
		}
	}
	if pps.Spec.PersistentPodStateRetentionPolicy != kruiseappsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted {
		dropScaledAway(states, w, pods)
	}
	if len(states) > 0 {
		out.PodStates = states
	}
	return out
}

func record(spec *kruiseappsv1alpha1.PersistentPodStateSpec, p Pod, nodeLabels map[string]string) kruiseappsv1alpha1.PodState {
	s := kruiseappsv1alpha1.PodState{NodeName: p.NodeName}
	s.NodeTopologyLabels = pick(nodeLabels, TopologyKeys(spec))
	s.Annotations = pick(p.Annotations, annotationKeys(spec))
	return s
}

// pick is the values of keys in from; nil when none is there.
func pick(from map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := from[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// TopologyKeys are the node label keys a PersistentPodState records: the required and the preferred ones.
func TopologyKeys(spec *kruiseappsv1alpha1.PersistentPodStateSpec) []string {
	var keys []string
	if spec.RequiredPersistentTopology != nil {
		keys = append(keys, spec.RequiredPersistentTopology.NodeTopologyKeys...)
	}
	for _, t := range spec.PreferredPersistentTopology {
		keys = append(keys, t.Preference.NodeTopologyKeys...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func annotationKeys(spec *kruiseappsv1alpha1.PersistentPodStateSpec) []string {
	keys := make([]string, 0, len(spec.PersistentPodAnnotations))
	for _, a := range spec.PersistentPodAnnotations {
		keys = append(keys, a.Key)
	}
	return keys
}

// dropScaledAway deletes the records of pods that are gone and whose ordinal the StatefulSet's replicas no
// longer take. A name that is not one the StatefulSet gives its pods keeps its record, as upstream.
func dropScaledAway(states map[string]kruiseappsv1alpha1.PodState, w Workload, pods []Pod) {
	slots := ordinals.Slots(w.Start, w.Replicas, w.Reserved)
	for name := range states {
		n := ordinals.Ordinal(w.Name, name)
		if n < 0 || slices.Contains(slots, n) || slices.ContainsFunc(pods, func(p Pod) bool { return p.Name == name }) {
			continue
		}
		delete(states, name)
	}
}
