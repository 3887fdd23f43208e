// Package guard holds pod disruptions to the pods' PodUnavailableBudgets: the updates, deletions and evictions
// the pod validating webhook sees, and the in-place updates the workload controllers ask about. It reads the
// budget a pod's related-pub annotation names, decides (plan.Decide) and, before it lets the disruption go,
// records it in the budget's status with a write that conflicts when the status changed since it was read,
// so that disruptions admitted at once can never take more than the budget allows.
package guard

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/plan"
)

// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

const (
	// attempts bounds the writes of one disruption that lose a race; then it is refused, to be asked again.
	attempts = 5
	// retryWait is the base of the jittered wait before a write that lost a race is tried again.
	retryWait = 20 * time.Millisecond
	// lockStripes serialize the disruptions of one budget within this process: they would otherwise race
	// each other's writes.
	lockStripes = 64
)

// Guard holds pod disruptions to the budgets. Its zero value is not usable: set Client, APIReader, Recorder
// and Clock (New does).
type Guard struct {
	// Client reads budgets from the manager's cache and writes their status.
	Client client.Client
	// APIReader reads a budget past the cache once a write lost a race.
	APIReader client.Reader
	// Recorder records the refusals on the pods.
	Recorder events.EventRecorder
	Clock    clock.PassiveClock

	locks [lockStripes]sync.Mutex
	// written holds the last status each budget was written with here, which the cache may not show yet.
	mu      sync.Mutex
	written map[types.NamespacedName]*kruisepolicyv1alpha1.PodUnavailableBudget
}

// New is a Guard reading through c and reader, recording with recorder on the real clock.
func New(c client.Client, reader client.Reader, recorder events.EventRecorder) *Guard {
	return &Guard{Client: c, APIReader: reader, Recorder: recorder, Clock: clock.RealClock{}}
}

// errConflicts: every write of a disruption lost its race.
var errConflicts = errors.New("the budget changed under every attempt to record the disruption")

// Hold decides a disruption (op) of pod under its budget and, when the budget admits it and dryRun is false,
// records it. The budget read is returned with the decision (nil when no budget applies).
func (g *Guard) Hold(ctx context.Context, pod *corev1.Pod, op kruisepolicyv1alpha1.PubOperation, dryRun bool) (
	plan.Decision, *kruisepolicyv1alpha1.PodUnavailableBudget, error) {
	if reason := plan.PodExemption(pod); reason != "" {
		return exempt(reason), nil, nil
	}
	name := plan.RelatedBudget(pod)
	if name == "" {
		return exempt("no budget protects the pod"), nil, nil
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: name}
	pub := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	if err := g.Client.Get(ctx, key, pub); err != nil {
		if apierrors.IsNotFound(err) {
			g.forget(key)
			return exempt("the budget the pod names does not exist"), nil, nil
		}
		return plan.Decision{}, nil, fmt.Errorf("reading PodUnavailableBudget %s: %w", name, err)
	}
	unlock := g.lock(pub.UID)
	defer unlock()
	return g.decideAndRecord(ctx, g.newest(pub), pod.Name, op, dryRun)
}

// decideAndRecord decides on pub and records an admitted disruption, reading the budget again after each
// write that lost a race.
func (g *Guard) decideAndRecord(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget, pod string,
	op kruisepolicyv1alpha1.PubOperation, dryRun bool) (plan.Decision, *kruisepolicyv1alpha1.PodUnavailableBudget, error) {
	for attempt := 1; ; attempt++ {
		d := plan.Decide(pub, pod, op, g.Clock.Now())
		if d.Verdict != plan.Admit || dryRun {
			return d, pub, nil
		}
		next := pub.DeepCopy()
		next.Status = *d.Status
		err := g.Client.Status().Update(ctx, next)
		switch {
		case err == nil:
			g.remember(next)
			return d, next, nil
		case apierrors.IsNotFound(err):
			return exempt("the budget was deleted"), nil, nil
		case !apierrors.IsConflict(err):
			return plan.Decision{}, pub, fmt.Errorf("recording the disruption in PodUnavailableBudget %s: %w", pub.Name, err)
		case attempt == attempts:
			return plan.Decision{}, pub, errConflicts
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Recording a disruption lost a race; reading the budget again", "attempt", attempt)
		fresh, err := g.reread(ctx, pub, attempt)
		if err != nil {
			return plan.Decision{}, pub, err
		}
		if fresh == nil {
			return exempt("the budget was deleted"), nil, nil
		}
		pub = fresh
	}
}

// reread waits a little (another writer may still be busy) and reads pub past the cache; nil if it is gone.
func (g *Guard) reread(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget, attempt int) (
	*kruisepolicyv1alpha1.PodUnavailableBudget, error) {
	select {
	case <-ctx.Done():
		return pub, ctx.Err()
	case <-time.After(wait.Jitter(retryWait*time.Duration(attempt), 1)):
	}
	fresh := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	err := g.APIReader.Get(ctx, client.ObjectKeyFromObject(pub), fresh)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return pub, fmt.Errorf("reading PodUnavailableBudget %s: %w", pub.Name, err)
	}
	return fresh, nil
}

func exempt(reason string) plan.Decision { return plan.Decision{Verdict: plan.Exempt, Reason: reason} }

// lock serializes the disruptions of the budget uid within this process.
func (g *Guard) lock(uid types.UID) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	m := &g.locks[h.Sum32()%lockStripes]
	m.Lock()
	return m.Unlock
}

// newest is the later of cached and the status last written here: right after a write the cache may not
// show it yet, and deciding on the cache would only lose the race of the next write.
func (g *Guard) newest(cached *kruisepolicyv1alpha1.PodUnavailableBudget) *kruisepolicyv1alpha1.PodUnavailableBudget {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.written[client.ObjectKeyFromObject(cached)]
	if w == nil || w.UID != cached.UID || !newer(w.ResourceVersion, cached.ResourceVersion) {
		return cached
	}
	return w.DeepCopy()
}

// newer compares resource versions as the numbers etcd makes them; anything else counts as not newer.
func newer(a, b string) bool {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && na > nb
}

func (g *Guard) remember(pub *kruisepolicyv1alpha1.PodUnavailableBudget) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.written == nil {
		g.written = map[types.NamespacedName]*kruisepolicyv1alpha1.PodUnavailableBudget{}
	}
	g.written[client.ObjectKeyFromObject(pub)] = pub.DeepCopy()
}

func (g *Guard) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.written, key)
}
