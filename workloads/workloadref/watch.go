package workloadref

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// JobKind is a batch Job, whose replicas are its parallelism.
var JobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// Watched is a workload kind a controller watches for its replicas: a fresh object of the kind for the watch,
// and the replicas read from one.
type Watched struct {
	Object   client.Object
	Kind     schema.GroupKind
	Replicas func(client.Object) *int32
}

// watchable makes the Watched of each kind a controller may watch for its replicas.
var watchable = map[schema.GroupKind]func() Watched{
	DeploymentKind: func() Watched {
		return Watched{&appsv1.Deployment{}, DeploymentKind, func(o client.Object) *int32 { return o.(*appsv1.Deployment).Spec.Replicas }}
	},
	ReplicaSetKind: func() Watched {
		return Watched{&appsv1.ReplicaSet{}, ReplicaSetKind, func(o client.Object) *int32 { return o.(*appsv1.ReplicaSet).Spec.Replicas }}
	},
	StatefulSetKind: func() Watched {
		return Watched{&appsv1.StatefulSet{}, StatefulSetKind, func(o client.Object) *int32 { return o.(*appsv1.StatefulSet).Spec.Replicas }}
	},
	JobKind: func() Watched {
		return Watched{&batchv1.Job{}, JobKind, func(o client.Object) *int32 { return o.(*batchv1.Job).Spec.Parallelism }}
	},
	CloneSetKind: func() Watched {
		return Watched{&kruiseappsv1alpha1.CloneSet{}, CloneSetKind,
			func(o client.Object) *int32 { return o.(*kruiseappsv1alpha1.CloneSet).Spec.Replicas }}
	},
	AdvancedStatefulSetKind: func() Watched {
		return Watched{&kruiseappsv1beta1.StatefulSet{}, AdvancedStatefulSetKind,
			func(o client.Object) *int32 { return o.(*kruiseappsv1beta1.StatefulSet).Spec.Replicas }}
	},
}

// Watch gives the Watched of kinds, in their order, with CloneSets and Advanced StatefulSets after them when
// kruise (their CRDs are served); kinds it does not know are left out.
func Watch(kruise bool, kinds ...schema.GroupKind) []Watched {
	if kruise {
		kinds = append(kinds, CloneSetKind, AdvancedStatefulSetKind)
	}
	var out []Watched
	for _, k := range kinds {
		if make, ok := watchable[k]; ok {
			out = append(out, make())
		}
	}
	return out
}

// ReplicasChanged passes a workload's creation and deletion, and updates that change its replicas.
func ReplicasChanged(replicas func(client.Object) *int32) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, b := replicas(e.ObjectOld), replicas(e.ObjectNew)
			return (a == nil) != (b == nil) || (a != nil && *a != *b)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
