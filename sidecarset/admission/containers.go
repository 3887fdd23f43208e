package admission

import (
	"reflect"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

var (
	injectPolicies = []string{string(kruiseappsv1alpha1.BeforeAppContainerType), string(kruiseappsv1alpha1.AfterAppContainerType)}
	sharePolicies  = []string{string(kruiseappsv1alpha1.ShareVolumePolicyEnabled), string(kruiseappsv1alpha1.ShareVolumePolicyDisabled)}
	upgradeTypes   = []string{string(kruiseappsv1alpha1.SidecarContainerColdUpgrade), string(kruiseappsv1alpha1.SidecarContainerHotUpgrade)}
	// fieldPaths are the pod fields transferEnv.sourceContainerNameFrom.fieldRef may read, upstream's.
	fieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name"}
)

// validateVolumes: unique DNS-label names and exactly one source each, as the pod's volumes must have once
// injected. It returns the names.
func validateVolumes(volumes []corev1.Volume, p *field.Path) (sets.Set[string], field.ErrorList) {
	names := sets.New[string]()
	var errs field.ErrorList
	for i := range volumes {
		vp := p.Index(i)
		errs = append(errs, podtemplate.ValidateUniqueLabel(volumes[i].Name, names, vp.Child("name"))...)
		switch n := volumeSources(&volumes[i].VolumeSource); {
		case n == 0:
			errs = append(errs, field.Required(vp, "must specify a volume type"))
		case n > 1:
			errs = append(errs, field.Forbidden(vp, "may not specify more than 1 volume type"))
		}
	}
	return names, errs
}

// volumeSources counts the sources set in a volume: VolumeSource is a struct of pointers, one per type.
func volumeSources(src *corev1.VolumeSource) int {
	v := reflect.ValueOf(src).Elem()
	n := 0
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// validateContainers: at least one container or init container, names unique across both, and each
// container's own rules.
func validateContainers(s *kruiseappsv1alpha1.SidecarSetSpec, volumes sets.Set[string]) field.ErrorList {
	if len(s.InitContainers)+len(s.Containers) == 0 {
		return field.ErrorList{field.Required(specPath.Child("containers"), "no initContainer or container defined for SidecarSet")}
	}
	names := sets.New[string]()
	initPath, path := specPath.Child("initContainers"), specPath.Child("containers")
	errs := podtemplate.ValidateContainers(plain(s.InitContainers), names, volumes, initPath)
	errs = append(errs, podtemplate.ValidateContainers(plain(s.Containers), names, volumes, path)...)
	for i := range s.InitContainers {
		errs = append(errs, validateInitContainer(&s.InitContainers[i], volumes, initPath.Index(i))...)
	}
	for i := range s.Containers {
		errs = append(errs, validateContainer(&s.Containers[i], volumes, path.Index(i))...)
	}
	return errs
}

func plain(cs []kruiseappsv1alpha1.SidecarContainer) []corev1.Container {
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = cs[i].Container
	}
	return out
}

// validateInitContainer: init containers are injected once, at pod creation; they are neither upgraded hot
// nor sized from the app's containers.
func validateInitContainer(c *kruiseappsv1alpha1.SidecarContainer, volumes sets.Set[string], p *field.Path) field.ErrorList {
	errs := validateDevices(&c.Container, volumes, p)
	if c.ResourcesPolicy != nil {
		errs = append(errs, field.Forbidden(p.Child("resourcesPolicy"), "resourcesPolicy is not supported for initContainers, only for containers"))
	}
	if c.UpgradeStrategy.UpgradeType == kruiseappsv1alpha1.SidecarContainerHotUpgrade {
		errs = append(errs, field.Forbidden(p.Child("upgradeStrategy", "upgradeType"), "HotUpgrade is not supported for initContainers"))
	}
	return errs
}

func validateContainer(c *kruiseappsv1alpha1.SidecarContainer, volumes sets.Set[string], p *field.Path) field.ErrorList {
	errs := validateDevices(&c.Container, volumes, p)
	errs = append(errs, notSupported(p.Child("podInjectPolicy"), string(c.PodInjectPolicy), injectPolicies)...)
	errs = append(errs, notSupported(p.Child("shareVolumePolicy", "type"), string(c.ShareVolumePolicy.Type), sharePolicies)...)
	if c.ShareVolumeDevicePolicy != nil {
		errs = append(errs, notSupported(p.Child("shareVolumeDevicePolicy", "type"), string(c.ShareVolumeDevicePolicy.Type), sharePolicies)...)
	}
	errs = append(errs, validateUpgradeStrategy(c, p.Child("upgradeStrategy"))...)
	for i := range c.TransferEnv {
		errs = append(errs, validateTransferEnv(&c.TransferEnv[i], p.Child("transferEnv").Index(i))...)
	}
	if c.ResourcesPolicy != nil {
		errs = append(errs, validateResourcesPolicy(c, p.Child("resourcesPolicy"))...)
	}
	return errs
}

func notSupported(p *field.Path, value string, allowed []string) field.ErrorList {
	if slices.Contains(allowed, value) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, value, allowed)}
}

