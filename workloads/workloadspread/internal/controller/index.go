package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/admission"
)

// TargetIndex indexes WorkloadSpreads by the group, kind and name of their target (TargetKey).
const TargetIndex = "workloadspread.target"

// TargetKey is the index value of a workload: group/kind/name.
func TargetKey(gk schema.GroupKind, name string) string {
	return gk.Group + "/" + gk.Kind + "/" + name
}

// IndexTargets registers TargetIndex on the manager's cache.
func IndexTargets(mgr manager.Manager) error {
	return mgr.GetFieldIndexer().IndexField(context.Background(), &kruiseappsv1alpha1.WorkloadSpread{}, TargetIndex, TargetKeys)
}

// TargetKeys are the TargetIndex values of a WorkloadSpread.
func TargetKeys(obj client.Object) []string {
	ws, ok := obj.(*kruiseappsv1alpha1.WorkloadSpread)
	if !ok || ws.Spec.TargetReference == nil {
		return nil
	}
	gk, ok := admission.TargetKind(ws.Spec.TargetReference)
	if !ok {
		return nil
	}
	return []string{TargetKey(gk, ws.Spec.TargetReference.Name)}
}

// Spreading lists the WorkloadSpreads of namespace ns whose target is the workload gk named name.
func Spreading(ctx context.Context, reader client.Reader, ns string, gk schema.GroupKind, name string) ([]kruiseappsv1alpha1.WorkloadSpread, error) {
	list := &kruiseappsv1alpha1.WorkloadSpreadList{}
	if err := reader.List(ctx, list, client.InNamespace(ns), client.MatchingFields{TargetIndex: TargetKey(gk, name)}); err != nil {
		return nil, fmt.Errorf("listing the WorkloadSpreads of %s %s: %w", gk.Kind, name, err)
	}
	return list.Items, nil
}

// TopLevel is the workload a pod's controller reference stands for as a WorkloadSpread target: a
// Deployment's ReplicaSet stands for the Deployment, anything else for itself. The ReplicaSet is read from
// reader, or from live when reader lacks it: a Deployment's new ReplicaSet creates its first pods before the
// cache may hold it. ok is false for a reference of no supported kind.
func TopLevel(ctx context.Context, reader, live client.Reader, ns string, ref *metav1.OwnerReference) (schema.GroupKind, string, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{}, "", false, nil
	}
	gk := gv.WithKind(ref.Kind).GroupKind()
	if !supported(gk) {
		return gk, "", false, nil
	}
	if gk != (schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}) {
		return gk, ref.Name, true, nil
	}
	rs := &appsv1.ReplicaSet{}
	key := client.ObjectKey{Namespace: ns, Name: ref.Name}
	err = reader.Get(ctx, key, rs)
	if apierrors.IsNotFound(err) {
		err = live.Get(ctx, key, rs)
	}
	if err != nil {
		return gk, "", false, client.IgnoreNotFound(err)
	}
	if owner := metav1.GetControllerOfNoCopy(rs); owner != nil && owner.Kind == "Deployment" {
		return schema.GroupKind{Group: "apps", Kind: "Deployment"}, owner.Name, true, nil
	}
	return gk, ref.Name, true, nil
}

func supported(gk schema.GroupKind) bool {
	for _, t := range admission.Targets {
		if t == gk {
			return true
		}
	}
	return false
}
