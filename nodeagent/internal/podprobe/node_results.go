package podprobe

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Reasons of the events on pods.
const (
	// ReasonMarkedPod: probe results set or removed the pod's labels or annotations (their markers' policies).
	ReasonMarkedPod = "MarkedPod"
	// ReasonProbeConditionConflict: two probes of the pod name one pod condition type; the first result's
	// sets the condition, the other's is left out.
	ReasonProbeConditionConflict = "ProbeConditionConflict"
)

// writeResults writes what the agent's results for pod change on it: the probes' conditions with a strategic
// merge patch of its status, which merges them by type with the kubelet's, then the markers' labels and
// annotations with a merge patch of the pod, which the admission of pod updates sees (upstream writes them with
// the condition in one full update of pods/status, OpenKruise issue #1597); each only when it changes
// something. The conditions go first, so a client that sees a marker's label also sees the condition behind it.
func (r *NodeReconciler) writeResults(ctx context.Context, pod *corev1.Pod, st kruiseappsv1alpha1.PodProbeStatus, look *lookup) error {
	u := plan.ForPod(pod, st, look.probeOf(pod.Namespace))
	for _, c := range u.Conflicts {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonProbeConditionConflict, "MarkPod",
			"probe %s names pod condition %s, which probe %s sets: its result is left out", c.Probe, c.Type, c.Winner)
	}
	if u.Empty() {
		return nil
	}
	if err := r.writeConditions(ctx, pod, u); err != nil {
		return err
	}
	return r.writeMarks(ctx, pod, u)
}

// writeMarks patches the markers' labels and annotations, if any change.
func (r *NodeReconciler) writeMarks(ctx context.Context, pod *corev1.Pod, u plan.PodUpdate) error {
	meta, err := u.MetadataPatch()
	if err != nil {
		return fmt.Errorf("building the metadata patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if meta != nil {
		err := r.Client.Patch(ctx, target(pod), client.RawPatch(types.MergePatchType, meta))
		countPodPatch(partMetadata, err)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("patching the labels and annotations of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if err == nil {
			r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonMarkedPod, "MarkPod", "probe results %s: %s",
				strings.Join(u.Marked, ", "), describe(u))
		}
	}
	return nil
}

// writeConditions patches the probes' pod conditions, if any change.
func (r *NodeReconciler) writeConditions(ctx context.Context, pod *corev1.Pod, u plan.PodUpdate) error {
	conds, err := u.ConditionsPatch()
	if err != nil {
		return fmt.Errorf("building the conditions patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if conds == nil {
		return nil
	}
	err = r.Client.Status().Patch(ctx, target(pod), client.RawPatch(types.StrategicMergePatchType, conds))
	countPodPatch(partCondition, err)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patching the conditions of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// target is a fresh object of pod's name for a patch to answer into, leaving the cache's copy alone.
func target(pod *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
}

// describe says what an update does to the pod's labels and annotations, sorted.
func describe(u plan.PodUpdate) string {
	var parts []string
	for _, kv := range []struct {
		what string
		m    map[string]*string
	}{{"label", u.Labels}, {"annotation", u.Annotations}} {
		for _, k := range slices.Sorted(maps.Keys(kv.m)) {
			if v := kv.m[k]; v != nil {
				parts = append(parts, fmt.Sprintf("%s %s=%s set", kv.what, k, *v))
			} else {
				parts = append(parts, fmt.Sprintf("%s %s removed", kv.what, k))
			}
		}
	}
	return strings.Join(parts, ", ")
}
