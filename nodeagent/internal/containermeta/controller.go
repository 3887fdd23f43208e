// Package containermeta is the node agent's container meta reporter. For every pod of its node that an
// apps.kruise.io workload controls, it writes the apps.kruise.io/runtime-containers-meta annotation: each
// running container's id, restart count and hashes, among them the hash of the values its env vars read
// from pod labels and annotations (learned once per container by running `env` in it). While such a pod is
// being updated in place (InPlaceUpdateReady False), a container still holding old values is stopped, so
// that the kubelet starts it again with the new ones; the workload controller waits for the report that
// shows it. Planning (PlanPod) is pure; this file reads, applies and writes.
package containermeta

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// ControllerName names the controller, its logs and the source of its events.
const ControllerName = "containermeta-nodeagent"

const (
	workers     = 4
	execTimeout = 5 * time.Second
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reports the containers of one node's pods.
type Reconciler struct {
	// NodeName is the agent's node; Runtime its container runtime.
	NodeName string
	Runtime  cri.Runtime
	// Client reads pods from the cache and writes their status; Recorder records events. Both default to
	// the manager's.
	Client   client.Client
	Recorder events.EventRecorder

	envs        envCache
	runtimeOnce sync.Once
	runtimeName string
}

// CacheByObject narrows the agent's pod cache to its node.
func CacheByObject(nodeName string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", nodeName)}}
}

// SetupWithManager registers the reporter. The manager's cache must be configured with CacheByObject.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.NodeName == "" || r.Runtime == nil {
		return fmt.Errorf("the container meta reporter needs a node name and a container runtime")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	r.envs = envCache{byPod: map[types.NamespacedName]map[string]uint64{}}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			p, ok := o.(*corev1.Pod)
			return ok && podreadiness.OwnedByKruise(p)
		}))).
		Complete(r)
}

// Reconcile reports the pod's containers and restarts the stale ones.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			r.envs.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Spec.NodeName != r.NodeName || pod.DeletionTimestamp != nil || !podreadiness.OwnedByKruise(pod) {
		r.envs.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	list, err := r.Runtime.ListContainers(ctx, map[string]string{cri.LabelPodUID: string(pod.UID)})
	if err != nil {
		return ctrl.Result{}, err
	}
	running, err := r.running(ctx, pod, Newest(list))
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := PlanPod(pod, running, r.runtime(ctx))
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, c := range p.Restart {
		if err := r.restart(ctx, pod, c); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.writeMeta(ctx, pod, p.Meta)
}

// running adds to each running container the hash of the metadata values its env holds.
func (r *Reconciler) running(ctx context.Context, pod *corev1.Pod, newest map[string]cri.Container) (map[string]Running, error) {
	out := make(map[string]Running, len(newest))
	known := r.envs.of(client.ObjectKeyFromObject(pod), newest)
	for i := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[i]
		c, ok := newest[spec.Name]
		if !ok {
			continue
		}
		hash, seen := known[c.ID]
		if !seen && inplaceupdate.ReadsMetadata(spec) {
			var err error
			if hash, err = r.readEnv(ctx, pod, spec, c.ID); err != nil {
				return nil, err
			}
			r.envs.put(client.ObjectKeyFromObject(pod), c.ID, hash)
		}
		out[spec.Name] = Running{Container: c, EnvHash: hash}
	}
	return out, nil
}

// readEnv runs `env` in the container. A container that cannot run it (no such binary) has values the
// agent cannot know: 0, never restarted for them, which a Warning event on the pod says once per container.
// A failed call is an error, retried.
func (r *Reconciler) readEnv(ctx context.Context, pod *corev1.Pod, spec *corev1.Container, id string) (uint64, error) {
	res, err := r.Runtime.ExecSync(ctx, id, []string{"env"}, execTimeout)
	if err != nil {
		return 0, fmt.Errorf("reading the environment of container %s: %w", spec.Name, err)
	}
	if res.ExitCode != 0 {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, "UnreadableEnv", "ReadEnv",
			"cannot run env in container %s (exit code %d): it will not be restarted when the labels or annotations its env reads change",
			spec.Name, res.ExitCode)
		return 0, nil
	}
	return inplaceupdate.RunningEnvHash(spec, res.Stdout), nil
}

// restart stops the container within the pod's grace period; the kubelet starts it again.
func (r *Reconciler) restart(ctx context.Context, pod *corev1.Pod, c Running) error {
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if err := r.Runtime.StopContainer(ctx, c.ID, grace); err != nil {
		restarts.WithLabelValues("failed").Inc()
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedRestartContainer", "Restart",
			"failed to restart container %s for the pod's new labels and annotations: %v", c.Name, err)
		return err
	}
	restarts.WithLabelValues("succeeded").Inc()
	r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, "RestartedContainer", "Restart",
		"restarted container %s so that its env reads the pod's new labels and annotations", c.Name)
	return nil
}

// writeMeta writes the report through pods/status, which keeps annotation changes; "" writes nothing.
func (r *Reconciler) writeMeta(ctx context.Context, pod *corev1.Pod, meta string) error {
	if meta == "" {
		return nil
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kruiseappspub.RuntimeContainerMetaKey: meta}}})
	if err != nil {
		return err
	}
	err = r.Client.Status().Patch(ctx, pod, client.RawPatch(types.MergePatchType, raw))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *Reconciler) runtime(ctx context.Context) string {
	r.runtimeOnce.Do(func() {
		r.runtimeName = "cri"
		if v, err := r.Runtime.Version(ctx); err == nil && v.RuntimeName != "" {
			r.runtimeName = v.RuntimeName
		}
	})
	return r.runtimeName
}

// envCache remembers, per pod, the env hash of each container: a running container's environment never
// changes, so `env` runs once per container.
type envCache struct {
	mu    sync.Mutex
	byPod map[types.NamespacedName]map[string]uint64
}

// of returns the pod's known hashes, dropping those of containers no longer running.
func (e *envCache) of(key types.NamespacedName, running map[string]cri.Container) map[string]uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := map[string]uint64{}
	for _, c := range running {
		if h, ok := e.byPod[key][c.ID]; ok {
			kept[c.ID] = h
		}
	}
	e.byPod[key] = kept
	return maps.Clone(kept)
}

func (e *envCache) put(key types.NamespacedName, id string, hash uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byPod[key] == nil {
		e.byPod[key] = map[string]uint64{}
	}
	e.byPod[key][id] = hash
}

func (e *envCache) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byPod, key)
}
