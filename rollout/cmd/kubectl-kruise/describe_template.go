package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// describeRecordedTemplate describes a template as recorded in a revision.
func describeRecordedTemplate(raw map[string]any) (string, error) {
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &t); err != nil {
		return "", fmt.Errorf("decoding the recorded template: %w", err)
	}
	return describeTemplate(t), nil
}

// describeTemplate is a pod template the way `kubectl describe` shows one, the parts a reader
// comparing revisions looks at: labels, annotations, containers with image, ports, env, resources, mounts.
func describeTemplate(t corev1.PodTemplateSpec) string {
	var b strings.Builder
	w := &b
	fmt.Fprintln(w, "Pod Template:")
	writeMap(w, "  ", "Labels", t.Labels, "=")
	writeMap(w, "  ", "Annotations", t.Annotations, ": ")
	writeContainers(w, "Init Containers", t.Spec.InitContainers)
	writeContainers(w, "Containers", t.Spec.Containers)
	volumes := make([]string, 0, len(t.Spec.Volumes))
	for _, v := range t.Spec.Volumes {
		volumes = append(volumes, v.Name)
	}
	writeList(w, "  ", "Volumes", volumes)
	return b.String()
}

func writeContainers(w io.Writer, title string, cs []corev1.Container) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", title)
	for _, c := range cs {
		fmt.Fprintf(w, "   %s:\n", c.Name)
		writeList(w, "    ", "Image", []string{c.Image})
		writeList(w, "    ", "Ports", portsText(c.Ports))
		if len(c.Command) > 0 {
			writeList(w, "    ", "Command", c.Command)
		}
		if len(c.Args) > 0 {
			writeList(w, "    ", "Args", c.Args)
		}
		writeResources(w, "Limits", c.Resources.Limits)
		writeResources(w, "Requests", c.Resources.Requests)
		writeList(w, "    ", "Environment", envText(c.Env, c.EnvFrom))
		writeList(w, "    ", "Mounts", mountsText(c.VolumeMounts))
	}
}

func portsText(ports []corev1.ContainerPort) []string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
	}
	return out
}

func writeResources(w io.Writer, title string, rl corev1.ResourceList) {
	if len(rl) == 0 {
		return
	}
	fmt.Fprintf(w, "    %s:\n", title)
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		q := rl[corev1.ResourceName(n)]
		writeList(w, "      ", n, []string{q.String()})
	}
}

// envText shows values, and where a value comes from for references, as `kubectl set env --list` does.
func envText(env []corev1.EnvVar, from []corev1.EnvFromSource) []string {
	out := make([]string, 0, len(env)+len(from))
	for _, e := range env {
		out = append(out, envLine(e))
	}
	for _, f := range from {
		out = append(out, envFromLine(f))
	}
	return out
}

func envLine(e corev1.EnvVar) string {
	s := e.ValueFrom
	switch {
	case s == nil:
		return e.Name + "=" + e.Value
	case s.FieldRef != nil:
		return fmt.Sprintf("# %s from field path %s", e.Name, s.FieldRef.FieldPath)
	case s.ResourceFieldRef != nil:
		return fmt.Sprintf("# %s from resource %s", e.Name, s.ResourceFieldRef.Resource)
	case s.ConfigMapKeyRef != nil:
		return fmt.Sprintf("# %s from configmap %s, key %s", e.Name, s.ConfigMapKeyRef.Name, s.ConfigMapKeyRef.Key)
	case s.SecretKeyRef != nil:
		return fmt.Sprintf("# %s from secret %s, key %s", e.Name, s.SecretKeyRef.Name, s.SecretKeyRef.Key)
	default:
		return fmt.Sprintf("# %s from a source this client does not know", e.Name)
	}
}

func envFromLine(f corev1.EnvFromSource) string {
	prefix := ""
	if f.Prefix != "" {
		prefix = fmt.Sprintf(" with prefix '%s'", f.Prefix)
	}
	switch {
	case f.ConfigMapRef != nil:
		return fmt.Sprintf("# configmap %s%s", f.ConfigMapRef.Name, prefix)
	case f.SecretRef != nil:
		return fmt.Sprintf("# secret %s%s", f.SecretRef.Name, prefix)
	default:
		return "# a source this client does not know" + prefix
	}
}

func mountsText(mounts []corev1.VolumeMount) []string {
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		out = append(out, fmt.Sprintf("%s from %s (%s)", m.MountPath, m.Name, mode))
	}
	return out
}

// labelWidth aligns the values of a template description.
const labelWidth = 14

// writeList prints "Title:  first" and the rest aligned below it, or "Title:  <none>".
func writeList(w io.Writer, indent, title string, items []string) {
	if len(items) == 0 {
		items = []string{"<none>"}
	}
	for i, item := range items {
		label := ""
		if i == 0 {
			label = title + ":"
		}
		fmt.Fprintf(w, "%s%-*s%s\n", indent, labelWidth, label, item)
	}
}

func writeMap(w io.Writer, indent, title string, m map[string]string, sep string) {
	items := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		items = append(items, k+sep+m[k])
	}
	writeList(w, indent, title, items)
}
