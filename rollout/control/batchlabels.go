package control

import (
	"encoding/json"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/jsonpatch"
)

// BatchPodLabelsAnnotation on a Deployment under a partition-style release holds, as a JSON object, the
// labels the pods of the current batch carry. The Advanced Deployment controller stamps them on the new
// ReplicaSet's pod template while that ReplicaSet grows, so its pods are created labelled and the release
// does not patch each one.
const BatchPodLabelsAnnotation = "rollouts.flotilla.dev/batch-pod-labels"

// ReleaseAbortedAnnotation ("true") on a Deployment of a partition-style release tells the Advanced
// Deployment controller that the release was aborted, so the new ReplicaSet shrinks to the partition.
const ReleaseAbortedAnnotation = "rollouts.flotilla.dev/release-aborted"

// batchLabelKeys are the pod labels a release stamps on a batch's pods.
var batchLabelKeys = []string{rolloutsv1beta1.RolloutIDLabel, rolloutsv1beta1.RolloutBatchIDLabel}

// BatchPodLabels are the labels of the pods of a release's batch (0-based); none without a rollout-id.
func BatchPodLabels(rolloutID string, batch int32) map[string]string {
	if rolloutID == "" {
		return nil
	}
	return map[string]string{
		rolloutsv1beta1.RolloutIDLabel:      rolloutID,
		rolloutsv1beta1.RolloutBatchIDLabel: strconv.Itoa(int(batch) + 1),
	}
}

// BatchPodLabelsFrom parses the BatchPodLabelsAnnotation, keeping only the batch label keys: nil when
// absent or malformed (the release then labels the pods itself).
func BatchPodLabelsFrom(annotations map[string]string) map[string]string {
	raw, ok := annotations[BatchPodLabelsAnnotation]
	if !ok {
		return nil
	}
	var all map[string]string
	if json.Unmarshal([]byte(raw), &all) != nil {
		return nil
	}
	return batchOnly(all)
}

func batchOnly(m map[string]string) map[string]string {
	var out map[string]string
	for _, k := range batchLabelKeys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// StampedBatchLabels are the batch labels a ReplicaSet's template carries beyond its Deployment's.
func StampedBatchLabels(rs, d *corev1.PodTemplateSpec) map[string]string {
	out := batchOnly(rs.Labels)
	for k, v := range out {
		if d.Labels[k] == v {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// EqualIgnoreHashAndBatch reports whether a ReplicaSet's template is its Deployment's, ignoring the hash
// label and any batch labels the Advanced Deployment controller stamped on it.
func EqualIgnoreHashAndBatch(rs, d *corev1.PodTemplateSpec) bool {
	if rs == nil || d == nil {
		return rs == d
	}
	stamped := StampedBatchLabels(rs, d)
	if len(stamped) == 0 {
		return EqualIgnoreHash(rs, d)
	}
	labels := maps.Clone(rs.Labels)
	for k := range stamped {
		if v, ok := d.Labels[k]; ok {
			labels[k] = v
		} else {
			delete(labels, k)
		}
	}
	return EqualIgnoreHash(withLabels(rs, labels), d)
}

// EncodeBatchPodLabels is the BatchPodLabelsAnnotation value of labels.
func EncodeBatchPodLabels(labels map[string]string) string {
	raw, _ := json.Marshal(labels) // a string map always encodes, keys sorted
	return string(raw)
}

// TemplateLabelPath is the JSON pointer of a pod template label of a workload, for JSON patches.
func TemplateLabelPath(key string) string {
	return "/spec/template/metadata/labels/" + jsonpatch.Escape(key)
}

// StampOps are the JSON patch operations that change a pod template's stamped batch labels to want: each
// stamped label is tested as read, then the ones want lacks are removed and want's are set.
func StampOps(stamped, want map[string]string) []jsonpatch.Op {
	var ops []jsonpatch.Op
	for _, k := range batchLabelKeys {
		v, was := stamped[k]
		w, keep := want[k]
		switch {
		case was && keep && v == w:
		case was:
			ops = append(ops, jsonpatch.Test(TemplateLabelPath(k), v))
			if !keep {
				ops = append(ops, jsonpatch.Remove(TemplateLabelPath(k)))
				continue
			}
			fallthrough
		case keep:
			ops = append(ops, jsonpatch.Add(TemplateLabelPath(k), w))
		}
	}
	return ops
}
