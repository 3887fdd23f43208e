package admission

import (
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/intorpercent"
)

const nameMaxLen = 63

var (
	specPath   = field.NewPath("spec")
	namePath   = field.NewPath("metadata", "name")
	nameFormat = `^[a-zA-Z0-9\-]+$`
	nameRegexp = regexp.MustCompile(nameFormat)
)

// Cluster is what the validation reads from the cluster; the webhook handler gathers it.
type Cluster struct {
	// SidecarSets are the stored SidecarSets; the one validated, if among them, is skipped by name.
	SidecarSets []kruiseappsv1alpha1.SidecarSet
	// NamespaceLabels holds the labels of the namespaces SidecarSets name in spec.namespace, for comparing
	// them with namespaceSelectors; a namespace missing here does not exist.
	NamespaceLabels map[string]map[string]string
	// Whitelist is the JSON of the patchPodMetadata whitelist (WhitelistKey of the WhitelistConfigMap), ""
	// when none is configured.
	Whitelist string
}

// Options are the feature gates the rules depend on, upstream's.
type Options struct {
	// PatchPodMetadataDefaultsAllowed (gate SidecarSetPatchPodMetadataDefaultsAllowed, off by default) lets
	// patchPodMetadata set any annotation when no whitelist rule applies.
	PatchPodMetadataDefaultsAllowed bool
}

// Validate checks a SidecarSet being created (old nil) or updated from old, after defaulting, with upstream's
// rules. On update, errors old already had do not block the update, so that a SidecarSet stored before a
// rule existed (or before another SidecarSet came to conflict with it) can still be changed; the rules of
// updates themselves (validateUpdate) always apply.
func Validate(set, old *kruiseappsv1alpha1.SidecarSet, c Cluster, opts Options) field.ErrorList {
	if set == nil {
		return field.ErrorList{field.Required(specPath, "a SidecarSet is required")}
	}
	errs := validate(set, c, opts)
	if old == nil {
		return errs
	}
	return append(rolloutadmission.Ratchet(errs, validate(old, c, opts)), validateUpdate(set, old)...)
}

func validate(set *kruiseappsv1alpha1.SidecarSet, c Cluster, opts Options) field.ErrorList {
	errs := validateName(set.Name)
	errs = append(errs, validateSpec(set)...)
	errs = append(errs, validatePatchPodMetadata(set, c.Whitelist, opts)...)
	errs = append(errs, validateCanary(set, c.SidecarSets)...)
	return append(errs, validateConflicts(set, c)...)
}

// validateName: upstream allows letters, digits and '-' only, at most 63 of them (the name is a key of pod
// annotations and a ControllerRevision name prefix).
func validateName(name string) field.ErrorList {
	var errs field.ErrorList
	if name != "" && !nameRegexp.MatchString(name) {
		errs = append(errs, field.Invalid(namePath, name,
			validation.RegexError("sidecarset name must consist of alphanumeric characters or '-'", nameFormat, "example-com")))
	}
	if len(name) > nameMaxLen {
		errs = append(errs, field.Invalid(namePath, name, validation.MaxLenError(nameMaxLen)))
	}
	return errs
}

func validateSpec(set *kruiseappsv1alpha1.SidecarSet) field.ErrorList {
	s := &set.Spec
	var errs field.ErrorList
	if s.Selector == nil {
		errs = append(errs, field.Required(specPath.Child("selector"), "no selector defined for SidecarSet"))
	} else {
		errs = append(errs, validateSelector(s.Selector, specPath.Child("selector"))...)
	}
	errs = append(errs, validateNamespaces(s)...)
	errs = append(errs, validateInjectionStrategy(&s.InjectionStrategy, specPath.Child("injectionStrategy"))...)
	errs = append(errs, validateUpdateStrategy(s, specPath.Child("updateStrategy"))...)
	volumes, volumeErrs := validateVolumes(s.Volumes, specPath.Child("volumes"))
	errs = append(errs, volumeErrs...)
	return append(errs, validateContainers(s, volumes)...)
}

