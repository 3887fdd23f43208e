// Package workloadref reads the workload a reference names (a targetRef, a pod's controller reference): its
// desired replicas and the UIDs its pods' controller references name, so that a module finds the pods of a
// workload of any supported kind the same way. The typed kinds are read from the manager's cache, any other
// through its scale subresource (upstream's way for custom workloads).
package workloadref

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// The workload kinds read by their types; any other kind is read through its scale subresource.
var (
	ReplicaSetKind          = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	DeploymentKind          = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	StatefulSetKind         = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	CloneSetKind            = schema.GroupKind{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "CloneSet"}
	AdvancedStatefulSetKind = schema.GroupKind{Group: kruiseappsv1beta1.GroupVersion.Group, Kind: "StatefulSet"}
	scaleKind               = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
)

// Workload is what is read of a workload: its desired replicas and how to find its pods.
type Workload struct {
	UID types.UID
	// Replicas are the desired replicas (a Job's parallelism).
	Replicas int32
	// Owners are the UIDs its pods' controller references name: its own, or its ReplicaSets' for a Deployment.
	Owners []types.UID
	// Selector finds the pods of a workload that does not own them (a scale subresource's selector); nil else.
	Selector labels.Selector
}

// Ref names a workload: a targetRef, or a pod's controller reference (with its UID; empty matches any).
type Ref struct {
	APIVersion, Kind, Name string
	UID                    types.UID
}

// Finder reads workloads: the typed ones from the manager's cache, the others through their scale
// subresource.
type Finder struct {
	Client client.Client
}

// Find reads the workload r names in namespace ns; nil when it does not exist, is being deleted, has another
// UID than r's, or is of a kind the API server does not serve. topLevel reads the Deployment that controls a
// ReplicaSet instead of the ReplicaSet, as the pods of a Deployment count towards it.
func (f *Finder) Find(ctx context.Context, ns string, r Ref, topLevel bool) (*Workload, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return nil, nil // a reference the webhook would refuse names no workload
	}
	key := types.NamespacedName{Namespace: ns, Name: r.Name}
	var w *Workload
	switch gk := (schema.GroupKind{Group: gv.Group, Kind: r.Kind}); gk {
	case ReplicaSetKind:
		w, err = f.replicaSet(ctx, key, r.UID, topLevel)
	case DeploymentKind:
		w, err = f.deployment(ctx, key, r.UID)
	case StatefulSetKind:
		w, err = f.typed(ctx, key, r.UID, &appsv1.StatefulSet{}, func(o client.Object) *int32 { return o.(*appsv1.StatefulSet).Spec.Replicas })
	case CloneSetKind:
		w, err = f.typed(ctx, key, r.UID, &kruiseappsv1alpha1.CloneSet{},
			func(o client.Object) *int32 { return o.(*kruiseappsv1alpha1.CloneSet).Spec.Replicas })
	case AdvancedStatefulSetKind:
		w, err = f.typed(ctx, key, r.UID, &kruiseappsv1beta1.StatefulSet{},
			func(o client.Object) *int32 { return o.(*kruiseappsv1beta1.StatefulSet).Spec.Replicas })
	default:
		w, err = f.scaled(ctx, key, r.UID, gv.WithKind(r.Kind))
	}
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	return w, err
}

// typed reads obj by key: a workload owning its pods, of replicas (default 1, as the API servers default it).
func (f *Finder) typed(ctx context.Context, key types.NamespacedName, uid types.UID, obj client.Object,
	replicas func(client.Object) *int32) (*Workload, error) {
	if ok, err := f.get(ctx, key, uid, obj); !ok || err != nil {
		return nil, err
	}
	return &Workload{UID: obj.GetUID(), Replicas: ptr.Deref(replicas(obj), 1), Owners: []types.UID{obj.GetUID()}}, nil
}

func (f *Finder) replicaSet(ctx context.Context, key types.NamespacedName, uid types.UID, topLevel bool) (*Workload, error) {
	rs := &appsv1.ReplicaSet{}
	if ok, err := f.get(ctx, key, uid, rs); !ok || err != nil {
		return nil, err
	}
	if owner := metav1.GetControllerOfNoCopy(rs); topLevel && owner != nil && owner.Kind == DeploymentKind.Kind {
		return f.deployment(ctx, types.NamespacedName{Namespace: key.Namespace, Name: owner.Name}, owner.UID)
	}
	return &Workload{UID: rs.UID, Replicas: ptr.Deref(rs.Spec.Replicas, 1), Owners: []types.UID{rs.UID}}, nil
}

// deployment reads a Deployment, whose pods its ReplicaSets own.
func (f *Finder) deployment(ctx context.Context, key types.NamespacedName, uid types.UID) (*Workload, error) {
	d := &appsv1.Deployment{}
	if ok, err := f.get(ctx, key, uid, d); !ok || err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, nil // the API server refuses such a Deployment: nothing to count
	}
	list := &appsv1.ReplicaSetList{}
	if err := f.Client.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the ReplicaSets of Deployment %s: %w", key.Name, err)
	}
	w := &Workload{UID: d.UID, Replicas: ptr.Deref(d.Spec.Replicas, 1)}
	for i := range list.Items {
		if owner := metav1.GetControllerOfNoCopy(&list.Items[i]); owner != nil && owner.UID == d.UID && list.Items[i].DeletionTimestamp == nil {
			w.Owners = append(w.Owners, list.Items[i].UID)
		}
	}
	if len(w.Owners) == 0 {
		w.Owners = []types.UID{d.UID}
	}
	return w, nil
}

// scaled reads any other workload through its scale subresource, upstream's way for custom workloads: the
// pods it owns, or else those of its scale's selector.
func (f *Finder) scaled(ctx context.Context, key types.NamespacedName, uid types.UID, gvk schema.GroupVersionKind) (*Workload, error) {
	obj, scale := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	scale.SetGroupVersionKind(scaleKind)
	if err := f.Client.SubResource("scale").Get(ctx, obj, scale); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the scale of %s %s: %w", gvk.Kind, key.Name, err)
	}
	if uid != "" && scale.GetUID() != uid {
		return nil, nil
	}
	replicas, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	w := &Workload{UID: scale.GetUID(), Replicas: int32(replicas), Owners: []types.UID{scale.GetUID()}}
	if s, _, _ := unstructured.NestedString(scale.Object, "status", "selector"); s != "" {
		if sel, err := labels.Parse(s); err == nil && !sel.Empty() {
			w.Selector = sel
		}
	}
	return w, nil
}

// get reads key into obj: false when it does not exist, is being deleted or is another object than uid.
func (f *Finder) get(ctx context.Context, key types.NamespacedName, uid types.UID, obj client.Object) (bool, error) {
	if err := f.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %T %s: %w", obj, key.Name, err)
	}
	return obj.GetDeletionTimestamp() == nil && (uid == "" || obj.GetUID() == uid), nil
}
