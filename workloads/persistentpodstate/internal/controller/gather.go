package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/ordinals"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// target is a PersistentPodState's StatefulSet as the plan reads it, with what finds its pods.
type target struct {
	plan.Workload
	uid      types.UID
	selector *metav1.LabelSelector
}

// workload reads the StatefulSet the reference names from the cache; a StatefulSet that is gone, or of
// another kind, does not exist.
func (r *Recorder) workload(ctx context.Context, namespace string, ref kruiseappsv1alpha1.TargetReference) (target, error) {
	if ref.Kind != "StatefulSet" {
		return target{}, nil
	}
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	switch groupOf(ref.APIVersion) {
	case appsv1.GroupName:
		set := &appsv1.StatefulSet{}
		if err := r.Client.Get(ctx, key, set); err != nil {
			return target{}, client.IgnoreNotFound(err)
		}
		return nativeTarget(set), nil
	case kruiseappsv1beta1.GroupVersion.Group:
		set := &kruiseappsv1beta1.StatefulSet{}
		if err := r.Client.Get(ctx, key, set); err != nil {
			return target{}, client.IgnoreNotFound(err)
		}
		return r.advancedTarget(set), nil
	}
	return target{}, nil
}

func nativeTarget(set *appsv1.StatefulSet) target {
	t := target{uid: set.UID, selector: set.Spec.Selector}
	t.Exists, t.Name, t.Replicas = set.DeletionTimestamp == nil, set.Name, replicas(set.Spec.Replicas)
	if set.Spec.Ordinals != nil {
		t.Start = set.Spec.Ordinals.Start
	}
	return t
}

func (r *Recorder) advancedTarget(set *kruiseappsv1beta1.StatefulSet) target {
	t := target{uid: set.UID, selector: set.Spec.Selector}
	t.Exists, t.Name, t.Replicas = set.DeletionTimestamp == nil, set.Name, replicas(set.Spec.Replicas)
	if r.StartOrdinal && set.Spec.Ordinals != nil {
		t.Start = set.Spec.Ordinals.Start
	}
	// An invalid list reserves nothing, as the statefulset module reads it.
	t.Reserved, _ = ordinals.ParseReserved(set.Spec.ReserveOrdinals)
	return t
}

// groupOf is the API group of apiVersion; "" when it is not one (the webhook refuses such a reference).
func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// replicas defaults spec.replicas to 1, as the API server does for both kinds.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// pods are the cached pods the StatefulSet controls.
func (r *Recorder) pods(ctx context.Context, namespace string, t target) ([]plan.Pod, error) {
	if !t.Exists || t.selector == nil {
		return nil, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil {
		return nil, fmt.Errorf("the selector of StatefulSet %s/%s: %w", namespace, t.Name, err)
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing the pods of StatefulSet %s/%s: %w", namespace, t.Name, err)
	}
	var out []plan.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == t.uid {
			out = append(out, plan.Pod{Name: p.Name, NodeName: p.Spec.NodeName, Ready: podcondition.IsReady(p), Annotations: p.Annotations})
		}
	}
	return out, nil
}

// nodeLabels are the labels of the nodes of the Ready pods, from the cache; a node that is gone is left out.
func (r *Recorder) nodeLabels(ctx context.Context, pods []plan.Pod) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, p := range pods {
		if _, done := out[p.NodeName]; done || !p.Ready || p.NodeName == "" {
			continue
		}
		node := &corev1.Node{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: p.NodeName}, node)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", p.NodeName, err)
		}
		out[p.NodeName] = node.Labels
	}
	return out, nil
}
