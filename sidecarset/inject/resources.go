package inject

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// wordMemory tells an expression over memory from one over cpu.
var wordMemory = regexp.MustCompile(`\bmemory\b`)

// sidecarResources computes a sidecar's resources from resourcesPolicy: the pod's containers and native
// sidecars whose names match targetContainersNameRegex (the SidecarSets' own containers excepted) are
// aggregated (sum or max), and the expressions evaluated over the aggregate. A limit is set only when every
// target has one (else the sidecar is unlimited too); a target without a request counts as zero.
func sidecarResources(policy *kruiseappsv1alpha1.ResourcesPolicy, pod *corev1.Pod, sidecarNames map[string]bool) (corev1.ResourceRequirements, error) {
	targets, err := targetContainers(pod, policy.TargetContainersNameRegex, sidecarNames)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	limits, requests := aggregate(targets, policy.TargetContainersMode)
	var out corev1.ResourceRequirements
	if l := policy.ResourcesExpr.Limits; l != nil {
		out.Limits, err = evaluateResources(map[corev1.ResourceName]string{corev1.ResourceCPU: l.CPU, corev1.ResourceMemory: l.Memory}, limits, true)
		if err != nil {
			return out, fmt.Errorf("resourcesExpr.limits: %w", err)
		}
	}
	if r := policy.ResourcesExpr.Requests; r != nil {
		out.Requests, err = evaluateResources(map[corev1.ResourceName]string{corev1.ResourceCPU: r.CPU, corev1.ResourceMemory: r.Memory}, requests, false)
		if err != nil {
			return out, fmt.Errorf("resourcesExpr.requests: %w", err)
		}
	}
	return out, nil
}

// targetContainers are the pod's containers and native sidecars matching nameRegex, but the SidecarSets'.
func targetContainers(pod *corev1.Pod, nameRegex string, sidecarNames map[string]bool) ([]corev1.Container, error) {
	pattern, err := regexp.Compile(nameRegex)
	if err != nil {
		return nil, fmt.Errorf("targetContainersNameRegex: %w", err)
	}
	var out []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways && !sidecarNames[c.Name] && pattern.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	for _, c := range pod.Spec.Containers {
		if !sidecarNames[c.Name] && pattern.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("targetContainersNameRegex: no container of the pod matches %q", nameRegex)
	}
	return out, nil
}

// aggregate sums or maxes the targets' cpu and memory; a limit only when every target has it.
func aggregate(targets []corev1.Container, mode kruiseappsv1alpha1.TargetContainersModeType) (limits, requests corev1.ResourceList) {
	limits, requests = corev1.ResourceList{}, corev1.ResourceList{}
	if mode != kruiseappsv1alpha1.TargetContainersModeSum && mode != kruiseappsv1alpha1.TargetContainersModeMax {
		return limits, requests
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if l, ok := combine(targets, name, mode, func(c corev1.Container) corev1.ResourceList { return c.Resources.Limits }, true); ok {
			limits[name] = l
		}
		if r, ok := combine(targets, name, mode, func(c corev1.Container) corev1.ResourceList { return c.Resources.Requests }, false); ok {
			requests[name] = r
		}
	}
	return limits, requests
}

// combine aggregates one resource of one list over the targets. With needAll, a target without it leaves
// the aggregate unset; otherwise it counts as zero, and a zero sum is unset.
func combine(targets []corev1.Container, name corev1.ResourceName, mode kruiseappsv1alpha1.TargetContainersModeType,
	list func(corev1.Container) corev1.ResourceList, needAll bool) (resource.Quantity, bool) {
	total := *resource.NewQuantity(0, resource.DecimalSI)
	found := false
	for _, c := range targets {
		q, ok := list(c)[name]
		if !ok {
			if needAll {
				return resource.Quantity{}, false
			}
			continue
		}
		switch {
		case mode == kruiseappsv1alpha1.TargetContainersModeSum:
			total.Add(q)
		case !found || q.Cmp(total) > 0:
			total = q.DeepCopy()
		}
		found = true
	}
	if mode == kruiseappsv1alpha1.TargetContainersModeSum && !needAll && total.IsZero() {
		return resource.Quantity{}, false
	}
	return total, found
}

// evaluateResources evaluates the expressions of cpu and memory over the aggregate. An empty expression
// sets nothing; a limit whose aggregate is unlimited stays unlimited.
func evaluateResources(exprs map[corev1.ResourceName]string, aggregated corev1.ResourceList, limits bool) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		expr := exprs[name]
		if expr == "" {
			continue
		}
		agg, ok := aggregated[name]
		if limits && !ok {
			continue
		}
		q, err := evaluateResource(expr, agg)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", name, expr, err)
		}
		out[name] = q
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// evaluateResource evaluates one expression with the aggregate bound to its variable (memory when the
// expression names memory, else cpu); a plain number is cores for cpu and bytes for memory.
func evaluateResource(expr string, aggregated resource.Quantity) (resource.Quantity, error) {
	variable := "cpu"
	if wordMemory.MatchString(expr) {
		variable = "memory"
	}
	agg := aggregated.DeepCopy()
	v, err := evaluate(expr, map[string]value{variable: {quantity: &agg}})
	if err != nil {
		return resource.Quantity{}, err
	}
	if v.quantity != nil {
		return *v.quantity, nil
	}
	if variable == "cpu" {
		return *resource.NewMilliQuantity(int64(v.number*1000), resource.DecimalSI), nil
	}
	return *resource.NewQuantity(int64(v.number), resource.DecimalSI), nil
}
