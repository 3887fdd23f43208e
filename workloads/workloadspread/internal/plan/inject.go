package plan

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Inject gives a new pod what the subset asks of its pods, as upstream's pod webhook: the subset's patch
// (strategic merge: labels, annotations, container resources, ...), its required node selector term ANDed
// into every required term of the pod (or as the only one), its preferred terms and its tolerations, and
// the matched-workloadspread annotation naming ws, the subset and, for a pod without a name yet, uid (the
// key under which Admit recorded it). An error means the patch does not apply to the pod.
func Inject(pod *corev1.Pod, ws *kruiseappsv1alpha1.WorkloadSpread, subset *kruiseappsv1alpha1.WorkloadSpreadSubset, uid string) error {
	if err := applyPatch(pod, subset.Patch.Raw); err != nil {
		return fmt.Errorf("applying the patch of subset %s of WorkloadSpread %s: %w", subset.Name, ws.Name, err)
	}
	if subset.RequiredNodeSelectorTerm != nil {
		require(pod, subset.RequiredNodeSelectorTerm)
	}
	if len(subset.PreferredNodeSelectorTerms) > 0 {
		na := nodeAffinity(pod)
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			subset.PreferredNodeSelectorTerms...)
	}
	tolerate(pod, subset.Tolerations)
	raw, _ := json.Marshal(Matched{Name: ws.Name, Subset: subset.Name, UID: uid}) // strings always marshal
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruiseappsv1alpha1.MatchedWorkloadSpreadSubsetAnnotations] = string(raw)
	return nil
}

// CheckPatch reports whether a subset's patch merges into a pod: the validating webhook refuses one that
// does not, rather than let the pod webhook refuse every pod of the subset.
func CheckPatch(patch []byte) error {
	return applyPatch(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}, patch)
}

// applyPatch merges patch into the pod with the pod's patch strategy; an empty patch changes nothing.
func applyPatch(pod *corev1.Pod, patch []byte) error {
	if len(patch) == 0 {
		return nil
	}
	orig, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	merged, err := strategicMerge(orig, patch)
	if err != nil {
		return err
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(merged, out); err != nil {
		return err
	}
	*pod = *out
	return nil
}

// strategicMerge is strategicpatch's merge, with its panics (some malformed patches, such as a list item
// whose merge key is an object, panic inside it) turned into errors.
func strategicMerge(orig, patch []byte) (merged []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			merged, err = nil, fmt.Errorf("the patch does not merge into a pod: %v", r)
		}
	}()
	return strategicpatch.StrategicMergePatch(orig, patch, &corev1.Pod{})
}

// require ANDs term into each required node selector term: the pod keeps its own choices and must also be
// in the subset's domain.
func require(pod *corev1.Pod, term *corev1.NodeSelectorTerm) {
	na := nodeAffinity(pod)
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []corev1.NodeSelectorTerm{*term.DeepCopy()}
		return
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, term.DeepCopy().MatchExpressions...)
		t.MatchFields = append(t.MatchFields, term.DeepCopy().MatchFields...)
	}
}

// tolerate appends the tolerations the pod does not have yet.
func tolerate(pod *corev1.Pod, tolerations []corev1.Toleration) {
	for _, t := range tolerations {
		if !hasToleration(pod.Spec.Tolerations, t) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
		}
	}
}

func hasToleration(list []corev1.Toleration, t corev1.Toleration) bool {
	for i := range list {
		if equality.Semantic.DeepEqual(list[i], t) {
			return true
		}
	}
	return false
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
