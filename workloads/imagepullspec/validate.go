package imagepullspec

import (
	"strconv"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var (
	completionPolicyTypes = []string{string(kruiseappsv1alpha1.Always), string(kruiseappsv1alpha1.Never)}
	imagePullPolicies     = []string{string(kruiseappsv1alpha1.PullAlways), string(kruiseappsv1alpha1.PullIfNotPresent)}
)

// ValidatePullJob checks an ImagePullJob's spec, at p, with upstream's rules: an image reference the node
// agent can pull, nodes chosen one way at most, and a completion policy of Never without a deadline or TTL;
// and with the rules the controller relies on (parallelism, the pull policy, the selectors and secret names).
func ValidatePullJob(spec *kruiseappsv1alpha1.ImagePullJobSpec, p *field.Path) field.ErrorList {
	errs := validateImage(spec.Image, p.Child("image"))
	return append(errs, validateTemplate(&spec.ImagePullJobTemplate, p)...)
}

// ValidateListPullJob checks an ImageListPullJob's spec, at p, as ValidatePullJob checks each of its
// ImagePullJobs, and that it lists images, each once.
func ValidateListPullJob(spec *kruiseappsv1alpha1.ImageListPullJobSpec, p *field.Path) field.ErrorList {
	images := p.Child("images")
	var errs field.ErrorList
	if len(spec.Images) == 0 {
		errs = append(errs, field.Required(images, "at least one image to pull"))
	}
	seen := map[string]bool{}
	for i, image := range spec.Images {
		if seen[image] {
			errs = append(errs, field.Duplicate(images.Index(i), image))
		}
		seen[image] = true
		errs = append(errs, validateImage(image, images.Index(i))...)
	}
	return append(errs, validateTemplate(&spec.ImagePullJobTemplate, p)...)
}

// validateImage: a reference the agent can split into a NodeImage image and tag, as upstream parses it.
func validateImage(image string, p *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(p, "the image to pull, name:tag or name@digest")}
	}
	if _, _, err := SplitImage(image); err != nil {
		return field.ErrorList{field.Invalid(p, image, "not an image reference the node agent can pull: "+err.Error())}
	}
	return nil
}

func validateTemplate(t *kruiseappsv1alpha1.ImagePullJobTemplate, p *field.Path) field.ErrorList {
	errs := validateSelectors(t, p)
	errs = append(errs, validateParallelism(t.Parallelism, p.Child("parallelism"))...)
	errs = append(errs, validatePullPolicy(t.PullPolicy, p.Child("pullPolicy"))...)
	errs = append(errs, validateCompletionPolicy(&t.CompletionPolicy, p.Child("completionPolicy"))...)
	errs = append(errs, validateSecretNames(t.PullSecrets, p.Child("pullSecrets"))...)
	if pp := t.ImagePullPolicy; pp != "" && pp != kruiseappsv1alpha1.PullAlways && pp != kruiseappsv1alpha1.PullIfNotPresent {
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), pp, imagePullPolicies))
	}
	return errs
}

// validateSelectors: nodes by names or by labels (upstream's rule), and by a selector or by pods, never both.
func validateSelectors(t *kruiseappsv1alpha1.ImagePullJobTemplate, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	opts := metav1validation.LabelSelectorValidationOptions{}
	if s := t.Selector; s != nil {
		p := spec.Child("selector")
		if len(s.Names) > 0 && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
			errs = append(errs, field.Invalid(p, s, "can not set both names and labelSelector in this spec.selector"))
		}
		for i, name := range s.Names {
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(p.Child("names").Index(i), name, msg))
			}
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(&s.LabelSelector, opts, p)...)
	}
	if s := t.PodSelector; s != nil {
		p := spec.Child("podSelector")
		if t.Selector != nil {
			errs = append(errs, field.Forbidden(p, "can not set both spec.selector and spec.podSelector"))
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(&s.LabelSelector, opts, p)...)
	}
	return errs
}

// validateParallelism: a whole number of nodes, 0 or more (a string holds its digits, no percentage).
func validateParallelism(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	switch {
	case v == nil:
		return nil
	case v.Type == intstr.String:
		if n, err := strconv.Atoi(v.StrVal); err != nil || n < 0 {
			return field.ErrorList{field.Invalid(p, v.StrVal, "must be a whole number of nodes, 0 or more")}
		}
	case v.IntVal < 0:
		return field.ErrorList{field.Invalid(p, v.IntVal, validation.InclusiveRangeError(0, int(^uint32(0)>>1)))}
	}
	return nil
}

func validatePullPolicy(pp *kruiseappsv1alpha1.PullPolicy, p *field.Path) field.ErrorList {
	if pp == nil {
		return nil
	}
	var errs field.ErrorList
	if pp.TimeoutSeconds != nil && *pp.TimeoutSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *pp.TimeoutSeconds, "must be greater than 0"))
	}
	if pp.BackoffLimit != nil && *pp.BackoffLimit < 0 {
		errs = append(errs, field.Invalid(p.Child("backoffLimit"), *pp.BackoffLimit, "must be greater than or equal to 0"))
	}
	return errs
}

// validateCompletionPolicy: a job of policy Never never finishes, so neither a deadline nor a TTL applies
// (upstream's message).
func validateCompletionPolicy(cp *kruiseappsv1alpha1.CompletionPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch cp.Type {
	case "", kruiseappsv1alpha1.Always:
	case kruiseappsv1alpha1.Never:
		const msg = "activeDeadlineSeconds and ttlSecondsAfterFinished can only work with Always CompletionPolicyType"
		if cp.ActiveDeadlineSeconds != nil {
			errs = append(errs, field.Forbidden(p.Child("activeDeadlineSeconds"), msg))
		}
		if cp.TTLSecondsAfterFinished != nil {
			errs = append(errs, field.Forbidden(p.Child("ttlSecondsAfterFinished"), msg))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), cp.Type, completionPolicyTypes))
	}
	if cp.ActiveDeadlineSeconds != nil && *cp.ActiveDeadlineSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *cp.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	if cp.TTLSecondsAfterFinished != nil && *cp.TTLSecondsAfterFinished < 0 {
		errs = append(errs, field.Invalid(p.Child("ttlSecondsAfterFinished"), *cp.TTLSecondsAfterFinished, "must be greater than or equal to 0"))
	}
	return errs
}

func validateSecretNames(names []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, name := range names {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(p.Index(i), name, msg))
		}
	}
	return errs
}
