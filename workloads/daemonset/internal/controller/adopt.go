package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
)

// claimPods returns the pods the DaemonSet controls, releasing those its selector no longer matches and
// adopting the orphans it matches (podclaim), such as the pods of a native DaemonSet deleted with
// --cascade=orphan to move to an Advanced one.
func (r *Reconciler) claimPods(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, sel labels.Selector) ([]*corev1.Pod, error) {
	c := podclaim.Claimer[*kruiseappsv1alpha1.DaemonSet]{Kind: plan.Kind, Recorder: r.Recorder, Patch: r.patchPod,
		Released: "the selector no longer matches its labels"}
	return c.Claim(ctx, r.pods, ds, sel)
}

// adopters maps an orphan pod's events to the DaemonSets that may adopt it: claimPods adopts only when a
// reconcile runs, and Owns maps no event of a pod without a controller.
func (r *Reconciler) adopters() handler.EventHandler {
	return orphans.Handler(orphans.From(r.Client, func() client.ObjectList { return &kruiseappsv1alpha1.DaemonSetList{} },
		func(ds *kruiseappsv1alpha1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }))
}
