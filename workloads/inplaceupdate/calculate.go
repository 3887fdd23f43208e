package inplaceupdate

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Spec is what an in-place update changes on a pod: container images, and the template's labels and
// annotations (set or removed).
type Spec struct {
	// ContainerImages maps a container name to its new image.
	ContainerImages map[string]string
	// Labels and Annotations are set on the pod; the Removed ones are taken off it.
	Labels, Annotations               map[string]string
	RemovedLabels, RemovedAnnotations []string
	// EnvFromMetadata names the containers whose env reads a changed label or annotation through a
	// fieldRef; they must be restarted to see the new value.
	EnvFromMetadata []string
}

// Calculate returns the in-place update that moves a pod from the old template to the new one, and false
// when the change cannot be made in place: anything but container images and template metadata differs.
func Calculate(oldT, newT *corev1.PodTemplateSpec) (*Spec, bool) {
	if oldT == nil || newT == nil || !onlyImagesDiffer(&oldT.Spec, &newT.Spec) {
		return nil, false
	}
	s := &Spec{ContainerImages: changedImages(&oldT.Spec, &newT.Spec)}
	s.Labels, s.RemovedLabels = mapDiff(oldT.Labels, newT.Labels)
	s.Annotations, s.RemovedAnnotations = mapDiff(oldT.Annotations, newT.Annotations)
	s.EnvFromMetadata = containersReadingMetadata(&newT.Spec, s.changedKeys())
	return s, true
}

// Empty reports whether the update changes nothing on the pod itself.
func (s *Spec) Empty() bool {
	return len(s.ContainerImages) == 0 && len(s.Labels) == 0 && len(s.Annotations) == 0 &&
		len(s.RemovedLabels) == 0 && len(s.RemovedAnnotations) == 0
}

// onlyImagesDiffer compares the specs with the old images replaced by the new ones.
func onlyImagesDiffer(oldS, newS *corev1.PodSpec) bool {
	if len(oldS.Containers) != len(newS.Containers) {
		return false
	}
	o := oldS.DeepCopy()
	for i := range o.Containers {
		if o.Containers[i].Name != newS.Containers[i].Name {
			return false
		}
		o.Containers[i].Image = newS.Containers[i].Image
	}
	return equality.Semantic.DeepEqual(o, newS)
}

func changedImages(oldS, newS *corev1.PodSpec) map[string]string {
	images := map[string]string{}
	for i, c := range newS.Containers {
		if oldS.Containers[i].Image != c.Image {
			images[c.Name] = c.Image
		}
	}
	return images
}

// mapDiff returns the entries of newM that are new or changed, and the keys of oldM that newM dropped.
func mapDiff(oldM, newM map[string]string) (map[string]string, []string) {
	set := map[string]string{}
	for k, v := range newM {
		if ov, ok := oldM[k]; !ok || ov != v {
			set[k] = v
		}
	}
	var removed []string
	for k := range oldM {
		if _, ok := newM[k]; !ok {
			removed = append(removed, k)
		}
	}
	return set, removed
}

// changedKeys are the labels and annotations ("labels/<key>", "annotations/<key>") the update changes.
func (s *Spec) changedKeys() map[string]bool {
	keys := map[string]bool{}
	add := func(kind string, m map[string]string, removed []string) {
		for k := range maps.Keys(m) {
			keys[kind+"/"+k] = true
		}
		for _, k := range removed {
			keys[kind+"/"+k] = true
		}
	}
	add("labels", s.Labels, s.RemovedLabels)
	add("annotations", s.Annotations, s.RemovedAnnotations)
	return keys
}

func containersReadingMetadata(spec *corev1.PodSpec, changed map[string]bool) []string {
	var names []string
	for _, c := range spec.Containers {
		if readsAny(c.Env, changed) {
			names = append(names, c.Name)
		}
	}
	return names
}

func readsAny(env []corev1.EnvVar, changed map[string]bool) bool {
	for _, e := range env {
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
			continue
		}
		if kind, key, ok := metadataKey(e.ValueFrom.FieldRef.FieldPath); ok && changed[kind+"/"+key] {
			return true
		}
	}
	return false
}
