package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate makes the cheap structural checks of a workload's pod template at p, with the workload's
// volumeClaimTemplates at claimsPath: the apiserver validates every pod the controller creates in full, so only
// what would make every pod creation fail, or what a long-running workload cannot run, is checked. kind names
// the workload in messages, as upstream's webhooks do ("cloneset", "StatefulSet").
func Validate(t *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim, kind string, p, claimsPath *field.Path) field.ErrorList {
	errs := validatePodFields(&t.Spec, kind, p.Child("spec"))
	return append(errs, ValidateStructure(t, claims, p, claimsPath)...)
}

// ValidateStructure is Validate without the long-running workloads' rules (restartPolicy Always, no
// activeDeadlineSeconds): what a job's pod template must pass too.
func ValidateStructure(t *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim, p, claimsPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, p.Child("metadata", "labels"))
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(t.Annotations, p.Child("metadata", "annotations"))...)
	sp := p.Child("spec")
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	volumes, volumeErrs := volumeNames(&t.Spec, claims, sp.Child("volumes"), claimsPath)
	errs = append(errs, volumeErrs...)
	names := sets.New[string]()
	errs = append(errs, ValidateContainers(t.Spec.InitContainers, names, volumes, sp.Child("initContainers"))...)
	if len(t.Spec.Containers) == 0 {
		errs = append(errs, field.Required(sp.Child("containers"), ""))
	}
	return append(errs, ValidateContainers(t.Spec.Containers, names, volumes, sp.Child("containers"))...)
}

// validatePodFields checks the pod-level fields a long-running workload constrains.
func validatePodFields(s *corev1.PodSpec, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.RestartPolicy != "" && s.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), s.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(p.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// volumeNames checks the names of the template's volumes and of the claim templates, which the controller
// adds to every pod as volumes: all must be unique. It returns them all.
func volumeNames(s *corev1.PodSpec, claims []corev1.PersistentVolumeClaim, p, claimsPath *field.Path) (sets.Set[string], field.ErrorList) {
	names := sets.New[string]()
	var errs field.ErrorList
	for i, v := range s.Volumes {
		errs = append(errs, ValidateUniqueLabel(v.Name, names, p.Index(i).Child("name"))...)
	}
	for i, c := range claims {
		errs = append(errs, ValidateUniqueLabel(c.Name, names, claimsPath.Index(i).Child("metadata", "name"))...)
	}
	return names, errs
}

// ValidateContainers checks the containers at p: names (unique across init and app containers, through
// names), images, and that every volume mount names one of volumes.
func ValidateContainers(cs []corev1.Container, names, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range cs {
		c := &cs[i]
		cp := p.Index(i)
		errs = append(errs, ValidateUniqueLabel(c.Name, names, cp.Child("name"))...)
		if c.Image == "" {
			errs = append(errs, field.Required(cp.Child("image"), ""))
		}
		for j, m := range c.VolumeMounts {
			if !volumes.Has(m.Name) {
				errs = append(errs, field.NotFound(cp.Child("volumeMounts").Index(j).Child("name"), m.Name))
			}
		}
	}
	return errs
}

// ValidateUniqueLabel requires name to be a DNS-1123 label not yet in seen, and adds it.
func ValidateUniqueLabel(name string, seen sets.Set[string], p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if seen.Has(name) {
		errs = append(errs, field.Duplicate(p, name))
	}
	seen.Insert(name)
	return errs
}
