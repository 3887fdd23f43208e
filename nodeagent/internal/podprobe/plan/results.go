package plan

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Kept is spec without the entries whose pod is gone, is another pod of the name (its UID differs) or is not
// active any more, and without the probes of markers that are gone (a marker deleted while no controller ran
// to take its probes out); an entry left without probes goes too. pod gives the pod of an entry's namespace and
// name, nil when there is none; marker tells whether the marker of a namespace and name exists. changed tells
// whether anything went.
func Kept(spec kruiseappsv1alpha1.NodePodProbeSpec, pod func(ns, name string) *corev1.Pod, marker func(ns, name string) bool) (
	kruiseappsv1alpha1.NodePodProbeSpec, bool) {
	var out kruiseappsv1alpha1.NodePodProbeSpec
	changed := false
	for _, e := range spec.PodProbes {
		p := pod(e.Namespace, e.Name)
		if p == nil || string(p.UID) != e.UID || !Active(p) {
			changed = true
			continue
		}
		next := e
		next.Probes = nil
		for _, probe := range e.Probes {
			if name, _, ok := kruiseappsv1alpha1.ParseContainerProbeName(probe.Name); !ok || marker(e.Namespace, name) {
				next.Probes = append(next.Probes, probe)
			}
		}
		changed = changed || len(next.Probes) != len(e.Probes)
		if len(next.Probes) > 0 {
			out.PodProbes = append(out.PodProbes, next)
		}
	}
	return out, changed
}

// Conflict is a probe whose result names a pod condition type an earlier probe of the pod's results took: its
// result gives the pod no condition (the first probe's wins, as upstream's).
type Conflict struct {
	Type   corev1.PodConditionType
	Probe  string // "<marker>#<probe>" of the result left out
	Winner string // of the result that set the condition
}

// PodUpdate is what a pod's probe results change on it: labels and annotations to set (nil: remove), and the
// conditions to set, each only where the pod differs. Marked names the results whose marker policy changed
// the pod's metadata.
type PodUpdate struct {
	Labels      map[string]*string
	Annotations map[string]*string
	Conditions  []corev1.PodCondition
	Marked      []string
	Conflicts   []Conflict
}

// Empty tells an update that changes nothing on the pod.
func (u PodUpdate) Empty() bool {
	return len(u.Labels) == 0 && len(u.Annotations) == 0 && len(u.Conditions) == 0
}

// ProbeOf returns the probe of a PodProbeMarker of the pod's namespace by the marker's and the probe's names:
// nil when the marker is gone or being deleted, or has no such probe.
type ProbeOf func(marker, probe string) *kruiseappsv1alpha1.PodContainerProbe

// ForPod is what the node agent's results for pod (st, matched to the pod by UID) change on it. Each result
// with a state, in order, whose marker and probe still exist: the probe's podConditionType becomes a pod
// condition, True when the probe Succeeded and False otherwise, with the result's times and message, unless an
// earlier result took that type (a Conflict); the labels and annotations of the probe's markerPolicy for
// other states are removed and those of the policy for its state set (a later result's removal undoes an
// earlier one's setting of the same key). A condition is rewritten only when its status or message differs,
// as upstream's.
func ForPod(pod *corev1.Pod, st kruiseappsv1alpha1.PodProbeStatus, probeOf ProbeOf) PodUpdate {
	labels, annotations := map[string]*string{}, map[string]*string{}
	var u PodUpdate
	taken := map[corev1.PodConditionType]string{}
	for _, s := range st.ProbeStates {
		if s.State == "" {
			continue
		}
		var probe *kruiseappsv1alpha1.PodContainerProbe
		if marker, name, ok := kruiseappsv1alpha1.ParseContainerProbeName(s.Name); ok {
			probe = probeOf(marker, name)
		}
		if probe == nil {
			continue
		}
		if c, conflict := condition(probe, s, taken); conflict != nil {
			u.Conflicts = append(u.Conflicts, *conflict)
		} else if c != nil && conditionDiffers(pod, *c) {
			u.Conditions = append(u.Conditions, *c)
		}
		if mark(probe.MarkerPolicy, s.State, labels, annotations) {
			u.Marked = append(u.Marked, s.Name)
		}
	}
	u.Labels = changes(pod.Labels, labels)
	u.Annotations = changes(pod.Annotations, annotations)
	if len(u.Labels) == 0 && len(u.Annotations) == 0 {
		u.Marked = nil
	}
	return u
}

