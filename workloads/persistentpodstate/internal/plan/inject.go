package plan

import (
	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Inject gives a pod created under a recorded name the node affinity of its record, as upstream's pod
// webhook: each required key's recorded value as a nodeSelector entry, each preferred term as a preferred
// node affinity term of its weight whose expressions require the recorded values, and the annotation
// kruise.io/injected-persistent-pod-state naming the PersistentPodState. A pod without a record (created for
// the first time), a record without node labels, and a pod injected already (a webhook called again) are left
// alone. It reports whether it changed the pod.
func Inject(pod *corev1.Pod, pps *kruiseappsv1alpha1.PersistentPodState) bool {
	state, ok := pps.Status.PodStates[pod.Name]
	if !ok || len(state.NodeTopologyLabels) == 0 {
		return false
	}
	if _, done := pod.Annotations[kruiseappsv1alpha1.InjectedPersistentPodStateKey]; done {
		return false
	}
	selector, preferred := affinity(&pps.Spec, state.NodeTopologyLabels)
	if len(selector) == 0 && len(preferred) == 0 {
		return false
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruiseappsv1alpha1.InjectedPersistentPodStateKey] = pps.Name
	for k, v := range selector {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[k] = v
	}
	if len(preferred) > 0 {
		na := nodeAffinity(pod)
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, preferred...)
	}
	return true
}

// affinity is what a record's node labels require and prefer. A preferred term none of whose keys was
// recorded is left out: empty, it would prefer every node.
func affinity(spec *kruiseappsv1alpha1.PersistentPodStateSpec, labels map[string]string) (map[string]string, []corev1.PreferredSchedulingTerm) {
	var selector map[string]string
	if spec.RequiredPersistentTopology != nil {
		selector = pick(labels, spec.RequiredPersistentTopology.NodeTopologyKeys)
	}
	var preferred []corev1.PreferredSchedulingTerm
	for _, t := range spec.PreferredPersistentTopology {
		term := corev1.PreferredSchedulingTerm{Weight: t.Weight}
		for _, key := range t.Preference.NodeTopologyKeys {
			if v, ok := labels[key]; ok {
				term.Preference.MatchExpressions = append(term.Preference.MatchExpressions,
					corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
			}
		}
		if len(term.Preference.MatchExpressions) > 0 {
			preferred = append(preferred, term)
		}
	}
	return selector, preferred
}

func nodeAffinity(pod *corev1.Pod) *corev1.NodeAffinity {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return pod.Spec.Affinity.NodeAffinity
}
