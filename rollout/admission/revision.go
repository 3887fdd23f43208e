package admission

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// EffectiveRevisionChange reports whether an update starts a release. With a rollout-id annotation only a
// new id does (a template change under the same id is part of the release already announced); without one,
// a pod template change does.
func EffectiveRevisionChange(oldAnnotations, newAnnotations map[string]string, templateChanged bool) bool {
	if id := newAnnotations[rolloutsv1beta1.RolloutIDLabel]; id != "" {
		return oldAnnotations[rolloutsv1beta1.RolloutIDLabel] != id
	}
	return templateChanged
}

// TemplateChanged compares pod templates, ignoring the pod-template-hash label that controllers add.
func TemplateChanged(old, cur *corev1.PodTemplateSpec) bool {
	if old == nil || cur == nil {
		return old != cur
	}
	a, b := old.DeepCopy(), cur.DeepCopy()
	delete(a.Labels, rolloutsv1beta1.PodTemplateHashLabelKey)
	delete(b.Labels, rolloutsv1beta1.PodTemplateHashLabelKey)
	return !equality.Semantic.DeepEqual(a, b)
}

// unstructuredTemplateChanged is TemplateChanged for templates read from unstructured objects.
func unstructuredTemplateChanged(old, cur map[string]any) bool {
	return !equality.Semantic.DeepEqual(withoutHashLabel(old), withoutHashLabel(cur))
}

// withoutHashLabel copies just the maps on the way to the label, so the input is left untouched; maps
// left empty are dropped so that they compare equal to absent ones.
func withoutHashLabel(template map[string]any) map[string]any {
	meta, ok := template["metadata"].(map[string]any)
	if !ok {
		return template
	}
	labels, ok := meta["labels"].(map[string]any)
	if !ok {
		return template
	}
	labels = maps.Clone(labels)
	delete(labels, rolloutsv1beta1.PodTemplateHashLabelKey)
	meta = maps.Clone(meta)
	setOrDrop(meta, "labels", labels)
	out := maps.Clone(template)
	setOrDrop(out, "metadata", meta)
	return out
}

func setOrDrop(m map[string]any, key string, value map[string]any) {
	if len(value) == 0 {
		delete(m, key)
		return
	}
	m[key] = value
}
