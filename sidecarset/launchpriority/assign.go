package launchpriority

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// barrierSuffix and keyPrefix are upstream's: the ConfigMap <pod>-barrier holds the keys p_<priority>.
const (
	barrierSuffix = "-barrier"
	keyPrefix     = "p_"
)

// BarrierName is the name of the barrier ConfigMap of the pod named pod.
func BarrierName(pod string) string { return pod + barrierSuffix }

// Key is the barrier key that releases the containers of priority p.
func Key(p int) string { return keyPrefix + strconv.Itoa(p) }

// NameGenerator completes a pod's generateName into a name, as the API server would.
type NameGenerator func(generateName string) string

// Assign gives the containers of a pod being created their barrier env, and reports whether it changed the
// pod. A pod with one container, or whose containers all share one priority, is left alone. A pod known only
// by its generateName is given its name here (by generate), as upstream does: the barrier's name depends on
// it. A KRUISE_CONTAINER_PRIORITY that is not an integer refuses the pod.
func Assign(pod *corev1.Pod, generate NameGenerator) (bool, error) {
	if len(pod.Spec.Containers) < 2 {
		return false, nil
	}
	priorities, err := requested(pod)
	if err != nil || priorities == nil {
		return false, err
	}
	if pod.Name == "" {
		if pod.GenerateName == "" || generate == nil {
			return false, nil // the API server refuses a pod without a name
		}
		pod.Name = generate(pod.GenerateName)
	}
	for i, p := range priorities {
		setBarrierEnv(&pod.Spec.Containers[i], BarrierName(pod.Name), p)
	}
	return true, nil
}

// requested is the priority of each container, nil when the pod asks for no order.
func requested(pod *corev1.Pod) ([]int, error) {
	out := make([]int, len(pod.Spec.Containers))
	if pod.Annotations[kruiseappspub.ContainerLaunchPriorityKey] == kruiseappspub.ContainerLaunchOrdered {
		for i := range out {
			out[i] = -i
		}
		return out, nil
	}
	for i, c := range pod.Spec.Containers {
		p, err := envPriority(c)
		if err != nil {
			return nil, fmt.Errorf("spec.containers[%d].env[%s]: %w", i, kruiseappspub.ContainerLaunchPriorityEnvName, err)
		}
		out[i] = p
	}
	for _, p := range out[1:] {
		if p != out[0] {
			return out, nil
		}
	}
	return nil, nil // one priority for all: nothing to order
}

// envPriority is the container's KRUISE_CONTAINER_PRIORITY, 0 when it has none.
func envPriority(c corev1.Container) (int, error) {
	for _, e := range c.Env {
		if e.Name != kruiseappspub.ContainerLaunchPriorityEnvName {
			continue
		}
		p, err := strconv.Atoi(strings.TrimSpace(e.Value))
		if err != nil {
			return 0, fmt.Errorf("invalid value %q: must be an integer", e.Value)
		}
		return p, nil
	}
	return 0, nil
}

// setBarrierEnv makes c wait for the key of priority p in the ConfigMap barrier. A barrier env the pod
// already has (a copied pod's) is replaced rather than repeated.
func setBarrierEnv(c *corev1.Container, barrier string, p int) {
	env := corev1.EnvVar{Name: kruiseappspub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: barrier}, Key: Key(p)},
	}}
	for i := range c.Env {
		if c.Env[i].Name == env.Name {
			c.Env[i] = env
			return
		}
	}
	c.Env = append(c.Env, env)
}

// Priority is the launch priority the webhook gave c, read from its barrier env; false when it has none.
func Priority(c *corev1.Container) (int, bool) {
	for _, e := range c.Env {
		if e.Name != kruiseappspub.ContainerLaunchBarrierEnvName || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
			continue
		}
		p, err := strconv.Atoi(strings.TrimPrefix(e.ValueFrom.ConfigMapKeyRef.Key, keyPrefix))
		return p, err == nil
	}
	return 0, false
}

// HasBarrier tells whether any container of pod waits on a barrier key.
func HasBarrier(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if _, ok := Priority(&pod.Spec.Containers[i]); ok {
			return true
		}
	}
	return false
}
