package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/workloads/parallel"
)

// podWorkers bounds the pods one reconcile writes to at once.
const podWorkers = 16

// createWorkers bounds the pod creates, and again the settling writes of new pods, in flight across the
// controller's reconciles, so that scale-ups of several large CloneSets cannot put thousands of requests on
// the API server at once. With 16 or 64 a 1,000-pod scale-up took 1.5 to 2 times as long: on a busy API
// server each create waits longer, and only more of them in flight keep the throughput up. With 256 (twice
// that in flight with the settling writes) API Priority and Fairness rejected tens of the manager's requests
// (HTTP 429, each retried a second later) where it files a controller's service account (workload-low);
// 128 scaled as fast with none rejected.
const createWorkers = 128

// eachPod runs fn for every pod, at most podWorkers at once, and joins their errors. The pods of a step are
// independent: one pod's lost write race must not hold back the others, and a thousand sequential writes
// of a few milliseconds each would make a reconcile take seconds.
func eachPod(pods []*corev1.Pod, fn func(*corev1.Pod) error) error {
	return parallel.Each(pods, podWorkers, fn)
}
