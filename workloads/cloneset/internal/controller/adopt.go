package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
)

// claimPods returns the pods the CloneSet controls, releasing those its selector no longer matches and
// adopting the orphans it matches (podclaim): a pod left behind by a deleted owner, or created by hand with
// the CloneSet's labels, is counted and managed instead of running beside it. Shallow copies of the cache's
// pods, not deep ones: a reconcile reads every pod of the CloneSet and writes few, and deep copies were a
// fifth of the manager's CPU at a thousand pods.
func (r *Reconciler) claimPods(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, sel labels.Selector) ([]*corev1.Pod, error) {
	c := podclaim.Claimer[*kruiseappsv1alpha1.CloneSet]{Kind: cloneSetKind, Recorder: r.Recorder, Patch: r.patchPod,
		Released: "the selector no longer matches its labels"}
	return c.Claim(ctx, r.podReader(), cs, sel)
}

// podReader reads pods by controller: the index SetupWithManager registered, or through the client for a
// reconciler set up by hand.
func (r *Reconciler) podReader() *cacheindex.Pods {
	if r.pods == nil {
		return podclaim.FromClient(r.Client)
	}
	return r.pods
}

// adopters maps an orphan pod's events to the CloneSets that may adopt it: claimPods adopts only when a
// reconcile runs, and Owns maps no event of a pod without a controller.
func (r *Reconciler) adopters() handler.EventHandler {
	return orphans.Handler(orphans.From(r.Client, func() client.ObjectList { return &kruiseappsv1alpha1.CloneSetList{} },
		func(cs *kruiseappsv1alpha1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector }))
}
