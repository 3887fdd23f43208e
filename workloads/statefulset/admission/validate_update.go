package admission

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

const mutableFieldsMessage = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', " +
	"'reserveOrdinals', 'lifecycle', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', " +
	"'volumeClaimTemplates', 'volumeClaimUpdateStrategy', 'scaleStrategy' and 'updateStrategy' are forbidden"

const inPlaceOnlyMessage = "only image changes are allowed with podUpdatePolicy InPlaceOnly"

// defaultClassAnnotation marks the default storage class, which serves claims that name none.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

func validateUpdate(s, old *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	errs := validateImmutable(s, old)
	errs = append(errs, validateInPlaceOnly(s, old)...)
	return append(errs, validateClaimTemplatesUpdate(s, old)...)
}

// validateImmutable names each immutable field that changed: the selector, the service, the pod management
// policy, and the spec as a whole for any other field outside the mutable ones.
func validateImmutable(s, old *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	var errs field.ErrorList
	immutable := func(changed bool, p *field.Path) {
		if changed {
			errs = append(errs, field.Forbidden(p, "field is immutable"))
		}
	}
	immutable(!equality.Semantic.DeepEqual(s.Selector, old.Selector), specPath.Child("selector"))
	immutable(s.ServiceName != old.ServiceName, specPath.Child("serviceName"))
	immutable(s.PodManagementPolicy != old.PodManagementPolicy, specPath.Child("podManagementPolicy"))
	rest := s.DeepCopy()
	rest.Selector, rest.ServiceName, rest.PodManagementPolicy = old.Selector, old.ServiceName, old.PodManagementPolicy
	rest.Replicas, rest.Ordinals, rest.Template, rest.ReserveOrdinals = old.Replicas, old.Ordinals, old.Template, old.ReserveOrdinals
	rest.Lifecycle, rest.RevisionHistoryLimit = old.Lifecycle, old.RevisionHistoryLimit
	rest.PersistentVolumeClaimRetentionPolicy, rest.VolumeClaimTemplates = old.PersistentVolumeClaimRetentionPolicy, old.VolumeClaimTemplates
	rest.VolumeClaimUpdateStrategy, rest.ScaleStrategy, rest.UpdateStrategy = old.VolumeClaimUpdateStrategy, old.ScaleStrategy, old.UpdateStrategy
	if !equality.Semantic.DeepEqual(*rest, *old) {
		errs = append(errs, field.Forbidden(specPath, mutableFieldsMessage))
	}
	return errs
}

// validateInPlaceOnly refuses a template change InPlaceOnly could not apply, naming the first field that
// differs beyond the images.
func validateInPlaceOnly(s, old *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	ru := s.UpdateStrategy.RollingUpdate
	if ru == nil || ru.PodUpdatePolicy != kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType {
		return nil
	}
	if d := podtemplate.FirstNonImageDifference(&old.Template.Spec, &s.Template.Spec, specPath.Child("template", "spec")); d != nil {
		return field.ErrorList{field.Forbidden(d, inPlaceOnlyMessage)}
	}
	return nil
}

// validateClaimTemplatesUpdate allows, when claims follow their templates (OnPodRollingUpdate), only a
// change of the templates' storage sizes: no template added, removed or renamed, no other class or access
// modes.
func validateClaimTemplatesUpdate(s, old *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	if s.VolumeClaimUpdateStrategy.Type != kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType {
		return nil
	}
	p := specPath.Child("volumeClaimTemplates")
	if len(s.VolumeClaimTemplates) != len(old.VolumeClaimTemplates) {
		return field.ErrorList{field.Forbidden(p, "volumeClaimTemplates can not be added or deleted with volumeClaimUpdateStrategy OnPodRollingUpdate")}
	}
	var errs field.ErrorList
	for i := range s.VolumeClaimTemplates {
		t := &s.VolumeClaimTemplates[i]
		o := oldTemplate(old, t.Name)
		switch {
		case o == nil:
			errs = append(errs, field.Forbidden(p.Index(i).Child("metadata", "name"), "volumeClaimTemplates can not be renamed"))
		case !plan.SameButSize(o, t):
			errs = append(errs, field.Forbidden(p.Index(i).Child("spec"),
				"only the storage size of a volumeClaimTemplate can change with volumeClaimUpdateStrategy OnPodRollingUpdate"))
		}
	}
	return errs
}

func oldTemplate(old *kruiseappsv1beta1.StatefulSetSpec, name string) *corev1.PersistentVolumeClaim {
	for i := range old.VolumeClaimTemplates {
		if old.VolumeClaimTemplates[i].Name == name {
			return &old.VolumeClaimTemplates[i]
		}
	}
	return nil
}

// ValidateExpansion refuses, when claims follow their templates, a larger storage size for a template whose
// storage class does not allow volume expansion; classes are the cluster's storage classes. A template of
// no class uses the default class (none: nothing to check).
func ValidateExpansion(set, old *kruiseappsv1beta1.StatefulSet, classes []storagev1.StorageClass) field.ErrorList {
	if set == nil || old == nil || set.Spec.VolumeClaimUpdateStrategy.Type != kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType {
		return nil
	}
	var errs field.ErrorList
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		o := oldTemplate(&old.Spec, t.Name)
		if o == nil || !plan.NeedsExpand(o, t) {
			continue
		}
		p := specPath.Child("volumeClaimTemplates").Index(i).Child("spec")
		errs = append(errs, expansionAllowed(t, classes, p)...)
	}
	return errs
}

func expansionAllowed(t *corev1.PersistentVolumeClaim, classes []storagev1.StorageClass, p *field.Path) field.ErrorList {
	class := classOf(t.Spec.StorageClassName, classes)
	switch {
	case class == nil && t.Spec.StorageClassName != nil:
		return field.ErrorList{field.NotFound(p.Child("storageClassName"), *t.Spec.StorageClassName)}
	case class == nil || class.AllowVolumeExpansion == nil || *class.AllowVolumeExpansion:
		return nil
	}
	return field.ErrorList{field.Forbidden(p.Child("resources", "requests", "storage"),
		fmt.Sprintf("storage class %s does not support volume expansion", class.Name))}
}

// classOf is the named class, or the default one (the newest of several) for no name.
func classOf(name *string, classes []storagev1.StorageClass) *storagev1.StorageClass {
	var found *storagev1.StorageClass
	for i := range classes {
		c := &classes[i]
		switch {
		case name != nil && c.Name == *name:
			return c
		case name == nil && c.Annotations[defaultClassAnnotation] == "true" &&
			(found == nil || found.CreationTimestamp.Before(&c.CreationTimestamp)):
			found = c
		}
	}
	return found
}
