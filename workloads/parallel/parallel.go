// Package parallel runs a controller's independent writes of one reconcile concurrently, bounded, so that
// hundreds of pod writes cost a few round trips of wall time without flooding the apiserver.
package parallel

import (
	"errors"
	"sync"
)

// Each calls fn for every item, at most workers (at least 1) at once, and joins their errors: one failing
// write does not hold back the others.
func Each[T any](items []T, workers int, fn func(T) error) error {
	errs := make([]error, len(items))
	slots := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = fn(item)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