// validateSelector: a valid selector that selects something; an empty one would select every pod.
func validateSelector(sel *metav1.LabelSelector, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, sel, "empty selector is not valid for sidecarset."))
	}
	return errs
}

// validateNamespaces: the deprecated namespace and its successor namespaceSelector exclude each other.
func validateNamespaces(s *kruiseappsv1alpha1.SidecarSetSpec) field.ErrorList {
	if s.Namespace != "" && s.NamespaceSelector != nil {
		return field.ErrorList{field.Forbidden(specPath.Child("namespaceSelector"), "namespace and namespaceSelector are mutually exclusive")}
	}
	if s.NamespaceSelector != nil {
		return validateSelector(s.NamespaceSelector, specPath.Child("namespaceSelector"))
	}
	return nil
}

var revisionPolicies = []string{string(kruiseappsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy), string(kruiseappsv1alpha1.PartialSidecarSetInjectRevisionPolicy)}

// validateInjectionStrategy: a revision to inject is named by revisionName or customVersion. Upstream also
// requires the named ControllerRevision to exist; that is not checked here, since where a SidecarSet's
// revisions are kept is the controller's choice.
func validateInjectionStrategy(is *kruiseappsv1alpha1.SidecarSetInjectionStrategy, p *field.Path) field.ErrorList {
	r := is.Revision
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.RevisionName == nil && r.CustomVersion == nil {
		errs = append(errs, field.Required(p.Child("revision"), "revisionName and customVersion cannot be empty simultaneously"))
	}
	switch r.Policy {
	case "", kruiseappsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy, kruiseappsv1alpha1.PartialSidecarSetInjectRevisionPolicy:
	default:
		errs = append(errs, field.NotSupported(p.Child("revision", "policy"), r.Policy, revisionPolicies))
	}
	return errs
}

var updateTypes = []string{string(kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType), string(kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType)}

// validateUpdateStrategy: upstream checks the rolling update's fields only when pods are updated at all.
// Native sidecars (init containers with restartPolicy Always) cannot be updated in place, so a SidecarSet
// holding one must not roll.
func validateUpdateStrategy(s *kruiseappsv1alpha1.SidecarSetSpec, p *field.Path) field.ErrorList {
	u := &s.UpdateStrategy
	var errs field.ErrorList
	switch u.Type {
	case kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType:
		return nil
	case kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType:
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), u.Type, updateTypes)}
	}
	for i, c := range s.InitContainers {
		if isNativeSidecar(&c) {
			errs = append(errs, field.Forbidden(specPath.Child("initContainers").Index(i).Child("restartPolicy"),
				"The initContainer in-place upgrade is not currently supported: set updateStrategy.type NotUpdate"))
		}
	}
	if partitionIsSet(u.Partition) && u.Selector != nil {
		errs = append(errs, field.Forbidden(p.Child("selector"), "Partition and Selector cannot be used together"))
	}
	if u.Selector != nil {
		errs = append(errs, validateSelector(u.Selector, p.Child("selector"))...)
	}
	return append(errs, validateRolling(u, p)...)
}

func validateRolling(u *kruiseappsv1alpha1.SidecarSetUpdateStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u.Partition != nil {
		errs = append(errs, intorpercent.Validate(*u.Partition, p.Child("partition"))...)
	}
	if u.MaxUnavailable != nil {
		errs = append(errs, intorpercent.Validate(*u.MaxUnavailable, p.Child("maxUnavailable"))...)
	}
	if err := u.PriorityStrategy.Validate(); err != nil {
		errs = append(errs, field.Invalid(p.Child("priorityStrategy"), field.OmitValueType{}, err.Error()))
	}
	if err := u.ScatterStrategy.Validate(); err != nil {
		errs = append(errs, field.Invalid(p.Child("scatterStrategy"), field.OmitValueType{}, err.Error()))
	}
	return errs
}

// partitionIsSet: a partition other than the integer 0 (any string counts, as upstream reads it).
func partitionIsSet(v *intstr.IntOrString) bool {
	return v != nil && (v.Type == intstr.String || v.IntVal != 0)
}
