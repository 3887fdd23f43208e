package admission

import (
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ReservedPodConditions are the pod condition types others own: the kubelet's and the control plane's, and
// the readiness gates of Kruise workloads. A probe may neither be named after one (upstream's rule) nor
// write one as its podConditionType.
var ReservedPodConditions = []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.PodReady,
	corev1.ContainersReady, corev1.PodReadyToStartContainers, corev1.DisruptionTarget, corev1.PodResizePending,
	corev1.PodResizeInProgress, pub.KruisePodReadyConditionType, pub.InPlaceUpdateReady}

var (
	probeStates = []string{string(kruiseappsv1alpha1.ProbeSucceeded), string(kruiseappsv1alpha1.ProbeFailed)}
	httpSchemes = []string{string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS)}
)

// ValidatePodProbeMarker checks a PodProbeMarker being created (old nil) or updated from old, with upstream's
// rules: a non-empty selector that does not change; probes, each with a unique name (no '#', which joins the
// marker's name and the probe's in the NodePodProbes, and no reserved condition type), a container, a probe
// the node agent runs (exactly one of exec, httpGet and tcpSocket, aimed at the pod: no host; no negative
// period, timeout or threshold), and a podConditionType or a markerPolicy; condition types that are valid
// qualified names, unique in the marker and not reserved (ReservedPodConditions); marker policies for the
// states Succeeded and Failed, each once, with valid labels or annotations. On update, errors old already had
// do not block the update, so that a marker stored before a rule existed can still be changed and deleted.
func ValidatePodProbeMarker(ppm, old *kruiseappsv1alpha1.PodProbeMarker) field.ErrorList {
	if ppm == nil {
		return field.ErrorList{field.Required(specPath, "a PodProbeMarker is required")}
	}
	errs := validatePodProbeMarker(ppm)
	if old == nil {
		return errs
	}
	errs = rolloutadmission.Ratchet(errs, validatePodProbeMarker(old))
	return append(errs, apimachineryvalidation.ValidateImmutableField(ppm.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
}

func validatePodProbeMarker(ppm *kruiseappsv1alpha1.PodProbeMarker) field.ErrorList {
	errs := validateMarkerSelector(ppm.Spec.Selector, specPath.Child("selector"))
	p := specPath.Child("probes")
	if len(ppm.Spec.Probes) == 0 {
		return append(errs, field.Required(p, "at least one probe"))
	}
	names, types := map[string]bool{}, map[string]bool{}
	for i := range ppm.Spec.Probes {
		probe := &ppm.Spec.Probes[i]
		pp := p.Index(i)
		errs = append(errs, validateProbeName(probe.Name, names, pp.Child("name"))...)
		if probe.ContainerName == "" {
			errs = append(errs, field.Required(pp.Child("containerName"), "the container the probe runs against"))
		}
		errs = append(errs, validateProbe(&probe.Probe, pp.Child("probe"))...)
		if probe.PodConditionType == "" && len(probe.MarkerPolicy) == 0 {
			errs = append(errs, field.Required(pp, "podConditionType or markerPolicy: what the probe's result marks"))
		}
		errs = append(errs, validateConditionType(probe.PodConditionType, types, pp.Child("podConditionType"))...)
		errs = append(errs, validateMarkerPolicies(probe.MarkerPolicy, pp.Child("markerPolicy"))...)
	}
	return errs
}

// validateMarkerSelector: a selector that selects some pods, not all of the namespace (upstream's rule).
func validateMarkerSelector(sel *metav1.LabelSelector, p *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(p, "the pods to probe")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, sel, "an empty selector would probe every pod of the namespace"))
	}
	return errs
}

func validateProbeName(name string, seen map[string]bool, p *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "")}
	case strings.Contains(name, "#"):
		return field.ErrorList{field.Invalid(p, name, "may not contain '#'")}
	case slices.Contains(ReservedPodConditions, corev1.PodConditionType(name)):
		return field.ErrorList{field.Invalid(p, name, "may not be a pod condition type the kubelet or Kruise sets")}
	case seen[name]:
		return field.ErrorList{field.Duplicate(p, name)}
	}
	seen[name] = true
	return nil
}

func validateConditionType(t string, seen map[string]bool, p *field.Path) field.ErrorList {
	if t == "" {
		return nil
	}
	if seen[t] {
		return field.ErrorList{field.Duplicate(p, t)}
	}
	seen[t] = true
	errs := metav1validation.ValidateLabelName(t, p)
	if slices.Contains(ReservedPodConditions, corev1.PodConditionType(t)) {
		errs = append(errs, field.Invalid(p, t, "may not be a pod condition type the kubelet or Kruise sets"))
	}
	return errs
}

