package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

const (
	floorNamespace  = "bench-floor"
	floorRoundTrips = 500
	floorWarmup     = 25
	// eventTimeout bounds the wait for one watch event; a lost event
	// fails the scenario rather than hanging it.
	eventTimeout = 10 * time.Second
)

// apiserverFloor is the physical floor of this cluster: how long a bare
// write takes to come back as a watch event, which is the least any
// controller's reaction to a change can cost.
func apiserverFloor() Scenario {
	return Scenario{
		Name: "apiserver-floor",
		Description: fmt.Sprintf("patch -> watch event latency of a ConfigMap, %d sequential round trips "+
			"(plus patch and get round trips) on an idle cluster with 3 nodes", floorRoundTrips),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: 3},
		Timeout: 5 * time.Minute,
		Run:     runFloor,
	}
}

func runFloor(ctx context.Context, env *Env, res *Result) error {
	var floor Floor
	phase, err := env.Measure(ctx, nil, func(ctx context.Context) (err error) {
		floor, err = MeasureFloor(ctx, env.Kube, floorNamespace, floorRoundTrips)
		return err
	})
	res.Record(phase)
	res.Cluster.Objects = map[string]int{"configmaps": 1}
	res.AddLatency("patch to watch event", floor.PatchToWatch)
	res.AddLatency("patch round trip", floor.Patch)
	res.AddLatency("get round trip", floor.Get)
	return err
}

// Floor holds the samples of MeasureFloor.
type Floor struct {
	// PatchToWatch runs from sending a patch to receiving its watch event.
	PatchToWatch []time.Duration
	// Patch and Get are the plain request round trips.
	Patch []time.Duration
	Get   []time.Duration
}

// MeasureFloor patches a ConfigMap in namespace n times, one after the
// other, and times each patch until its watch event arrives; any scenario
// can call it to compare its own latencies with the floor of its cluster.
func MeasureFloor(ctx context.Context, kube kubernetes.Interface, namespace string, n int) (Floor, error) {
	cm, err := createFloorConfigMap(ctx, kube, namespace)
	if err != nil {
		return Floor{}, err
	}
	cms := kube.CoreV1().ConfigMaps(namespace)
	defer cms.Delete(context.WithoutCancel(ctx), cm.Name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	w, err := cms.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", cm.Name).String(),
		ResourceVersion: cm.ResourceVersion,
	})
	if err != nil {
		return Floor{}, fmt.Errorf("watching configmap %s: %w", cm.Name, err)
	}
	defer w.Stop()
	events := arrivals(w)
	var f Floor
	for i := range floorWarmup + n {
		trip, err := roundTrip(ctx, kube, cm, i, events)
		if err != nil {
			return f, err
		}
		if i >= floorWarmup {
			f.add(trip)
		}
	}
	return f, nil
}

func (f *Floor) add(t trip) {
	f.PatchToWatch = append(f.PatchToWatch, t.toWatch)
	f.Patch = append(f.Patch, t.patch)
	f.Get = append(f.Get, t.get)
}

func createFloorConfigMap(ctx context.Context, kube kubernetes.Interface, namespace string) (*corev1.ConfigMap, error) {
	if err := ensureNamespace(ctx, kube, namespace); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "floor-", Namespace: namespace}}
	cm, err := kube.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the floor configmap: %w", err)
	}
	return cm, nil
}

func ensureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// arrival is a watch event's resource version and when it arrived.
type arrival struct {
	rv string
	at time.Time
}

// arrivals stamps each watch event as it arrives. The channel is closed
// when the watch ends.
func arrivals(w watch.Interface) <-chan arrival {
	out := make(chan arrival, 64)
	go func() {
		defer close(out)
		for ev := range w.ResultChan() {
			at := time.Now()
			if obj, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Modified {
				out <- arrival{rv: obj.GetResourceVersion(), at: at}
			}
		}
	}()
	return out
}

type trip struct{ toWatch, patch, get time.Duration }

// roundTrip patches the ConfigMap, waits for the event of that write,
// then reads the object back.
func roundTrip(ctx context.Context, kube kubernetes.Interface, cm *corev1.ConfigMap, i int, events <-chan arrival) (trip, error) {
	cms := kube.CoreV1().ConfigMaps(cm.Namespace)
	patch := []byte(`{"data":{"i":"` + strconv.Itoa(i) + `"}}`)
	begin := time.Now()
	patched, err := cms.Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return trip{}, fmt.Errorf("patching configmap %s: %w", cm.Name, err)
	}
	t := trip{patch: time.Since(begin)}
	at, err := awaitEvent(ctx, events, patched.ResourceVersion)
	if err != nil {
		return trip{}, err
	}
	t.toWatch = at.Sub(begin)
	begin = time.Now()
	if _, err := cms.Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
		return trip{}, fmt.Errorf("getting configmap %s: %w", cm.Name, err)
	}
	t.get = time.Since(begin)
	return t, nil
}

// awaitEvent returns the arrival time of the event for resource version
// rv; the event may have arrived before the patch response did.
func awaitEvent(ctx context.Context, events <-chan arrival, rv string) (time.Time, error) {
	timeout := time.NewTimer(eventTimeout)
	defer timeout.Stop()
	for {
		select {
		case a, ok := <-events:
			if !ok {
				return time.Time{}, fmt.Errorf("watch ended before the event of resource version %s", rv)
			}
			if a.rv == rv {
				return a.at, nil
			}
		case <-timeout.C:
			return time.Time{}, fmt.Errorf("no watch event for resource version %s within %v", rv, eventTimeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}
