// Package podprober is the node agent's prober of PodProbeMarkers: it runs the probes the NodePodProbe of its
// node lists (exec through the container runtime, httpGet and tcpSocket against the pod's IP), one worker per
// probe of each pod, and writes their states into the NodePodProbe's status, from which the manager marks the
// pods. A state is written when it changes; the thresholds and timing are the probe's, with the kubelet's
// defaults. Planning (plan.go) is pure; this file keeps the workers and writes the status.
package podprober

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/podhandler"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ControllerName names the controller and its logs.
const ControllerName = "podprober-nodeagent"

// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodepodprobes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodepodprobes/status,verbs=get;update;patch

// Reconciler runs the probes of one node's NodePodProbe.
type Reconciler struct {
	// NodeName is the agent's node, and the name of its NodePodProbe; Runtime its container runtime.
	NodeName string
	Runtime  cri.Runtime
	// Client reads the NodePodProbe from the cache and writes its status; HTTP sends httpGet probes. Both
	// default (the manager's client, podhandler.NewHTTPClient).
	Client client.Client
	HTTP   *http.Client

	mu      sync.Mutex
	workers map[Key]*worker
	tallies map[Key]Tally
	wake    chan event.GenericEvent
}

// worker is one running probe; cancel stops it.
type worker struct {
	fingerprint uint64
	cancel      context.CancelFunc
}

// CacheByObject narrows the agent's NodePodProbe cache to its node's.
func CacheByObject(nodeName string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&kruiseappsv1alpha1.NodePodProbe{}: {Field: fields.OneTermEqualSelector("metadata.name", nodeName)},
	}
}

// SetupWithManager registers the prober. The manager's cache must be configured with CacheByObject.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.NodeName == "" || r.Runtime == nil {
		return fmt.Errorf("the pod prober needs a node name and a container runtime")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.HTTP == nil {
		r.HTTP = podhandler.NewHTTPClient()
	}
	r.workers, r.tallies = map[Key]*worker{}, map[Key]Tally{}
	r.wake = make(chan event.GenericEvent, 1)
	// The workers stop with the manager.
	if err := mgr.Add(stopWorkers{r}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kruiseappsv1alpha1.NodePodProbe{}).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile keeps one worker per probe of the spec and writes the states the workers found.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != r.NodeName {
		return ctrl.Result{}, nil
	}
	npp := &kruiseappsv1alpha1.NodePodProbe{}
	if err := r.Client.Get(ctx, req.NamespacedName, npp); err != nil {
		if apierrors.IsNotFound(err) {
			r.sync(ctx, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.sync(ctx, Targets(npp.Spec))
	return ctrl.Result{}, r.writeStatus(ctx, npp)
}

// sync stops the workers of probes gone or changed, forgetting their states, and starts the new ones.
func (r *Reconciler) sync(ctx context.Context, want map[Key]Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	running := make(map[Key]uint64, len(r.workers))
	for k, w := range r.workers {
		running[k] = w.fingerprint
	}
	stop, start := Diff(running, want)
	for _, k := range stop {
		r.workers[k].cancel()
		delete(r.workers, k)
		delete(r.tallies, k)
	}
	for _, t := range start {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		w := &worker{fingerprint: t.Fingerprint(), cancel: cancel}
		r.workers[t.Key] = w
		go r.run(wctx, w, t)
	}
}

// run probes t on its schedule until stopped.
func (r *Reconciler) run(ctx context.Context, w *worker, t Target) {
	s := ScheduleOf(t.Probe)
	log := ctrl.LoggerFrom(ctx).WithName(ControllerName).WithValues("pod", t.Namespace+"/"+t.Pod, "probe", t.Key.Probe)
	wait := s.InitialDelay
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = s.Period
		o := Prober{Runtime: r.Runtime, HTTP: r.HTTP}.Run(ctx, t, s.Timeout)
		probes.WithLabelValues(handlerType(t), result(o)).Inc()
		if r.record(w, t.Key, o, s) {
			log.V(1).Info("Probe state changed", "passed", o.Passed, "message", o.Message)
		}
	}
}

// record tallies an outcome of a worker still current and wakes the reconcile when the state changed.
func (r *Reconciler) record(w *worker, k Key, o Outcome, s Schedule) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.workers[k] != w {
		return false
	}
	t := r.tallies[k]
	// The status holds whole seconds: a finer time would never compare equal to what was written.
	changed := t.Record(o, s.Success, s.Failure, time.Now().Truncate(time.Second))
	r.tallies[k] = t
	if changed {
		select {
		case r.wake <- event.GenericEvent{Object: &kruiseappsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: r.NodeName}}}:
		default: // a reconcile is already due; it reads every tally
		}
	}
	return changed
}

// writeStatus writes the states of the spec's probes when they differ from the status.
func (r *Reconciler) writeStatus(ctx context.Context, npp *kruiseappsv1alpha1.NodePodProbe) error {
	r.mu.Lock()
	st := Status(npp.Spec, r.tallies)
	r.mu.Unlock()
	if equality.Semantic.DeepEqual(npp.Status, st) {
		return nil
	}
	npp.Status = st
	if err := r.Client.Status().Update(ctx, npp); err != nil {
		return fmt.Errorf("writing the status of NodePodProbe %s: %w", npp.Name, err)
	}
	return nil
}

// stopWorkers stops every worker when the manager stops.
type stopWorkers struct{ r *Reconciler }

func (s stopWorkers) Start(ctx context.Context) error {
	<-ctx.Done()
	s.r.sync(ctx, nil)
	return nil
}
