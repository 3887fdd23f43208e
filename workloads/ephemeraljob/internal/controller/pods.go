package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob/internal/plan"
)

// Reasons of the per-pod events; CreateFailed is upstream's.
const (
	reasonCreated      = "SuccessfulCreate"
	reasonCreateFailed = "CreateFailed"
	reasonConflict     = "ContainerNameConflict"
)

// selected lists the pods of the job's namespace its selector matches, from the cache.
func (r *Reconciler) selected(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(job.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// inject adds the job's missing containers to each pod, recording an event for each.
func (r *Reconciler) inject(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob, pods []*corev1.Pod) error {
	var errs []error
	for _, pod := range pods {
		err := r.injectInto(ctx, job, pod)
		countInjection(err)
		if err != nil {
			r.Recorder.Eventf(job, pod, corev1.EventTypeWarning, reasonCreateFailed, "Inject",
				"Failed to create ephemeral containers in pod %s: %v", pod.Name, err)
			errs = append(errs, err)
			continue
		}
		r.Recorder.Eventf(job, pod, corev1.EventTypeNormal, reasonCreated, "Inject", "Created ephemeral containers in pod %s", pod.Name)
	}
	return errors.Join(errs...)
}

// injectInto patches the pod's ephemeralcontainers subresource, the only way to add them: a strategic merge
// keyed by name, so containers someone else added meanwhile stay and a repeated injection changes nothing.
func (r *Reconciler) injectInto(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob, pod *corev1.Pod) error {
	missing := plan.Missing(job, pod)
	ctrl.LoggerFrom(ctx).Info("Creating ephemeral containers", "pod", pod.Name, "containers", len(missing))
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": missing}})
	if err != nil {
		return err
	}
	if err := r.Client.SubResource("ephemeralcontainers").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(job), pod.Name, pod.ResourceVersion)
	return nil
}

// reportConflicts records a Warning event, once per job and pod, for each selected pod left out because a
// container of its own takes a name of the job's template.
func (r *Reconciler) reportConflicts(job *kruiseappsv1alpha1.EphemeralJob, pods []*corev1.Pod) {
	for _, pod := range pods {
		if r.conflicts.first(job.UID, pod.UID) {
			r.Recorder.Eventf(job, pod, corev1.EventTypeWarning, reasonConflict, "Select",
				"Pod %s already has a container named as one of the job's ephemeral containers; it is left out", pod.Name)
		}
	}
}

// reported remembers which conflicting pods each job has reported.
type reported struct {
	mu   sync.Mutex
	pods map[types.UID]sets.Set[types.UID]
}

func newReported() *reported { return &reported{pods: map[types.UID]sets.Set[types.UID]{}} }

// first reports whether the job has not reported the pod yet, and remembers it.
func (r *reported) first(job, pod types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods[job] == nil {
		r.pods[job] = sets.New[types.UID]()
	}
	if r.pods[job].Has(pod) {
		return false
	}
	r.pods[job].Insert(pod)
	return true
}

func (r *reported) forget(job types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, job)
}
