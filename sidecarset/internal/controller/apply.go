package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/sidecarset/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/parallel"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// podWorkers bounds the pod writes of one reconcile in flight at once.
const podWorkers = 32

// podChange is one kind of in-place change the plan makes to pods, and how it is told in events.
type podChange struct {
	apply          func(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet, revision string, now metav1.Time) (*corev1.Pod, error)
	done, failed   string // event reasons
	doneNote, what string
}

var (
	// update gives pods the set's sidecar images.
	update = podChange{apply: plan.UpdatePod, done: "SuccessfulUpdatePodInPlace", failed: "FailedUpdatePodInPlace",
		doneNote: "Updated the sidecars of pod %s/%s in place", what: "updating the sidecars"}
	// reset returns the old containers of finished hot upgrades to the empty image.
	reset = podChange{apply: plan.ResetPod, done: "ResetContainerSucceed", failed: "ResetContainerFailed",
		doneNote: "Reset the old hot-upgrade sidecars of pod %s/%s to the empty image", what: "resetting the old hot-upgrade sidecars"}
)

// changePods makes change to pods in place: one patch per pod, images and annotations together, applied
// only to the version the plan saw.
func (r *Reconciler) changePods(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet, revision string, pods []*corev1.Pod,
	change podChange) error {
	now := metav1.NewTime(r.Clock.Now())
	return parallel.Each(pods, podWorkers, func(pod *corev1.Pod) error {
		changed, err := change.apply(pod, set, revision, now)
		if err != nil {
			return err
		}
		err = r.Client.Patch(ctx, changed, client.StrategicMergeFrom(pod, client.MergeFromWithOptimisticLock{}))
		podMetrics.Count(podmetrics.UpdateInPlace, client.IgnoreNotFound(err))
		if err = client.IgnoreNotFound(err); err != nil {
			r.Recorder.Eventf(set, pod, corev1.EventTypeWarning, change.failed, "Update", "Error %s of pod %s/%s: %v",
				change.what, pod.Namespace, pod.Name, err)
			return fmt.Errorf("%s of pod %s/%s: %w", change.what, pod.Namespace, pod.Name, err)
		}
		r.expectations.Updated(client.ObjectKeyFromObject(set), changed.Name, changed.ResourceVersion)
		r.Recorder.Eventf(set, pod, corev1.EventTypeNormal, change.done, "Update", change.doneNote, pod.Namespace, pod.Name)
		return nil
	})
}

// writeConditions writes the pods' SidecarSetUpgradable conditions.
func (r *Reconciler) writeConditions(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet, pods []*corev1.Pod) error {
	return parallel.Each(pods, podWorkers, func(pod *corev1.Pod) error {
		patch, err := conditionPatch(pod)
		if err != nil {
			return err
		}
		if err := client.IgnoreNotFound(r.Client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))); err != nil {
			return fmt.Errorf("writing the SidecarSetUpgradable condition of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if c := podcondition.Get(pod, kruiseappsv1alpha1.SidecarSetUpgradable); c != nil && c.Status == corev1.ConditionFalse {
			r.Recorder.Eventf(set, pod, corev1.EventTypeWarning, "PodNotUpgradable", "Update",
				"Pod %s/%s keeps its sidecars: the SidecarSet changed more than images, which takes effect when the pod is re-created",
				pod.Namespace, pod.Name)
		}
		return nil
	})
}

// conditionPatch sets the pod's SidecarSetUpgradable condition, merged by type into its others.
func conditionPatch(pod *corev1.Pod) ([]byte, error) {
	c := podcondition.Get(pod, kruiseappsv1alpha1.SidecarSetUpgradable)
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{*c}}})
}

// writeStatus writes the counters and latest revision when they changed, with the generation they reflect.
func (r *Reconciler) writeStatus(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet, c plan.Counts, latest string) error {
	next := set.Status
	next.ObservedGeneration = set.Generation
	next.MatchedPods, next.UpdatedPods, next.ReadyPods, next.UpdatedReadyPods = c.Matched, c.Updated, c.Ready, c.UpdatedReady
	next.LatestRevision = latest
	if equality.Semantic.DeepEqual(set.Status, next) {
		return nil
	}
	return statuspatch.WriteLocked(ctx, r.Client, set, set.Status, next)
}

// record tells why outdated pods wait; the recorder folds repeats into one series.
func (r *Reconciler) record(set *kruiseappsv1alpha1.SidecarSet, p plan.Plan) {
	if p.Blocked != "" && p.Counts.Updated < p.Counts.Matched {
		r.Recorder.Eventf(set, nil, corev1.EventTypeNormal, "UpdateHeld", "Update", "%d of %d pods are outdated: %s",
			p.Counts.Matched-p.Counts.Updated, p.Counts.Matched, p.Blocked)
	}
}
