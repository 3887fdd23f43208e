package admission

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var podsToDeletePath = specPath.Child("scaleStrategy", "podsToDelete")

// NewPodsToDelete returns the names in cs's spec.scaleStrategy.podsToDelete that old (nil on create) did
// not list: the pods Validate looks up. Names the controller already handled stay valid when their pods
// are gone.
func NewPodsToDelete(cs, old *kruiseappsv1alpha1.CloneSet) []string {
	if cs == nil {
		return nil
	}
	var known sets.Set[string]
	if old != nil {
		known = sets.New(old.Spec.ScaleStrategy.PodsToDelete...)
	}
	var names []string
	for _, n := range cs.Spec.ScaleStrategy.PodsToDelete {
		if !known.Has(n) {
			names = append(names, n)
		}
	}
	return names
}

// validatePodsToDelete requires distinct names and, for the new ones, existing pods that this CloneSet
// controls and that are not terminating.
func validatePodsToDelete(cs, old *kruiseappsv1alpha1.CloneSet, pods map[string]*corev1.Pod) field.ErrorList {
	names := cs.Spec.ScaleStrategy.PodsToDelete
	if errs := duplicates(names); len(errs) > 0 {
		return errs
	}
	fresh := sets.New(NewPodsToDelete(cs, old)...)
	var errs field.ErrorList
	for i, name := range names {
		if !fresh.Has(name) {
			continue
		}
		if detail := podFault(pods[name], cs); detail != "" {
			errs = append(errs, field.Invalid(podsToDeletePath.Index(i), name, detail))
		}
	}
	return errs
}

func duplicates(names []string) field.ErrorList {
	seen := sets.New[string]()
	var errs field.ErrorList
	for i, name := range names {
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(podsToDeletePath.Index(i), name))
		}
		seen.Insert(name)
	}
	return errs
}

// podFault says why pod may not be named in podsToDelete, "" if it may.
func podFault(pod *corev1.Pod, cs *kruiseappsv1alpha1.CloneSet) string {
	switch {
	case pod == nil:
		return "pod not found"
	case pod.DeletionTimestamp != nil:
		return "pod is already terminating"
	}
	if owner := metav1.GetControllerOf(pod); owner == nil || owner.UID == "" || owner.UID != cs.UID {
		return "pod is not owned by this CloneSet"
	}
	return ""
}
