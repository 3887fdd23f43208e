package controller

import (
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// podWorkers bounds the pods one reconcile writes to at once.
const podWorkers = 16

// eachPod runs fn for every pod, at most podWorkers at once, and joins their errors. The pods of a step are
// independent: one pod's lost write race must not hold back the others, and a thousand sequential writes
// of a few milliseconds each would make a reconcile take seconds.
func eachPod(pods []*corev1.Pod, fn func(*corev1.Pod) error) error {
	errs := make([]error, len(pods))
	slots := make(chan struct{}, podWorkers)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = fn(p)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
