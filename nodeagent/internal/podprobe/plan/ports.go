package plan

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ResolvePorts is probe with the named port of its httpGet or tcpSocket handler replaced by the number the
// probed container of pod gives that name, as the kubelet resolves its own probes' ports: a name no port of
// the container has, read as a number if it is one, or a number out of range is an error. Other probes come
// back as they are. probe is not changed.
func ResolvePorts(probe kruiseappsv1alpha1.ContainerProbeSpec, containerName string, pod *corev1.Pod) (kruiseappsv1alpha1.ContainerProbeSpec, error) {
	var port *intstr.IntOrString
	out := *probe.DeepCopy()
	switch {
	case out.HTTPGet != nil:
		port = &out.HTTPGet.Port
	case out.TCPSocket != nil:
		port = &out.TCPSocket.Port
	default:
		return out, nil
	}
	if port.Type == intstr.Int {
		return out, nil
	}
	n, err := resolve(port.StrVal, container(pod, containerName))
	if err != nil {
		return probe, fmt.Errorf("container %s: %w", containerName, err)
	}
	*port = intstr.FromInt32(n)
	return out, nil
}

func resolve(name string, c *corev1.Container) (int32, error) {
	if c == nil {
		return 0, fmt.Errorf("no such container")
	}
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, nil
		}
	}
	n, err := strconv.Atoi(name)
	if err != nil {
		return 0, fmt.Errorf("no port named %q", name)
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("port %d out of range", n)
	}
	return int32(n), nil
}

// container is pod's container (or init container, a sidecar's) name; nil without one.
func container(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
