package plan

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Kind is the BroadcastJob's kind, as its pods' controller references name it.
var Kind = kruiseappsv1alpha1.GroupVersion.WithKind("BroadcastJob")

// Labels are the labels upstream puts on every pod of a job: its name and its UID.
func Labels(job *kruiseappsv1alpha1.BroadcastJob) map[string]string {
	return map[string]string{
		kruiseappsv1alpha1.BroadcastJobNameLabelKey:          job.Name,
		kruiseappsv1alpha1.BroadcastJobControllerUIDLabelKey: string(job.UID),
	}
}

// NewPod is the job's pod for node: the template's labels (with Labels), annotations, finalizers and spec,
// named "<job>-<random>", controlled by the job, pinned to node by node affinity for the default scheduler.
func NewPod(job *kruiseappsv1alpha1.BroadcastJob, node string) *corev1.Pod {
	t := &job.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			GenerateName:    podtemplate.GenerateName(job.Name),
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			Finalizers:      append([]string(nil), t.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, Kind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	maps.Copy(pod.Labels, Labels(job))
	pod.Spec.Affinity = nodeplacement.PinToNode(pod.Spec.Affinity, node)
	return pod
}
