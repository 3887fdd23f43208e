package plan

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Targets picks the job's targets among pods, the pods its selector matches in its namespace: the active ones
// (neither finished nor being deleted), oldest first, at most spec.replicas of them. A pod that already has a
// container by the name of one of the template's, other than one this job injected, cannot take the job's
// containers: it is left out and returned among conflicts.
func Targets(job *kruiseappsv1alpha1.EphemeralJob, pods []*corev1.Pod) (targets, conflicts []*corev1.Pod) {
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, olderFirst)
	for _, p := range sorted {
		if !active(p) {
			continue
		}
		if Conflicts(job, p) {
			conflicts = append(conflicts, p)
			continue
		}
		if job.Spec.Replicas == nil || len(targets) < int(*job.Spec.Replicas) {
			targets = append(targets, p)
		}
	}
	return targets, conflicts
}

func olderFirst(a, b *corev1.Pod) int {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		if a.CreationTimestamp.Before(&b.CreationTimestamp) {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// active pods are neither finished nor being deleted, as a Job counts them.
func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// Conflicts reports whether pod holds a container (of any kind) named as one of the job's template, other
// than an ephemeral container the job injected: names are unique across a pod's containers.
func Conflicts(job *kruiseappsv1alpha1.EphemeralJob, pod *corev1.Pod) bool {
	for _, ec := range job.Spec.Template.EphemeralContainers {
		if clashes(job, pod, ec.Name) {
			return true
		}
	}
	return false
}

func clashes(job *kruiseappsv1alpha1.EphemeralJob, pod *corev1.Pod, name string) bool {
	named := func(c corev1.Container) bool { return c.Name == name }
	if slices.ContainsFunc(pod.Spec.Containers, named) || slices.ContainsFunc(pod.Spec.InitContainers, named) {
		return true
	}
	i := slices.IndexFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == name })
	return i >= 0 && !OwnedBy(job, &pod.Spec.EphemeralContainers[i])
}

// OwnedBy reports whether the job injected the ephemeral container: its KRUISE_EJOB_ID is the job's UID.
func OwnedBy(job *kruiseappsv1alpha1.EphemeralJob, c *corev1.EphemeralContainer) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == kruiseappsv1alpha1.EphemeralContainerEnvKey && e.Value == string(job.UID)
	})
}

// Missing are the template's containers the pod does not hold yet, as the job injects them: each with
// KRUISE_EJOB_ID set to the job's UID.
func Missing(job *kruiseappsv1alpha1.EphemeralJob, pod *corev1.Pod) []corev1.EphemeralContainer {
	var out []corev1.EphemeralContainer
	for i := range job.Spec.Template.EphemeralContainers {
		tc := &job.Spec.Template.EphemeralContainers[i]
		if slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == tc.Name }) {
			continue
		}
		c := tc.DeepCopy()
		c.Env = append(slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == kruiseappsv1alpha1.EphemeralContainerEnvKey }),
			corev1.EnvVar{Name: kruiseappsv1alpha1.EphemeralContainerEnvKey, Value: string(job.UID)})
		out = append(out, *c)
	}
	return out
}

// injected reports whether the pod holds one of the template's containers injected by the job.
func injected(job *kruiseappsv1alpha1.EphemeralJob, pod *corev1.Pod) bool {
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i]
		if inTemplate(job, c.Name) && OwnedBy(job, c) {
			return true
		}
	}
	return false
}

func inTemplate(job *kruiseappsv1alpha1.EphemeralJob, name string) bool {
	return slices.ContainsFunc(job.Spec.Template.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == name })
}
