package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// member reports whether a pod the selector matches belongs to the set as upstream's controller tells: its
// name is the set's name and an ordinal.
func member(set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod) bool {
	return plan.Ordinal(set.Name, p.Name) >= 0
}

// claimPods returns the pods the set controls, as the built-in controllers claim them (podclaim): owned pods
// that are no longer members are released, orphan members are adopted (a pod left by a deleted apps/v1
// StatefulSet of the same name, say).
func (r *Reconciler) claimPods(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	c := podclaim.Claimer[*kruiseappsv1beta1.StatefulSet]{Kind: setKind, Recorder: r.Recorder, Patch: r.patchPod, Member: member,
		Released: "it is no longer a member of the StatefulSet"}
	return c.Claim(ctx, r.podReader(), set, sel)
}

// podReader reads pods through the pod informer's index, or through the client's field index of the same
// name when the controller was not set up with a manager.
func (r *Reconciler) podReader() *cacheindex.Pods {
	if r.pods == nil {
		return podclaim.FromClient(r.Client)
	}
	return r.pods
}

// adopters maps an orphan pod's events to the sets that may adopt it: claimPods adopts only when a
// reconcile runs, and Owns maps no event of a pod without a controller.
func (r *Reconciler) adopters() handler.EventHandler {
	return orphans.Handler(orphans.From(r.Client, func() client.ObjectList { return &kruiseappsv1beta1.StatefulSetList{} },
		func(set *kruiseappsv1beta1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector }))
}
