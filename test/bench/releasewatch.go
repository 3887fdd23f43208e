package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// eventBuffer decouples stamping an event from handling it, so that a
// slow handler (one that scrapes the manager) never delays a stamp.
const eventBuffer = 1 << 14

// handler receives an object of a watch event with the time it arrived.
type handler func(at time.Time, obj runtime.Object)

type stamped struct {
	at    time.Time
	event watch.Event
}

// follower hands the events of one watch, in order and stamped with their
// arrival on the harness's clock, to a handler.
type follower struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// follow watches from resource version rv, resuming the watch when the
// server closes it, until stop is called or ctx ends.
func follow(ctx context.Context, rv string, watchFn cache.WatchFuncWithContext, handle handler) (*follower, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching from resource version %s: %w", rv, err)
	}
	f := &follower{cancel: cancel, done: make(chan struct{})}
	events := make(chan stamped, eventBuffer)
	go stampEvents(w, events)
	go f.dispatch(events, handle)
	return f, nil
}

func stampEvents(w watch.Interface, out chan<- stamped) {
	defer close(out)
	for ev := range w.ResultChan() {
		out <- stamped{at: time.Now(), event: ev}
	}
}

func (f *follower) dispatch(events <-chan stamped, handle handler) {
	defer close(f.done)
	for s := range events {
		switch s.event.Type {
		case watch.Added, watch.Modified:
			handle(s.at, s.event.Object)
		case watch.Error:
			f.mu.Lock()
			f.err = apierrors.FromObject(s.event.Object)
			f.mu.Unlock()
		}
	}
}

// stop ends the watch and returns the error it ended with, if any.
func (f *follower) stop() error {
	f.cancel()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return fmt.Errorf("watch failed: %w", f.err)
	}
	return nil
}

// followNamedDeployment is followNamed for a Deployment of the release scenarios, decoded into its type: the
// released one is left alone while the floor rolls ten thousand pods.
func followNamedDeployment(ctx context.Context, kube kubernetes.Interface, name string, handle handler) (*follower, error) {
	list, err := kube.AppsV1().Deployments(releaseNamespace).List(ctx, nameSelector(name))
	if err != nil {
		return nil, fmt.Errorf("listing deployment %s: %w", name, err)
	}
	return follow(ctx, list.ResourceVersion, deploymentWatch(kube, name), handle)
}

func deploymentWatch(kube kubernetes.Interface, name string) cache.WatchFuncWithContext {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return kube.AppsV1().Deployments(releaseNamespace).Watch(ctx, opts)
	}
}

// mark is a value a handler saw and when its event arrived.
type mark struct {
	Value int64
	At    time.Time
}

// marks collects marks from a handler for another goroutine to await.
type marks struct {
	mu   sync.Mutex
	list []mark
	wake chan struct{}
}

func newMarks() *marks { return &marks{wake: make(chan struct{}, 1)} }

func (m *marks) add(value int64, at time.Time) {
	m.mu.Lock()
	m.list = append(m.list, mark{Value: value, At: at})
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *marks) all() []mark {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mark(nil), m.list...)
}

// await returns the first mark whose value is at least v, waiting for it
// until ctx ends. One goroutine awaits at a time.
func (m *marks) await(ctx context.Context, v int64) (mark, error) {
	for {
		if got, ok := firstMark(m.all(), v); ok {
			return got, nil
		}
		select {
		case <-m.wake:
		case <-ctx.Done():
			return mark{}, ctx.Err()
		}
	}
}

// firstMark is the first mark whose value is at least v.
func firstMark(list []mark, v int64) (mark, bool) {
	for _, m := range list {
		if m.Value >= v {
			return m, true
		}
	}
	return mark{}, false
}
