package control

// Blue-green style: the workload keeps its old pods and surges new ones beside them, batch by batch, through
// maxSurge. An inflated minReadySeconds keeps the new pods ready but never available, so with maxUnavailable 0
// the workload's own controller never scales the old pods down; traffic is switched by the Rollout. The
// settings the release overrides are saved in the original-deployment-strategy annotation and restored when
// it is finalised.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ErrNotBlueGreenReady is wrapped by UpgradeBatch when the workload is not (or no longer) prepared for a
// blue-green batch; the message names the field.
var ErrNotBlueGreenReady = errors.New("workload is not prepared for a blue-green batch")

// Paths of the fields a blue-green release writes.
var (
	originalStrategyPath = []string{"metadata", "annotations", rolloutsv1beta1.OriginalDeploymentStrategyAnnotation}
	controlInfoPath      = []string{"metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation}
	minReadySecondsPath  = []string{"spec", "minReadySeconds"}
)

// OriginalStrategyFrom parses the original-deployment-strategy annotation; ok is false when it is absent
// or empty.
func OriginalStrategyFrom(annotations map[string]string) (s rolloutsv1beta1.OriginalDeploymentStrategy, ok bool, err error) {
	raw := annotations[rolloutsv1beta1.OriginalDeploymentStrategyAnnotation]
	if raw == "" {
		return s, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return s, false, fmt.Errorf("annotation %s: %w", rolloutsv1beta1.OriginalDeploymentStrategyAnnotation, err)
	}
	return s, true, nil
}

func originalStrategyJSON(s rolloutsv1beta1.OriginalDeploymentStrategy) string {
	b, _ := json.Marshal(s) //nolint:errchkjson // an OriginalDeploymentStrategy always marshals
	return string(b)
}

// ownMinReadySeconds is a workload's minReadySeconds as the user set it: the inflated value is a release's,
// and saving it as original would keep the workload frozen after the release.
func ownMinReadySeconds(seconds int32) int32 {
	if seconds == rolloutsv1beta1.MaxReadySeconds {
		return 0
	}
	return seconds
}

// surgeCount is how many pods maxSurge allows above replicas, percentages rounded up as the workload
// controllers do; an unset or unreadable value allows none.
func surgeCount(surge *intstr.IntOrString, replicas int32) int32 {
	if surge == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(surge, int(max(replicas, 0)), true)
	if err != nil {
		return 0
	}
	return toInt32(int64(n))
}

// raisedSurge is the maxSurge a batch of desired new pods needs; ok is false when the current one already
// allows as many, so that a batch never lowers it.
func raisedSurge(current *intstr.IntOrString, replicas, desired int32) (intstr.IntOrString, bool) {
	if surgeCount(current, replicas) >= desired {
		return intstr.IntOrString{}, false
	}
	return intstr.FromInt32(desired), true
}

// isZeroInt reports whether v is the integer 0.
func isZeroInt(v *intstr.IntOrString) bool {
	return v != nil && v.Type == intstr.Int && v.IntVal == 0
}

// releaseMarked reports whether a workload carries a marker of a blue-green release.
func releaseMarked(annotations map[string]string) bool {
	_, original := annotations[rolloutsv1beta1.OriginalDeploymentStrategyAnnotation]
	_, info := annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]
	return original || info
}

// blueGreenInitialized reports whether a workload already carries this release's control-info and saved
// settings; Initialize then changes nothing, so that it never lowers a surge a batch has raised.
func blueGreenInitialized(annotations map[string]string, owner metav1.OwnerReference) bool {
	_, saved := annotations[rolloutsv1beta1.OriginalDeploymentStrategyAnnotation]
	return saved && ControlledBy(annotations, owner)
}

// notReady is the error of a workload UpgradeBatch cannot move, naming the field.
func notReady(kind, ns, name, format string, args ...any) error {
	return fmt.Errorf("%s %s/%s: %s: %w", kind, ns, name, fmt.Sprintf(format, args...), ErrNotBlueGreenReady)
}

// finishBlueGreen applies a finalize patch, waits for the workload as the plan asks, and gives the HPAs back
// last, once the workload no longer needs them off. resumed tells whether obj, as read, has rolled out.
func finishBlueGreen(ctx context.Context, c client.Client, t Target, obj client.Object, patch map[string]any, resumed bool) (bool, error) {
	waits := waitsForResume(t)
	if len(patch) > 0 {
		if err := applyMergePatch(ctx, c, obj, patch); err != nil {
			return false, err
		}
		// The status read with obj predates the patch: judge WaitResume on the next call.
		if waits {
			return false, nil
		}
	} else if waits && !resumed {
		return false, nil
	}
	if err := restoreHPAs(ctx, c, t); err != nil {
		return false, err
	}
	return true, nil
}

// finishGone ends finalising a workload that is gone, after giving its HPAs back.
func finishGone(ctx context.Context, c client.Client, t Target, err error) (bool, error) {
	if !errors.Is(err, ErrWorkloadGone) {
		return false, err
	}
	if err := restoreHPAs(ctx, c, t); err != nil {
		return false, err
	}
	return true, nil
}