// validateDevices: a volume device names one of the SidecarSet's volumes, like a volume mount.
func validateDevices(c *corev1.Container, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, d := range c.VolumeDevices {
		if !volumes.Has(d.Name) {
			errs = append(errs, field.NotFound(p.Child("volumeDevices").Index(i).Child("name"), d.Name))
		}
	}
	return errs
}

// validateUpgradeStrategy: a hot upgrade runs the sidecar as two containers and parks the idle one on
// hotUpgradeEmptyImage, so that image must be given and differ from the sidecar's; without it every
// injected pod would be refused (a container without image) or never hand over. Upstream's webhook lets
// these through and fails later, at pod creation.
func validateUpgradeStrategy(c *kruiseappsv1alpha1.SidecarContainer, p *field.Path) field.ErrorList {
	u := &c.UpgradeStrategy
	errs := notSupported(p.Child("upgradeType"), string(u.UpgradeType), upgradeTypes)
	if u.UpgradeType != kruiseappsv1alpha1.SidecarContainerHotUpgrade {
		return errs
	}
	switch u.HotUpgradeEmptyImage {
	case "":
		errs = append(errs, field.Required(p.Child("hotUpgradeEmptyImage"), "a HotUpgrade container needs hotUpgradeEmptyImage"))
	case c.Image:
		errs = append(errs, field.Invalid(p.Child("hotUpgradeEmptyImage"), u.HotUpgradeEmptyImage, "must differ from the container's image"))
	}
	return errs
}

// validateTransferEnv: an entry names a source container and at least one variable; a source read from the
// pod (sourceContainerNameFrom, which wins over sourceContainerName as upstream injects) is a fieldRef to
// the pod's name, a label or an annotation.
func validateTransferEnv(t *kruiseappsv1alpha1.TransferEnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.SourceContainerName == "" && t.SourceContainerNameFrom == nil {
		errs = append(errs, field.Required(p.Child("sourceContainerName"), "one of sourceContainerName and sourceContainerNameFrom is required"))
	}
	if t.EnvName == "" && len(t.EnvNames) == 0 {
		errs = append(errs, field.Required(p.Child("envName"), "one of envName and envNames is required"))
	}
	if from := t.SourceContainerNameFrom; from != nil {
		errs = append(errs, validateFieldRef(from.FieldRef, p.Child("sourceContainerNameFrom", "fieldRef"))...)
	}
	return errs
}

func validateFieldRef(f *corev1.ObjectFieldSelector, p *field.Path) field.ErrorList {
	if f == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	if f.APIVersion != "v1" {
		return field.ErrorList{field.NotSupported(p.Child("apiVersion"), f.APIVersion, []string{"v1"})}
	}
	path, subscript, subscripted := splitSubscript(f.FieldPath)
	if !subscripted {
		if path != "metadata.name" {
			return field.ErrorList{field.NotSupported(p.Child("fieldPath"), f.FieldPath, fieldPaths)}
		}
		return nil
	}
	if path == "metadata.annotations" {
		subscript = strings.ToLower(subscript)
	} else if path != "metadata.labels" {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), f.FieldPath, "does not support subscript")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(subscript) {
		errs = append(errs, field.Invalid(p.Child("fieldPath"), f.FieldPath, msg))
	}
	return errs
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(fieldPath string) (path, subscript string, ok bool) {
	path, rest, found := strings.Cut(fieldPath, "['")
	if !found || !strings.HasSuffix(rest, "']") {
		return fieldPath, "", false
	}
	return path, strings.TrimSuffix(rest, "']"), true
}

// validateResourcesPolicy: resources come either from the policy or from the container, and the policy
// names the containers it sums or maxes by a valid regular expression and gives at least one expression.
func validateResourcesPolicy(c *kruiseappsv1alpha1.SidecarContainer, p *field.Path) field.ErrorList {
	rp := c.ResourcesPolicy
	if len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0 {
		return field.ErrorList{field.Forbidden(p, "resourcesPolicy and resources cannot be configured together")}
	}
	var errs field.ErrorList
	if rp.TargetContainersNameRegex == "" {
		errs = append(errs, field.Required(p.Child("targetContainersNameRegex"), "invalid empty regex"))
	} else if _, err := regexp.Compile(rp.TargetContainersNameRegex); err != nil {
		errs = append(errs, field.Invalid(p.Child("targetContainersNameRegex"), rp.TargetContainersNameRegex, "invalid regex pattern: "+err.Error()))
	}
	if rp.ResourcesExpr.Limits == nil && rp.ResourcesExpr.Requests == nil {
		errs = append(errs, field.Required(p.Child("resourcesExpr"), "at least one of limits or requests must be configured"))
	}
	return errs
}

// isNativeSidecar tells whether an init container keeps running beside the app (restartPolicy Always).
func isNativeSidecar(c *kruiseappsv1alpha1.SidecarContainer) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
