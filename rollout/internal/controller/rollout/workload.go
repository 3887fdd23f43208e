package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// inProgressing is the JSON of the workload's in-progressing annotation.
type inProgressing struct {
	RolloutName string `json:"rolloutName"`
}

// workloadObs condenses what the planner needs from a workload. A malformed in-progressing annotation
// counts as a release of this Rollout, so finalising clears it instead of leaving the workload stuck.
func workloadObs(info *control.WorkloadInfo, rollout string) *plan.WorkloadObs {
	obj := info.Object
	return &plan.WorkloadObs{
		InProgressing:  marksRelease(obj.GetAnnotations()[rolloutsv1beta1.InProgressingAnnotation], rollout),
		StableRevision: info.StableRevision,
		UpdateRevision: info.UpdateRevision,
		Replicas:       info.Replicas,
		RolloutID:      rolloutID(obj),
		Generation:     obj.GetGeneration(),
		Consistent:     info.Consistent,
	}
}

func marksRelease(raw, rollout string) bool {
	if raw == "" {
		return false
	}
	var st inProgressing
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return true
	}
	return st.RolloutName == rollout
}

// rolloutID reads the release id from the workload's label, then its annotation.
func rolloutID(obj client.Object) string {
	if id := obj.GetLabels()[rolloutsv1beta1.RolloutIDLabel]; id != "" {
		return id
	}
	return obj.GetAnnotations()[rolloutsv1beta1.RolloutIDLabel]
}

// workloadType is the value of the workload-type label the workload webhooks select on.
func workloadType(ref rolloutsv1beta1.ObjectRef) string {
	switch ref.Kind {
	case "Deployment":
		return rolloutsv1beta1.WorkloadTypeDeployment
	case "CloneSet":
		return rolloutsv1beta1.WorkloadTypeCloneSet
	case "DaemonSet":
		return rolloutsv1beta1.WorkloadTypeDaemonSet
	default:
		return rolloutsv1beta1.WorkloadTypeStatefulSet
	}
}

// syncWorkloadMetadata labels the workload for the webhooks and, when asked, removes the in-progressing
// annotation. One merge patch, sent only when something changes.
func (r *Reconciler) syncWorkloadMetadata(ctx context.Context, ro *rolloutsv1beta1.Rollout, obj client.Object, release, deleting bool) error {
	labels := map[string]any{}
	annotations := map[string]any{}
	want := workloadType(ro.Spec.WorkloadRef)
	if !deleting && obj.GetLabels()[rolloutsv1beta1.WorkloadTypeLabel] != want {
		labels[rolloutsv1beta1.WorkloadTypeLabel] = want
	}
	if release && obj.GetAnnotations()[rolloutsv1beta1.InProgressingAnnotation] != "" {
		annotations[rolloutsv1beta1.InProgressingAnnotation] = nil
	}
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("patching workload metadata: %w", err)
	}
	return nil
}
