package podunavailablebudget

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/webhooks"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/guard"
)

func (e *env) evict(ctx context.Context, pod string, dryRun bool) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: e.ns}}
	if dryRun {
		ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return e.kube.PolicyV1().Evictions(e.ns).Evict(ctx, ev)
}

// storm evicts every pod at once, each from its own goroutine, and returns the pods evicted and the number of
// evictions answered 429; any other answer fails the test.
func (e *env) storm(t *testing.T, pods []string) (evicted []string, tooMany int) {
	t.Helper()
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, pod := range pods {
		wg.Go(func() {
			<-gate
			errs[i] = e.evict(t.Context(), pod, false)
		})
	}
	close(gate)
	wg.Wait()
	for i, err := range errs {
		var st apierrors.APIStatus
		switch {
		case err == nil:
			evicted = append(evicted, pods[i])
		case errors.As(err, &st) && st.Status().Code == http.StatusTooManyRequests && apierrors.IsTooManyRequests(err):
			tooMany++
		default:
			t.Errorf("evicting %s: %v", pods[i], err)
		}
	}
	return evicted, tooMany
}

// remaining are the pods of app still in the namespace.
func (e *env) remaining(t *testing.T, app string) int {
	t.Helper()
	list := &corev1.PodList{}
	if err := e.c.List(t.Context(), list, client.InNamespace(e.ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// The key invariant: ten evictions sent at once against a budget of maxUnavailable 1 let exactly one through;
// the nine others get the eviction API's 429, as a PodDisruptionBudget's would. With maxUnavailable 3, three.
func TestEvictionStorm(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		app            string
		maxUnavailable int
	}{{"web", 1}, {"api", 3}} {
		t.Run(tc.app, func(t *testing.T) {
			pub := e.budget(t, tc.app, tc.maxUnavailable, 10)
			pods := e.readyPods(t, tc.app, 10)
			allowed := int32(tc.maxUnavailable)
			e.waitStatus(t, pub, allowed, 10, 10-allowed, 10)
			e.waitMarked(t, tc.app, pods)
			e.waitServed(t, pods[0])

			evicted, tooMany := e.storm(t, pods)
			if len(evicted) != tc.maxUnavailable || tooMany != 10-tc.maxUnavailable {
				t.Fatalf("evicted %v and %d answered 429; want %d evicted, %d answered 429", evicted, tooMany,
					tc.maxUnavailable, 10-tc.maxUnavailable)
			}
			if n := e.remaining(t, tc.app); n != 10-tc.maxUnavailable {
				t.Errorf("%d pods remain", n)
			}
			// The controller counts the pods that remain: all available, none more allowed.
			e.waitStatus(t, pub, 0, 10-allowed, 10-allowed, 10)
			left := slices.DeleteFunc(slices.Clone(pods), func(p string) bool { return slices.Contains(evicted, p) })
			if _, tooMany := e.storm(t, left[:1]); tooMany != 1 {
				t.Error("an eviction after the storm was not refused")
			}
		})
	}
}

// A deletion beyond the budget is refused (403, naming the budget); an in-place image change within it is
// recorded and counts as unavailable until, 10 s later, the pod counts by its own readiness again; a pod that
// opts out is deleted whatever the budget.
func TestDeletionAndUpdateHeldToTheBudget(t *testing.T) {
	e := start(t)
	pub := e.budget(t, "db", 1, 3)
	pods := e.readyPods(t, "db", 3)
	e.waitStatus(t, pub, 1, 3, 2, 3)
	e.waitMarked(t, "db", pods)
	e.waitServed(t, pods[0])
	ctx := t.Context()

	if err := e.patchPod(ctx, pods[0], `{"spec":{"containers":[{"name":"app","image":"registry.example/web:v2"}]}}`); err != nil {
		t.Fatalf("an image change within the budget: %v", err)
	}
	stored := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(pub), stored); err != nil || !hasKey(stored.Status.UnavailablePods, pods[0]) {
		t.Fatalf("the update was not recorded: %+v, %v", stored.Status, err)
	}

	err := e.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: pods[1]}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodUnavailableBudget db: the budget allows no more unavailable pods") {
		t.Fatalf("a deletion beyond the budget: %v", err)
	}
	if err := e.patchPod(ctx, pods[2], `{"spec":{"containers":[{"name":"app","image":"registry.example/web:v2"}]}}`); !apierrors.IsForbidden(err) {
		t.Fatalf("an image change beyond the budget: %v", err)
	}
	if err := e.patchPod(ctx, pods[2], `{"metadata":{"labels":{"team":"storage"}}}`); err != nil {
		t.Fatalf("a label change beyond the budget: %v", err)
	}

	// The updated pod is ready and runs its spec: once its record expires it counts again.
	e.waitStatus(t, pub, 1, 3, 2, 3)

	if err := e.patchPod(ctx, pods[2], `{"metadata":{"annotations":{"pub.kruise.io/no-protect":"true"}}}`); err != nil {
		t.Fatal(err)
	}
	if err := e.evict(ctx, pods[1], false); err != nil {
		t.Fatalf("an eviction within the budget: %v", err)
	}
	if err := e.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: pods[2]}}); err != nil {
		t.Fatalf("a pod opting out was not deleted: %v", err)
	}
}

// Two replicas of the manager serve the webhook each with its own in-process serialization: their evictions
// of the same budget race each other's status writes, and the conflicts still let exactly maxUnavailable
// through.
func TestReplicasShareTheBudget(t *testing.T) {
	e := start(t)
	pub := e.budget(t, "jobs", 3, 10)
	pods := e.readyPods(t, "jobs", 10)
	e.waitStatus(t, pub, 3, 10, 7, 10)
	e.waitMarked(t, "jobs", pods)
	replicas := []*guard.Guard{guard.New(e.c, e.c, events.NewFakeRecorder(100)), guard.New(e.c, e.c, events.NewFakeRecorder(100))}
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, name := range pods {
		pod := &corev1.Pod{}
		if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, pod); err != nil {
			t.Fatal(err)
		}
		validate := replicas[i%2].Validation(true, false)
		wg.Go(func() {
			<-gate
			errs[i] = validate(t.Context(), webhooks.PodDisruption{Operation: webhooks.PodEvict, Pod: pod})
		})
	}
	close(gate)
	wg.Wait()
	admitted, tooMany := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			admitted++
		case apierrors.IsTooManyRequests(err):
			tooMany++
		default:
			t.Errorf("pod %s: %v", pods[i], err)
		}
	}
	stored := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(pub), stored); err != nil {
		t.Fatal(err)
	}
	if admitted != 3 || tooMany != 7 || len(stored.Status.DisruptedPods) != 3 || stored.Status.UnavailableAllowed != 0 {
		t.Errorf("admitted %d, refused %d with 429; status %+v", admitted, tooMany, stored.Status)
	}
}

func (e *env) patchPod(ctx context.Context, name, patch string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	return e.c.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}
