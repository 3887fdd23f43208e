package plan

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Action is what becomes of the PersistentPodState a StatefulSet's annotations generate.
type Action int

const (
	// Leave it as it is: the annotations ask for one but name no topology (upstream waits for them).
	Leave Action = iota
	// Apply the generated object: create it, or set its spec.
	Apply
	// Delete it: the annotations no longer ask for one.
	Delete
)

// Generated is the PersistentPodState the annotations of a StatefulSet (owner, in namespace) ask for, as
// upstream generates it: named after the StatefulSet and controlled by it, targeting it, with the topology
// and annotation keys of kruise.io/required-persistent-topology, kruise.io/preferred-persistent-topology (one
// term of weight 100) and kruise.io/persistent-pod-annotations, comma-separated.
func Generated(owner metav1.OwnerReference, namespace string, annotations map[string]string) (*kruiseappsv1alpha1.PersistentPodState, Action) {
	if annotations[kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState] != "true" {
		return nil, Delete
	}
	required := list(annotations[kruiseappsv1alpha1.AnnotationRequiredPersistentTopology])
	preferred := list(annotations[kruiseappsv1alpha1.AnnotationPreferredPersistentTopology])
	if len(required) == 0 && len(preferred) == 0 {
		return nil, Leave
	}
	owner.Controller = ptr.To(true)
	pps := &kruiseappsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: owner.Name, Namespace: namespace, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: kruiseappsv1alpha1.PersistentPodStateSpec{TargetReference: kruiseappsv1alpha1.TargetReference{
			APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name,
		}},
	}
	if len(required) > 0 {
		pps.Spec.RequiredPersistentTopology = &kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: required}
	}
	if len(preferred) > 0 {
		pps.Spec.PreferredPersistentTopology = []kruiseappsv1alpha1.PreferredTopologyTerm{{
			Weight: 100, Preference: kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: preferred},
		}}
	}
	for _, key := range list(annotations[kruiseappsv1alpha1.AnnotationPersistentPodAnnotations]) {
		pps.Spec.PersistentPodAnnotations = append(pps.Spec.PersistentPodAnnotations, kruiseappsv1alpha1.PersistentPodAnnotation{Key: key})
	}
	return pps, Apply
}

// list splits a comma-separated annotation; blanks around and between commas are left out.
func list(value string) []string {
	var out []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
