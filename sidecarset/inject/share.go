package inject

import (
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// subPathExprVar finds the $(VAR) references of a volumeMount's subPathExpr.
var subPathExprVar = regexp.MustCompile(`\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)`)

// appContainers are the pod's containers whose volumes a sharing sidecar mounts: its containers and init
// containers that no SidecarSet injected.
func appContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if !IsInjectedContainer(&list[i]) {
				out = append(out, &list[i])
			}
		}
	}
	return out
}

// sharedMounts are the app containers' volumeMounts for a sidecar with shareVolumePolicy enabled, and the
// app containers' env vars their subPathExpr refer to (the sidecar needs them to expand the same path).
func sharedMounts(c *kruiseappsv1alpha1.SidecarContainer, pod *corev1.Pod) ([]corev1.VolumeMount, []corev1.EnvVar) {
	if c.ShareVolumePolicy.Type != kruiseappsv1alpha1.ShareVolumePolicyEnabled {
		return nil, nil
	}
	var mounts []corev1.VolumeMount
	var envs []corev1.EnvVar
	for _, app := range appContainers(pod) {
		mounts = append(mounts, app.VolumeMounts...)
		for _, m := range app.VolumeMounts {
			for _, ref := range subPathExprVar.FindAllStringSubmatch(m.SubPathExpr, -1) {
				if e := envVar(app.Env, ref[1]); e != nil {
					envs = append(envs, *e)
				}
			}
		}
	}
	return mounts, envs
}

// sharedDevices are the app containers' volumeDevices for a sidecar with shareVolumeDevicePolicy enabled.
func sharedDevices(c *kruiseappsv1alpha1.SidecarContainer, pod *corev1.Pod) []corev1.VolumeDevice {
	if c.ShareVolumeDevicePolicy == nil || c.ShareVolumeDevicePolicy.Type != kruiseappsv1alpha1.ShareVolumePolicyEnabled {
		return nil
	}
	var devices []corev1.VolumeDevice
	for _, app := range appContainers(pod) {
		devices = append(devices, app.VolumeDevices...)
	}
	return devices
}

// transferEnvs copies the env vars transferEnv names from the pod's containers, in the order of the
// entries and, within one, of the names sorted. A source container or variable the pod lacks, or a
// sourceContainerNameFrom that does not resolve, copies nothing: upstream skips them too.
func transferEnvs(c *kruiseappsv1alpha1.SidecarContainer, pod *corev1.Pod) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, t := range c.TransferEnv {
		source := t.SourceContainerName
		if t.SourceContainerNameFrom != nil && t.SourceContainerNameFrom.FieldRef != nil {
			name, ok := containerNameFromField(t.SourceContainerNameFrom.FieldRef.FieldPath, pod)
			if !ok {
				continue
			}
			source = name
		}
		from := podContainer(pod, source)
		if from == nil {
			continue
		}
		names := slices.Clone(t.EnvNames)
		if t.EnvName != "" {
			names = append(names, t.EnvName)
		}
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			if e := envVar(from.Env, n); e != nil {
				out = append(out, *e)
			}
		}
	}
	return out
}

// containerNameFromField resolves metadata.labels['k'] or metadata.annotations['k'] against the pod, the
// only paths upstream resolves.
func containerNameFromField(fieldPath string, pod *corev1.Pod) (string, bool) {
	open := strings.Index(fieldPath, "['")
	if open < 0 || !strings.HasSuffix(fieldPath, "']") {
		return "", false
	}
	key := fieldPath[open+2 : len(fieldPath)-2]
	switch fieldPath[:open] {
	case "metadata.labels":
		if len(validation.IsQualifiedName(key)) != 0 {
			return "", false
		}
		return pod.Labels[key], true
	case "metadata.annotations":
		if len(validation.IsQualifiedName(strings.ToLower(key))) != 0 {
			return "", false
		}
		return pod.Annotations[key], true
	}
	return "", false
}

// podContainer finds a container of the pod's spec.containers by name.
func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

func envVar(envs []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range envs {
		if envs[i].Name == name {
			return &envs[i]
		}
	}
	return nil
}

// mergeEnv appends the extra vars whose names base lacks: what the sidecar declares wins.
func mergeEnv(base, extra []corev1.EnvVar) []corev1.EnvVar {
	for _, e := range extra {
		if envVar(base, e.Name) == nil {
			base = append(base, e)
		}
	}
	return base
}

// mergeMounts appends the extra mounts at paths base does not mount yet.
func mergeMounts(base, extra []corev1.VolumeMount) []corev1.VolumeMount {
	for _, m := range extra {
		if !slices.ContainsFunc(base, func(b corev1.VolumeMount) bool { return b.MountPath == m.MountPath }) {
			base = append(base, m)
		}
	}
	return base
}

// mergeDevices appends the extra devices whose path and volume base does not attach yet.
func mergeDevices(base, extra []corev1.VolumeDevice) []corev1.VolumeDevice {
	for _, d := range extra {
		if !slices.ContainsFunc(base, func(b corev1.VolumeDevice) bool { return b.DevicePath == d.DevicePath || b.Name == d.Name }) {
			base = append(base, d)
		}
	}
	return base
}