// condition is the pod condition of probe's result s, nil when the probe sets none; a type an earlier result
// took is a conflict.
func condition(probe *kruiseappsv1alpha1.PodContainerProbe, s kruiseappsv1alpha1.ContainerProbeState,
	taken map[corev1.PodConditionType]string) (*corev1.PodCondition, *Conflict) {
	t := corev1.PodConditionType(probe.PodConditionType)
	if t == "" {
		return nil, nil
	}
	if winner, ok := taken[t]; ok {
		return nil, &Conflict{Type: t, Probe: s.Name, Winner: winner}
	}
	taken[t] = s.Name
	status := corev1.ConditionFalse
	if s.State == kruiseappsv1alpha1.ProbeSucceeded {
		status = corev1.ConditionTrue
	}
	return &corev1.PodCondition{Type: t, Status: status, LastProbeTime: s.LastProbeTime,
		LastTransitionTime: s.LastTransitionTime, Message: s.Message}, nil
}

func conditionDiffers(pod *corev1.Pod, c corev1.PodCondition) bool {
	for _, cur := range pod.Status.Conditions {
		if cur.Type == c.Type {
			return cur.Status != c.Status || cur.Message != c.Message
		}
	}
	return true
}

// mark writes into labels and annotations what the policies say for state: the keys of the other states'
// policies removed, then those of state's set. It reports whether the policies name any key.
func mark(policies []kruiseappsv1alpha1.ProbeMarkerPolicy, state kruiseappsv1alpha1.ProbeState, labels, annotations map[string]*string) bool {
	named := false
	for _, p := range policies {
		if p.State != state {
			named = remove(labels, p.Labels) || named
			named = remove(annotations, p.Annotations) || named
		}
	}
	for _, p := range policies {
		if p.State == state {
			named = set(labels, p.Labels) || named
			named = set(annotations, p.Annotations) || named
		}
	}
	return named
}

func remove(into map[string]*string, keys map[string]string) bool {
	for k := range keys {
		into[k] = nil
	}
	return len(keys) > 0
}

func set(into map[string]*string, values map[string]string) bool {
	for k, v := range values {
		into[k] = &v
	}
	return len(values) > 0
}

// changes keeps of want (nil: remove) what differs from have; nil when nothing does.
func changes(have map[string]string, want map[string]*string) map[string]*string {
	var out map[string]*string
	for k, v := range want {
		cur, ok := have[k]
		if (v == nil && !ok) || (v != nil && ok && cur == *v) {
			continue
		}
		if out == nil {
			out = map[string]*string{}
		}
		out[k] = v
	}
	return out
}

// MetadataPatch is the JSON merge patch of the pod's labels and annotations (null removes a key); nil when
// there is none.
func (u PodUpdate) MetadataPatch() ([]byte, error) {
	if len(u.Labels) == 0 && len(u.Annotations) == 0 {
		return nil, nil
	}
	type meta struct {
		Labels      map[string]*string `json:"labels,omitempty"`
		Annotations map[string]*string `json:"annotations,omitempty"`
	}
	return json.Marshal(struct {
		Metadata meta `json:"metadata"`
	}{meta{Labels: u.Labels, Annotations: u.Annotations}})
}

// ConditionsPatch is the strategic merge patch of the pod's status that sets the update's conditions: the
// pod's conditions merge by type, so the kubelet's and the other controllers' stay as they are; nil when
// there is none.
func (u PodUpdate) ConditionsPatch() ([]byte, error) {
	if len(u.Conditions) == 0 {
		return nil, nil
	}
	type status struct {
		Conditions []corev1.PodCondition `json:"conditions"`
	}
	return json.Marshal(struct {
		Status status `json:"status"`
	}{status{Conditions: u.Conditions}})
}
