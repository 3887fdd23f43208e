// Package parallel runs a controller's independent writes of one reconcile concurrently, bounded, so that
// hundreds of pod writes cost a few round trips of wall time without flooding the apiserver.
package parallel

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Each calls fn for every item, at most workers (at least 1) at once, and joins their errors: one failing
// write does not hold back the others. The workers take the items in turn instead of a goroutine starting per
// item: on most reconciles fn finds nothing to write for nearly every pod, and a new goroutine (and the stack
// it grows) per pod then costs more than the calls.
func Each[T any](items []T, workers int, fn func(T) error) error {
	errs := make([]error, len(items))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(max(workers, 1), len(items)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(items)); i = next.Add(1) - 1 {
				errs[i] = fn(items[i])
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
