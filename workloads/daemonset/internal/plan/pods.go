package plan

import (
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// Labels daemon pods carry: the revision's hash, and the template generation when the DaemonSet has one
// (GenerationAnnotation).
const (
	HashLabel            = appsv1.ControllerRevisionHashLabelKey
	GenerationLabel      = "pod-template-generation"
	GenerationAnnotation = appsv1.DeprecatedTemplateGeneration
)

// Revision names the DaemonSet's update revision the way its pods say which one they run.
type Revision struct {
	// Hash is the controller-revision-hash of the update revision.
	Hash string
	// Generation is the DaemonSet's deprecated.daemonset.template.generation annotation, when set: kube's
	// DaemonSet controller (and upstream's) also count a pod labelled with it as updated.
	Generation *int64
}

// Updated reports whether the pod runs the update revision.
func (r Revision) Updated(p *corev1.Pod) bool {
	if r.Hash != "" && p.Labels[HashLabel] == r.Hash {
		return true
	}
	return r.Generation != nil && p.Labels[GenerationLabel] == strconv.FormatInt(*r.Generation, 10)
}

// PreDeleting reports whether the pod waits in PreparingDelete for its preDelete hook.
func PreDeleting(p *corev1.Pod) bool {
	return p != nil && lifecycle.State(p) == kruiseappspub.LifecycleStatePreparingDelete
}

func nilOrPreDeleting(p *corev1.Pod) bool { return p == nil || PreDeleting(p) }

// Ready reports whether the pod's Ready condition is True.
func Ready(p *corev1.Pod) bool { return podcondition.IsReady(p) }

// Available reports whether the pod has been Ready for minReadySeconds at now; a Ready pod that has not
// yet says how long until it is.
func Available(p *corev1.Pod, minReadySeconds int32, now time.Time) (bool, time.Duration) {
	c := podcondition.Get(p, corev1.PodReady)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false, 0
	}
	left := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if minReadySeconds > 0 && left > 0 {
		return false, left
	}
	return true, 0
}

// availableDaemon is Available for the status, which also requires an in-place update to be finished.
func availableDaemon(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	ok, _ := Available(p, minReadySeconds, now)
	return ok && (!inplaceupdate.HasGate(p) || inplaceupdate.Ready(p))
}

// sortByAge orders pods as kube's DaemonSet controller ranks them: bound pods first, then oldest first,
// then by name.
func sortByAge(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// split finds the one updated and the one old pod among a node's pods not being deleted; ok is false when
// there are more of either, which the manage step prunes first.
func (r Revision) split(pods []*corev1.Pod) (updated, old *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		slot := &old
		if r.Updated(p) {
			slot = &updated
		}
		if *slot != nil {
			return nil, nil, false
		}
		*slot = p
	}
	return updated, old, true
}

// RevisionOf is the update revision of ds whose hash is hash; a template generation annotation that is no
// number is ignored, as upstream ignores it.
func RevisionOf(ds *kruiseappsv1alpha1.DaemonSet, hash string) Revision {
	r := Revision{Hash: hash}
	if raw, ok := ds.Annotations[GenerationAnnotation]; ok {
		if g, err := strconv.ParseInt(raw, 10, 64); err == nil {
			r.Generation = &g
		}
	}
	return r
}
