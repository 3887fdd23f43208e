package batchrelease

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
)

// podRevisionIndex indexes pods by their revision labels ("pod-template-hash=<hash>",
// "controller-revision-hash=<name>"), so that a release reads the pods of its update revision without
// matching its selector against every pod of the namespace.
const podRevisionIndex = "flotilla-pod-revision"

var revisionLabelKeys = []string{rolloutsv1beta1.PodTemplateHashLabelKey, rolloutsv1beta1.ControllerRevisionHashLabelKey}

func podRevisions(pod *corev1.Pod) []string {
	var out []string
	for _, key := range revisionLabelKeys {
		if v := pod.Labels[key]; v != "" {
			out = append(out, key+"="+v)
		}
	}
	return out
}

// updatedPods are the pods of the workload's update revision, read through podRevisionIndex when its selector
// requires a revision label the index knows. They are the cache's own objects: read-only. A release reads them
// on every pod event, up to every pod of the workload each time.
func updatedPods(ctx context.Context, pods *cacheindex.Pods, ns string, info *control.WorkloadInfo) ([]*corev1.Pod, error) {
	if v, ok := info.UpdatedPods.RequiresExactMatch(info.RevisionLabelKey); ok && slices.Contains(revisionLabelKeys, info.RevisionLabelKey) {
		return pods.Get(ctx, ns, info.RevisionLabelKey+"="+v, info.UpdatedPods)
	}
	return pods.InNamespace(ctx, ns, info.UpdatedPods)
}
