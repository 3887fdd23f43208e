package reconcileutil

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// ServedKruiseWorkloads returns an empty object of each apps.kruise.io workload kind the apiserver serves
// (CloneSet, Advanced StatefulSet, Advanced DaemonSet) and the manager's scheme knows, keyed by kind, for
// the engine's controllers to watch: a watch on a kind whose CRD is not installed, or that the scheme does
// not hold, would keep the controller from starting.
func ServedKruiseWorkloads(scheme *runtime.Scheme, mapper meta.RESTMapper) map[string]client.Object {
	out := map[string]client.Object{}
	for kind, obj := range map[string]client.Object{
		"CloneSet":    &kruiseappsv1alpha1.CloneSet{},
		"StatefulSet": &kruiseappsv1beta1.StatefulSet{},
		"DaemonSet":   &kruiseappsv1alpha1.DaemonSet{},
	} {
		gv := kruiseappsv1alpha1.GroupVersion
		if kind == "StatefulSet" {
			gv = kruiseappsv1beta1.GroupVersion
		}
		if _, err := mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version); err == nil && scheme.Recognizes(gv.WithKind(kind)) {
			out[kind] = obj
		}
	}
	return out
}
