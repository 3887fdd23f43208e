package plan

import (
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Kind is the DaemonSet's kind, as its pods' controller references name it.
var Kind = kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet")

// NewPod is the pod the DaemonSet runs on node for the update revision: the template's labels (with the
// revision's hash and, when the DaemonSet has one, its template generation), annotations, finalizers and
// spec, the daemon tolerations, the KruisePodReady readiness gate every apps.kruise.io pod carries (and
// InPlaceUpdateReady for in-place updates), pinned to node by node affinity for the default scheduler.
func NewPod(ds *kruiseappsv1alpha1.DaemonSet, rev Revision, inPlace bool, node string) *corev1.Pod {
	t := &ds.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ds.Namespace,
			GenerateName:    podtemplate.GenerateName(ds.Name),
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			Finalizers:      append([]string(nil), t.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, Kind)},
		},
		Spec: *DaemonSpec(&t.Spec),
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[HashLabel] = rev.Hash
	if rev.Generation != nil {
		pod.Labels[GenerationLabel] = strconv.FormatInt(*rev.Generation, 10)
	}
	podcondition.AddGate(pod, kruiseappspub.KruisePodReadyConditionType)
	if inPlace {
		podcondition.AddGate(pod, kruiseappspub.InPlaceUpdateReady)
	}
	pod.Spec.Affinity = nodeplacement.PinToNode(pod.Spec.Affinity, node)
	return pod
}
