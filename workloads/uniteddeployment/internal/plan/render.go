package plan

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Desired is what one subset's workload should carry.
type Desired struct {
	Subset              *kruiseappsv1alpha1.Subset
	Revision            string
	Replicas, Partition int32
}

// WorkloadName names a subset's workload "<ud>-<subset>-<suffix>", upstream's shape (it lets the API server
// pick the suffix). The suffix here derives from the UnitedDeployment's UID and the subset, so that a create
// retried on a stale cache finds the first one instead of making a second workload.
func WorkloadName(ud *kruiseappsv1alpha1.UnitedDeployment, subset string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(string(ud.UID) + "/" + subset))
	suffix := rand.SafeEncodeString(fmt.Sprint(h.Sum32()))[:5]
	return ud.Name + "-" + subset + "-" + suffix
}

// Render builds the workload of one subset: the template's workload with the subset's replicas and
// partition, the selector narrowed to the subset, the subset's node selector term and tolerations merged into
// the pod template and its patch applied on top, labelled with the subset and the revision, controlled by ud.
func Render(k Kind, ud *kruiseappsv1alpha1.UnitedDeployment, d Desired) (client.Object, error) {
	meta, tmpl, ok := k.template(ud)
	if !ok || ud.Spec.Selector == nil {
		return nil, ErrNoTemplate
	}
	pod, err := subsetPod(tmpl, d)
	if err != nil {
		return nil, err
	}
	sel := ud.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[kruiseappsv1alpha1.SubSetNameLabelKey] = d.Subset.Name
	obj := k.assemble(ud, sel, pod, d.Replicas, d.Partition)
	obj.SetName(WorkloadName(ud, d.Subset.Name))
	obj.SetNamespace(ud.Namespace)
	obj.SetLabels(workloadLabels(meta.Labels, ud.Spec.Selector.MatchLabels, d))
	obj.SetAnnotations(merged(meta.Annotations, map[string]string{kruiseappsv1alpha1.AnnotationSubsetPatchKey: string(d.Subset.Patch.Raw)}))
	obj.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(ud, kruiseappsv1alpha1.GroupVersion.WithKind("UnitedDeployment"))})
	return obj, nil
}

func workloadLabels(template, selector map[string]string, d Desired) map[string]string {
	return merged(template, selector, map[string]string{
		kruiseappsv1alpha1.SubSetNameLabelKey:             d.Subset.Name,
		kruiseappsv1alpha1.ControllerRevisionHashLabelKey: d.Revision,
	})
}

// subsetPod is the template's pod template for one subset.
func subsetPod(tmpl *corev1.PodTemplateSpec, d Desired) (corev1.PodTemplateSpec, error) {
	pod := *tmpl.DeepCopy()
	pod.Labels = merged(pod.Labels, map[string]string{
		kruiseappsv1alpha1.SubSetNameLabelKey:             d.Subset.Name,
		kruiseappsv1alpha1.ControllerRevisionHashLabelKey: d.Revision,
	})
	pod.Spec.Affinity = withNodeTerm(pod.Spec.Affinity, d.Subset.NodeSelectorTerm)
	pod.Spec.Tolerations = withTolerations(pod.Spec.Tolerations, d.Subset.Tolerations)
	if len(d.Subset.Patch.Raw) == 0 {
		return pod, nil
	}
	return patched(pod, d.Subset.Patch.Raw)
}

// withNodeTerm requires the subset's term of the pods: added to every required term of the template (terms
// are ORed, so each must also match the subset), or as the only term when the template has none.
func withNodeTerm(a *corev1.Affinity, term corev1.NodeSelectorTerm) *corev1.Affinity {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return a
	}
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{*term.DeepCopy()}}
		return a
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, term.DeepCopy().MatchExpressions...)
		t.MatchFields = append(t.MatchFields, term.DeepCopy().MatchFields...)
	}
	return a
}

// withTolerations adds the subset's tolerations the template does not already have.
func withTolerations(have, add []corev1.Toleration) []corev1.Toleration {
	for _, t := range add {
		if !slices.ContainsFunc(have, func(h corev1.Toleration) bool { return equality.Semantic.DeepEqual(h, t) }) {
			have = append(have, t)
		}
	}
	return have
}

// patched applies a subset's strategic merge patch to the pod template.
func patched(pod corev1.PodTemplateSpec, patch []byte) (corev1.PodTemplateSpec, error) {
	raw, err := json.Marshal(pod)
	if err != nil {
		return pod, fmt.Errorf("encoding the pod template: %w", err)
	}
	raw, err = strategicpatch.StrategicMergePatch(raw, patch, &corev1.PodTemplateSpec{})
	if err != nil {
		return pod, fmt.Errorf("applying the subset's patch: %w", err)
	}
	out := corev1.PodTemplateSpec{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return pod, fmt.Errorf("decoding the patched pod template: %w", err)
	}
	return out, nil
}

// merged is the union of the maps, later ones winning; nil when all are empty.
func merged(ms ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range ms {
		if len(m) > 0 && out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, m)
	}
	return out
}
