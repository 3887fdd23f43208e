package admission

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

var specPath = field.NewPath("spec")

// notForEphemeral is Kubernetes' message for the container fields an ephemeral container cannot set.
const notForEphemeral = "cannot be set for an Ephemeral Container"

// Validate checks an EphemeralJob being created (old nil) or updated from old with upstream's rules: a
// valid selector is required, and each template container must be a valid ephemeral container as the
// apiserver would accept it into a pod. On update, errors old already had do not block the update, so that
// a job stored before a rule existed can still be changed and have its finalizer removed.
func Validate(job, old *kruiseappsv1alpha1.EphemeralJob) field.ErrorList {
	if job == nil {
		return field.ErrorList{field.Required(specPath, "an EphemeralJob is required")}
	}
	errs := validateSpec(&job.Spec)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, validateSpec(&old.Spec))
	}
	return errs
}

func validateSpec(s *kruiseappsv1alpha1.EphemeralJobSpec) field.ErrorList {
	p := specPath.Child("selector")
	var errs field.ErrorList
	if s.Selector == nil {
		errs = append(errs, field.Required(p, "selector must be not empty"))
	} else {
		errs = metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p)
	}
	return append(errs, validateContainers(s.Template.EphemeralContainers, specPath.Child("template", "ephemeralContainers"))...)
}

// validateContainers applies Kubernetes' ephemeral container rules that do not depend on the target pod:
// its volumes and containers are unknown here, so volume mounts and targetContainerName are checked only
// where the pod is (the apiserver refuses the injection then).
func validateContainers(cs []corev1.EphemeralContainer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i := range cs {
		c := &cs[i]
		cp := p.Index(i)
		errs = append(errs, podtemplate.ValidateUniqueLabel(c.Name, seen, cp.Child("name"))...)
		if c.Image == "" {
			errs = append(errs, field.Required(cp.Child("image"), ""))
		}
		errs = append(errs, forbiddenFields(&c.EphemeralContainerCommon, cp)...)
		errs = append(errs, validateMounts(c.VolumeMounts, cp.Child("volumeMounts"))...)
		errs = append(errs, validateEnv(c.Env, cp.Child("env"))...)
		errs = append(errs, validatePolicies(&c.EphemeralContainerCommon, cp)...)
	}
	return errs
}

// forbiddenFields are the container fields Kubernetes refuses in an ephemeral container: they would make
// the pod rely on it (ports, resources, probes, lifecycle hooks, restarts).
func forbiddenFields(c *corev1.EphemeralContainerCommon, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    any
	}{
		{"ports", c.Ports}, {"resources", c.Resources}, {"resizePolicy", c.ResizePolicy}, {"restartPolicy", c.RestartPolicy},
		{"restartPolicyRules", c.RestartPolicyRules}, {"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe},
		{"startupProbe", c.StartupProbe}, {"lifecycle", c.Lifecycle},
	} {
		if !reflect.ValueOf(f.v).IsZero() {
			errs = append(errs, field.Forbidden(p.Child(f.name), notForEphemeral))
		}
	}
	return errs
}

// validateMounts refuses subPath and subPathExpr: their bind mounts would outlive the container until the pod
// ends.
func validateMounts(ms []corev1.VolumeMount, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, m := range ms {
		if m.SubPath != "" {
			errs = append(errs, field.Forbidden(p.Index(i).Child("subPath"), notForEphemeral))
		}
		if m.SubPathExpr != "" {
			errs = append(errs, field.Forbidden(p.Index(i).Child("subPathExpr"), notForEphemeral))
		}
	}
	return errs
}

func validateEnv(env []corev1.EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		np := p.Index(i).Child("name")
		if e.Name == "" {
			errs = append(errs, field.Required(np, ""))
			continue
		}
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(np, e.Name, msg))
		}
	}
	return errs
}

// validatePolicies checks the enumerations a container may leave empty (the apiserver defaults them).
func validatePolicies(c *corev1.EphemeralContainerCommon, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	pulls := []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}
	if c.ImagePullPolicy != "" && !sets.New(pulls...).Has(string(c.ImagePullPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, pulls))
	}
	messages := []string{string(corev1.TerminationMessageReadFile), string(corev1.TerminationMessageFallbackToLogsOnError)}
	if c.TerminationMessagePolicy != "" && !sets.New(messages...).Has(string(c.TerminationMessagePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, messages))
	}
	return errs
}