func validateMarkerPolicies(policies []kruiseappsv1alpha1.ProbeMarkerPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[kruiseappsv1alpha1.ProbeState]bool{}
	for i, policy := range policies {
		pp := p.Index(i)
		switch {
		case !slices.Contains(probeStates, string(policy.State)):
			errs = append(errs, field.NotSupported(pp.Child("state"), policy.State, probeStates))
		case seen[policy.State]:
			errs = append(errs, field.Duplicate(pp.Child("state"), policy.State))
		}
		seen[policy.State] = true
		if len(policy.Labels) == 0 && len(policy.Annotations) == 0 {
			errs = append(errs, field.Required(pp, "labels or annotations to set on the pod"))
		}
		errs = append(errs, metav1validation.ValidateLabels(policy.Labels, pp.Child("labels"))...)
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(policy.Annotations, pp.Child("annotations"))...)
	}
	return errs
}

// validateProbe: a probe the node agent runs against the pod, with corev1's bounds on its numbers.
func validateProbe(probe *kruiseappsv1alpha1.ContainerProbeSpec, p *field.Path) field.ErrorList {
	errs := validateHandler(&probe.ProbeHandler, p)
	for _, n := range []struct {
		name  string
		value int32
	}{{"initialDelaySeconds", probe.InitialDelaySeconds}, {"timeoutSeconds", probe.TimeoutSeconds},
		{"periodSeconds", probe.PeriodSeconds}, {"successThreshold", probe.SuccessThreshold}, {"failureThreshold", probe.FailureThreshold}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(n.value), p.Child(n.name))...)
	}
	return errs
}

// validateHandler: exactly one of exec, httpGet and tcpSocket; gRPC probes are not run by the node agent.
func validateHandler(h *corev1.ProbeHandler, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	handlers := 0
	one := func(name string, set bool, validate func() field.ErrorList) {
		if !set {
			return
		}
		if handlers++; handlers > 1 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 handler type"))
			return
		}
		errs = append(errs, validate()...)
	}
	one("exec", h.Exec != nil, func() field.ErrorList { return validateExec(h.Exec, p.Child("exec")) })
	one("httpGet", h.HTTPGet != nil, func() field.ErrorList { return validateHTTPGet(h.HTTPGet, p.Child("httpGet")) })
	one("tcpSocket", h.TCPSocket != nil, func() field.ErrorList { return validateTCPSocket(h.TCPSocket, p.Child("tcpSocket")) })
	if h.GRPC != nil {
		errs = append(errs, field.Forbidden(p.Child("grpc"), "the node agent runs exec, httpGet and tcpSocket probes only"))
	} else if handlers == 0 {
		errs = append(errs, field.Required(p, "one of exec, httpGet and tcpSocket"))
	}
	return errs
}

func validateExec(exec *corev1.ExecAction, p *field.Path) field.ErrorList {
	if len(exec.Command) == 0 {
		return field.ErrorList{field.Required(p.Child("command"), "")}
	}
	return nil
}

// validateHTTPGet: a request to the pod's IP (no host, no Host header: upstream refuses probes aimed
// elsewhere, which the agent, on the host network, would send from the node).
func validateHTTPGet(h *corev1.HTTPGetAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else if _, err := url.Parse(h.Path); err != nil {
		errs = append(errs, field.Invalid(p.Child("path"), h.Path, "must be a valid URL path"))
	}
	errs = append(errs, validatePort(h.Port, p.Child("port"))...)
	if !slices.Contains(httpSchemes, string(h.Scheme)) {
		errs = append(errs, field.NotSupported(p.Child("scheme"), h.Scheme, httpSchemes))
	}
	if h.Host != "" {
		errs = append(errs, field.Forbidden(p.Child("host"), "the probe is sent to the pod's IP"))
	}
	for i, header := range h.HTTPHeaders {
		hp := p.Child("httpHeaders").Index(i).Child("name")
		for _, msg := range validation.IsHTTPHeaderName(header.Name) {
			errs = append(errs, field.Invalid(hp, header.Name, msg))
		}
		if strings.EqualFold(header.Name, "Host") {
			errs = append(errs, field.Forbidden(hp, "the probe is sent to the pod's IP"))
		}
	}
	return errs
}

func validateTCPSocket(t *corev1.TCPSocketAction, p *field.Path) field.ErrorList {
	errs := validatePort(t.Port, p.Child("port"))
	if t.Host != "" {
		errs = append(errs, field.Forbidden(p.Child("host"), "the probe connects to the pod's IP"))
	}
	return errs
}

// validatePort: a port number, or the name of a container port (resolved against each pod's container).
func validatePort(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(p, port.IntValue(), msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(p, port.StrVal, msg))
	}
	return errs
}
