package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// podTemplateHashLabel carries a revision's short hash on pods, as upstream CloneSet pods do.
const podTemplateHashLabel = appsv1.DefaultDeploymentUniqueLabelKey

// createPods creates the planned pods in slow-start batches (1, 2, 4, ...), so that a failing create
// (quota, admission) costs one call instead of hundreds; each pod's claims are created first. Each created
// pod is then settled (settleNew) beside the next batches, and createPods returns once all are.
func (r *Reconciler) createPods(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, creations []plan.Creation) error {
	pods := r.newPods(cs, w, revs, creations)
	settling := newSettler(r, cs)
	defer settling.wait()
	for batch := 1; len(pods) > 0; batch *= 2 {
		n := min(batch, len(pods))
		if err := r.createBatch(ctx, cs, pods[:n], settling); err != nil {
			return err
		}
		pods = pods[n:]
	}
	return nil
}

func (r *Reconciler) createBatch(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, pods []*corev1.Pod, settling *settler) error {
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			r.createSlots <- struct{}{}
			errs[i] = r.createPod(ctx, cs, p)
			<-r.createSlots
			if errs[i] == nil {
				settling.start(ctx, p)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Reconciler) createPod(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod) error {
	if err := r.createClaims(ctx, cs, p.Labels[kruiseappsv1alpha1.CloneSetInstanceID]); err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(cs)
	err := r.Client.Create(ctx, p)
	podMetrics.Count(podmetrics.Create, err)
	if err != nil {
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "failed to create pod: %v", err)
		return fmt.Errorf("create pod %s: %w", p.Name, err)
	}
	r.expectations.Created(key, p.Name)
	r.Recorder.Eventf(cs, p, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "succeed to create pod %s", p.Name)
	return nil
}

// settler settles pods just created. It has slots of its own beside the creates': a pod's settling
// writes must not queue behind the next batches' creates, or the kubelet starts the pods first.
type settler struct {
	r  *Reconciler
	cs *kruiseappsv1alpha1.CloneSet
	wg sync.WaitGroup
}

func newSettler(r *Reconciler, cs *kruiseappsv1alpha1.CloneSet) *settler {
	return &settler{r: r, cs: cs}
}

func (s *settler) start(ctx context.Context, p *corev1.Pod) {
	s.wg.Go(func() {
		s.r.settleSlots <- struct{}{}
		defer func() { <-s.r.settleSlots }()
		if err := s.r.settleNew(ctx, s.cs, p); err != nil {
			logf.FromContext(ctx).V(1).Info("A new pod is left to the next pass", "pod", p.Name, "error", err)
		}
	})
}

func (s *settler) wait() { s.wg.Wait() }

// settleNew does for a pod just created what the next pass's refresh would: the readiness gates'
// conditions and the lifecycle state. Written before the kubelet starts the pod, the conditions let it
// report Ready in its first status instead of a second one after this write; and the pass after a large
// scale-up has no thousand pods left to settle. Whatever fails here, refresh does again.
func (r *Reconciler) settleNew(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod) error {
	return r.applyDecision(ctx, cs, p, decide(cs, p, lifecycle.IntentSettle), inplaceupdate.InitGates(metav1.NewTime(r.Clock.Now())))
}

// newPods builds the planned pods; a creation without an id gets a fresh one no pod or claim uses.
func (r *Reconciler) newPods(cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, creations []plan.Creation) []*corev1.Pod {
	used := w.usedIDs()
	for _, c := range w.claims {
		used.Insert(c.Labels[kruiseappsv1alpha1.CloneSetInstanceID])
	}
	pods := make([]*corev1.Pod, 0, len(creations))
	for _, c := range creations {
		id := c.ID
		if id == "" {
			id = r.freshID(used)
		}
		used.Insert(id)
		name, t := c.Revision, revs.template(c.Revision)
		if t == nil {
			name, t = revs.update.Name, revs.template(revs.update.Name)
		}
		pods = append(pods, r.newPod(cs, t, name, id))
	}
	return pods
}

func (r *Reconciler) freshID(used sets.Set[string]) string {
	for {
		if id := r.NewID(); !used.Has(id) {
			return id
		}
	}
}

// newPod is the pod <cloneset>-<id> of a revision: the template with the instance id, revision and
// lifecycle labels, both readiness gates, and each volume claim template bound to the instance's claim.
func (r *Reconciler) newPod(cs *kruiseappsv1alpha1.CloneSet, t *corev1.PodTemplateSpec, revisionName, id string) *corev1.Pod {
	t = t.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: cs.Name + "-" + id, Namespace: cs.Namespace,
			Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations), Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, cloneSetKind)},
		},
		Spec: t.Spec,
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[kruiseappsv1alpha1.CloneSetInstanceID] = id
	setRevisionLabels(p, revisionName)
	lifecycle.SetState(p, kruiseappspub.LifecycleStatePreparingNormal, r.Clock.Now())
	inplaceupdate.InjectGate(p)
	podreadiness.AddGate(p)
	bindClaims(p, cs, id)
	return p
}

// setRevisionLabels labels a pod with a revision: controller-revision-hash (the name) and
// pod-template-hash (its hash part).
func setRevisionLabels(p *corev1.Pod, revisionName string) {
	p.Labels[plan.RevisionLabel] = revisionName
	p.Labels[podTemplateHashLabel] = revisionName[strings.LastIndex(revisionName, "-")+1:]
}

func claimName(template, cloneSet, id string) string { return template + "-" + cloneSet + "-" + id }

// bindClaims points each volume claim template's volume at the instance's claim, replacing a template
// volume of the same name.
func bindClaims(p *corev1.Pod, cs *kruiseappsv1alpha1.CloneSet, id string) {
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		v := corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: claimName(vct.Name, cs.Name, id)}}}
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

// createClaims creates the instance's claims; existing ones (reused, or created by an earlier attempt)
// are kept.
func (r *Reconciler) createClaims(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, id string) error {
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		c := newClaim(cs, vct, id)
		err := r.Client.Create(ctx, c)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create claim %s: %w", c.Name, err)
		}
		if err == nil {
			r.claimExpectations.Created(client.ObjectKeyFromObject(cs), c.Name)
		}
	}
	return nil
}

func newClaim(cs *kruiseappsv1alpha1.CloneSet, vct corev1.PersistentVolumeClaim, id string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: claimName(vct.Name, cs.Name, id), Namespace: cs.Namespace,
			Labels: maps.Clone(vct.Labels), Annotations: maps.Clone(vct.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, cloneSetKind)},
		},
		Spec: *vct.Spec.DeepCopy(),
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	maps.Copy(c.Labels, cs.Spec.Selector.MatchLabels)
	c.Labels[kruiseappsv1alpha1.CloneSetInstanceID] = id
	return c
}
