package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// createWorkers bounds the pod creates, and again the settling writes of new pods, in flight across the
// controller's reconciles, so that scale-ups of several large sets cannot put thousands of requests on the
// API server at once (the CloneSet controller's measured bound).
const createWorkers = 256

// createPods creates the planned pods in slow-start batches (1, 2, 4, ...), so that a failing create
// (quota, admission) costs one call instead of hundreds; each pod's claims are created first. Each created pod
// is settled (settleNew) beside the next batches, and createPods returns once all are.
func (r *Reconciler) createPods(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions, creations []plan.Creation) error {
	pods := make([]*corev1.Pod, 0, len(creations))
	for _, c := range creations {
		pods = append(pods, r.newPod(set, revs, c))
	}
	var settling sync.WaitGroup
	defer settling.Wait()
	for batch := 1; len(pods) > 0; batch *= 2 {
		n := min(batch, len(pods))
		if err := r.createBatch(ctx, set, w, pods[:n], &settling); err != nil {
			return err
		}
		pods = pods[n:]
	}
	return nil
}

func (r *Reconciler) createBatch(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, pods []*corev1.Pod, settling *sync.WaitGroup) error {
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			r.createSlots <- struct{}{}
			errs[i] = r.createPod(ctx, set, w, p)
			<-r.createSlots
			if errs[i] == nil {
				settling.Go(func() { r.settleNew(ctx, set, p) })
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Reconciler) createPod(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, p *corev1.Pod) error {
	if err := r.createClaims(ctx, set, w, p); err != nil {
		return err
	}
	err := r.Client.Create(ctx, p)
	podMetrics.Count(podmetrics.Create, err)
	if err != nil {
		r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "FailedCreate", "Create",
			"create Pod %s in StatefulSet %s failed error: %v", p.Name, set.Name, err)
		return fmt.Errorf("create pod %s: %w", p.Name, err)
	}
	r.expectations.Created(client.ObjectKeyFromObject(set), p.Name)
	r.Recorder.Eventf(set, p, corev1.EventTypeNormal, "SuccessfulCreate", "Create",
		"create Pod %s in StatefulSet %s successful", p.Name, set.Name)
	return nil
}

// settleNew initialises the readiness gates' conditions of a pod just created, sparing the pod readiness
// controller its write: written before the kubelet starts the pod, they let it report Ready in its first
// status. Whatever fails here, the next pass's refresh does again.
func (r *Reconciler) settleNew(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod) {
	r.settleSlots <- struct{}{}
	defer func() { <-r.settleSlots }()
	if err := r.patchPodStatus(ctx, set, p, inplaceupdate.InitGates(metav1.NewTime(r.Clock.Now()))); err != nil {
		logf.FromContext(ctx).V(1).Info("A new pod is left to the next pass", "pod", p.Name, "error", err)
	}
}

// newPod is the set's pod of a creation: the revision's template (the update revision's when the current
// one is unknown) with the pod's identity, the set's controller reference, its lifecycle state, the
// KruisePodReady gate, and each volume claim template bound to the pod's claim.
func (r *Reconciler) newPod(set *kruiseappsv1beta1.StatefulSet, revs *revisions, c plan.Creation) *corev1.Pod {
	name, t := c.Revision, revs.template(c.Revision)
	if t == nil {
		name, t = revs.update.Name, revs.template(revs.update.Name)
	}
	t = t.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: plan.PodName(set.Name, c.Ordinal), Namespace: set.Namespace,
			Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations), Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, setKind)},
		},
		Spec: t.Spec,
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[plan.RevisionLabel] = name
	r.setIdentity(p, c.Ordinal)
	p.Spec.Hostname, p.Spec.Subdomain = p.Name, set.Spec.ServiceName
	lifecycle.SetState(p, initialState(set, p), r.Clock.Now())
	podreadiness.AddGate(p)
	bindClaims(p, set, c.Ordinal)
	return p
}

// setIdentity labels the pod with its name and, with the PodIndexLabel gate, its ordinal.
func (r *Reconciler) setIdentity(p *corev1.Pod, n int32) bool {
	changed := p.Labels[appsv1.StatefulSetPodNameLabel] != p.Name
	p.Labels[appsv1.StatefulSetPodNameLabel] = p.Name
	if r.IndexLabel {
		index := strconv.Itoa(int(n))
		changed = changed || p.Labels[appsv1.PodIndexLabel] != index
		p.Labels[appsv1.PodIndexLabel] = index
	}
	return changed
}

// initialState is a new pod's lifecycle state, upstream's: Normal, unless a preNormal hook is defined
// whose handlers the template does not all carry.
func initialState(set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod) kruiseappspub.LifecycleStateType {
	if lc := set.Spec.Lifecycle; lc != nil && lc.PreNormal != nil && !lifecycle.AllHooked(lc.PreNormal, p) {
		return kruiseappspub.LifecycleStatePreparingNormal
	}
	return kruiseappspub.LifecycleStateNormal
}

// bindClaims points each volume claim template's volume at the pod's claim, replacing a template volume of
// the same name.
func bindClaims(p *corev1.Pod, set *kruiseappsv1beta1.StatefulSet, n int32) {
	for _, vct := range set.Spec.VolumeClaimTemplates {
		v := corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: plan.ClaimName(vct.Name, set.Name, n)}}}
		replaced := false
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == vct.Name {
				p.Spec.Volumes[i], replaced = v, true
			}
		}
		if !replaced {
			p.Spec.Volumes = append(p.Spec.Volumes, v)
		}
	}
}

// repairPods gives pods the identity labels they lack (adopted pods, or pods of older controllers).
func (r *Reconciler) repairPods(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, pods []*corev1.Pod) error {
	return eachPod(pods, func(p *corev1.Pod) error {
		n := plan.Ordinal(set.Name, p.Name)
		err := r.patchPod(ctx, set, p, func(p *corev1.Pod) bool { return r.setIdentity(p, n) })
		if err == nil {
			r.Recorder.Eventf(set, p, corev1.EventTypeNormal, "SuccessfulUpdate", "Update", "update Pod %s in StatefulSet %s successful", p.Name, set.Name)
		}
		return err
	})
}
