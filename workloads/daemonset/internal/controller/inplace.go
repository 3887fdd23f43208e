package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// inPlaceSpec is the in-place update of a pod to the update revision, when the strategy is
// InPlaceIfPossible, the pod waits for the InPlaceUpdateReady gate, its revision's template is known and only
// images and template metadata changed; upstream recreates the pod otherwise.
func (r *Reconciler) inPlaceSpec(ds *kruiseappsv1alpha1.DaemonSet, w *world, p *corev1.Pod) (*inplaceupdate.Spec, bool) {
	if !w.in.Strategy.InPlace || !inplaceupdate.HasGate(p) {
		return nil, false
	}
	from := w.revs.templates[p.Labels[plan.HashLabel]]
	if from == nil {
		return nil, false
	}
	return inplaceupdate.Calculate(from, &ds.Spec.Template)
}

// updateInPlace marks the pod not ready (a status write, so that endpoints drop it before its containers
// restart), then patches images, template metadata, revision labels and the update state in one write.
func (r *Reconciler) updateInPlace(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world, p *corev1.Pod, spec *inplaceupdate.Spec) error {
	at := metav1.NewTime(r.Clock.Now())
	err := r.patchPodStatus(ctx, ds, p, func(p *corev1.Pod) bool { return inplaceupdate.SetReady(p, false, at) })
	if err == nil {
		var applyErr error
		err = r.patchPod(ctx, ds, p, func(p *corev1.Pod) bool {
			if applyErr = inplaceupdate.Apply(p, spec, w.revs.hash, at); applyErr != nil {
				return false
			}
			setRevisionLabels(p, w.in.Revision)
			return true
		})
		err = errors.Join(applyErr, err)
	}
	podMetrics.Count(podmetrics.UpdateInPlace, err)
	if err != nil {
		r.Recorder.Eventf(ds, p, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "Update",
			"failed to update pod %s in-place(revision %v): %v", p.Name, w.revs.update.Name, err)
		return fmt.Errorf("update pod %s in place: %w", p.Name, err)
	}
	r.Recorder.Eventf(ds, p, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "Update", "successfully update pod %s in-place", p.Name)
	return nil
}

// setRevisionLabels labels a pod with the revision: its hash, and its template generation when it has one.
func setRevisionLabels(p *corev1.Pod, rev plan.Revision) {
	p.Labels[plan.HashLabel] = rev.Hash
	if rev.Generation != nil {
		p.Labels[plan.GenerationLabel] = strconv.FormatInt(*rev.Generation, 10)
	}
}

// refresh finishes what pods are doing: an in-place update the kubelet completed makes the pod ready
// again, and the readiness gates of a pod created without their conditions get them.
func (r *Reconciler) refresh(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world) error {
	var todo []*corev1.Pod
	for _, p := range w.pods {
		if p.DeletionTimestamp == nil && (!inplaceupdate.Ready(p) || inplaceupdate.Uninitialized(p) || podreadiness.NeedsCondition(p)) {
			todo = append(todo, p)
		}
	}
	return eachPod(todo, func(p *corev1.Pod) error { return r.refreshPod(ctx, ds, w, p) })
}

func (r *Reconciler) refreshPod(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world, p *corev1.Pod) error {
	prog, err := inplaceupdate.Advance(p, r.Clock.Now(), inplaceupdate.Hooks{
		Warn: func(p *corev1.Pod, err error) {
			r.Recorder.Eventf(ds, p, corev1.EventTypeWarning, "InvalidInPlaceUpdateState", "Update", "pod %s: %v", p.Name, err)
		},
		WakeIn: w.wakeIn,
		Resume: func(p *corev1.Pod, s *inplaceupdate.Spec) error {
			return r.patchPod(ctx, ds, p, func(p *corev1.Pod) bool { inplaceupdate.Resume(p, s); return true })
		},
	})
	if err != nil || prog.Status == nil {
		return err
	}
	if err := r.patchPodStatus(ctx, ds, p, prog.Status); err != nil {
		return err
	}
	if prog.Started != nil {
		podMetrics.ObserveInPlace(*prog.Started, prog.At)
	}
	return nil
}
