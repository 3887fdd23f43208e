package admission

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution/internal/plan"
)

var (
	specPath     = field.NewPath("spec")
	resourcePath = specPath.Child("resource")
	targetsPath  = specPath.Child("targets")
)

// Validate checks a ResourceDistribution being created (old nil) or updated from old with upstream's rules.
// On update, errors old already had do not block the update (but a changed resource kind or name does), so
// that a distribution stored before a rule existed can still be changed and deleted.
func Validate(rd, old *kruiseappsv1alpha1.ResourceDistribution) field.ErrorList {
	if rd == nil {
		return field.ErrorList{field.Required(specPath, "a ResourceDistribution is required")}
	}
	errs := validate(rd)
	if old == nil {
		return errs
	}
	errs = rolloutadmission.Ratchet(errs, validate(old))
	return append(errs, validateImmutable(rd, old)...)
}

func validate(rd *kruiseappsv1alpha1.ResourceDistribution) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&rd.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateResource(rd.Spec.Resource.Raw)...)
	return append(errs, validateTargets(&rd.Spec.Targets)...)
}

// validateResource: a Secret or ConfigMap of v1 whose metadata and keys the API server would accept in any
// namespace. Upstream makes the API server judge by a dry-run create; this checks what the copies' creates
// would otherwise fail on, without a call. A namespace in the resource is allowed and ignored.
func validateResource(raw []byte) field.ErrorList {
	res, err := plan.Decode(raw)
	if err != nil {
		// The value is left out: a Secret's data does not belong in an error message.
		return field.ErrorList{field.Invalid(resourcePath, field.OmitValueType{}, err.Error())}
	}
	errs := validateResourceMeta(res.Object)
	switch obj := res.Object.(type) {
	case *corev1.ConfigMap:
		errs = append(errs, validateKeys(keysOf(obj.Data), resourcePath.Child("data"))...)
		errs = append(errs, validateKeys(keysOf(obj.BinaryData), resourcePath.Child("binaryData"))...)
		errs = append(errs, validateDistinct(obj)...)
	case *corev1.Secret:
		errs = append(errs, validateKeys(keysOf(obj.Data), resourcePath.Child("data"))...)
		errs = append(errs, validateKeys(keysOf(obj.StringData), resourcePath.Child("stringData"))...)
	}
	return errs
}

// validateResourceMeta checks the resource's metadata as the copies will carry it: in some namespace, under
// a name of its own (a generated name would differ in every namespace).
func validateResourceMeta(obj client.Object) field.ErrorList {
	p := resourcePath.Child("metadata")
	if obj.GetName() == "" {
		return field.ErrorList{field.Required(p.Child("name"), "the resource needs a name")}
	}
	meta := objectMeta(obj)
	meta.Namespace = metav1.NamespaceDefault
	return apimachineryvalidation.ValidateObjectMeta(meta, true, apimachineryvalidation.NameIsDNSSubdomain, p)
}

// objectMeta is a copy of the metadata of a Secret or ConfigMap.
func objectMeta(obj client.Object) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o.ObjectMeta.DeepCopy()
	case *corev1.Secret:
		return o.ObjectMeta.DeepCopy()
	}
	return &metav1.ObjectMeta{}
}

func validateKeys(keys []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range keys {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
	}
	return errs
}

// validateDistinct: a ConfigMap key is in data or in binaryData, not both.
func validateDistinct(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	for _, k := range keysOf(cm.BinaryData) {
		if _, ok := cm.Data[k]; ok {
			errs = append(errs, field.Invalid(resourcePath.Child("binaryData"), k, "duplicate of key present in data"))
		}
	}
	return errs
}

// validateImmutable: the copies are found by the resource's kind and name, so neither changes (upstream's
// rule and message). A resource that does not decode is reported by validate already.
func validateImmutable(rd, old *kruiseappsv1alpha1.ResourceDistribution) field.ErrorList {
	cur, err1 := plan.Decode(rd.Spec.Resource.Raw)
	prev, err2 := plan.Decode(old.Spec.Resource.Raw)
	if err1 != nil || err2 != nil {
		return nil
	}
	if cur.Kind != prev.Kind || cur.APIVersion != prev.APIVersion || cur.Name() != prev.Name() {
		return field.ErrorList{field.Invalid(resourcePath, fmt.Sprintf("%s %s %s", cur.APIVersion, cur.Kind, cur.Name()),
			"resource apiVersion, kind, and name are immutable")}
	}
	return nil
}
