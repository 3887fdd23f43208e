package reconcileutil

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// kruiseWorkloads are the apps.kruise.io workload kinds a Rollout may reference, in the versions the engine
// reads them.
var kruiseWorkloads = []struct {
	gvk schema.GroupVersionKind
	obj client.Object
}{
	{kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"), &kruiseappsv1alpha1.CloneSet{}},
	{kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet"), &kruiseappsv1beta1.StatefulSet{}},
	{kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet"), &kruiseappsv1alpha1.DaemonSet{}},
}

// WatchedWorkloadKinds are the kinds the engine's controllers watch from the start: the native workloads and
// the served kruise ones (ServedKruiseWorkloads). Any other kind a release names is watched on first sight
// (DynamicWatches).
func WatchedWorkloadKinds(scheme *runtime.Scheme, mapper meta.RESTMapper) []schema.GroupKind {
	known := []schema.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"}}
	for kind := range ServedKruiseWorkloads(scheme, mapper) {
		known = append(known, schema.GroupKind{Group: "apps.kruise.io", Kind: kind})
	}
	return known
}

// ServedKruiseWorkloads returns an empty object of each apps.kruise.io workload kind (CloneSet, Advanced
// StatefulSet, Advanced DaemonSet) that the apiserver serves and the manager's scheme knows, keyed by kind,
// for the engine's controllers to watch: a watch on a kind whose CRD is not installed, or that the scheme
// does not hold, would keep the controller from starting.
func ServedKruiseWorkloads(scheme *runtime.Scheme, mapper meta.RESTMapper) map[string]client.Object {
	out := map[string]client.Object{}
	for _, k := range kruiseWorkloads {
		if _, err := mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version); err == nil && scheme.Recognizes(k.gvk) {
			out[k.gvk.Kind] = k.obj
		}
	}
	return out
}
