package workloadspread

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	wsadmission "github.com/flotilla-dev/flotilla/workloads/workloadspread/admission"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

// ValidateWorkloadSpreadPath is upstream's path of the WorkloadSpread validating webhook; the chart's entry
// is vworkloadspread.kb.io, as upstream's.
const ValidateWorkloadSpreadPath = "/validate-apps-kruise-io-v1alpha1-workloadspread"

// Hooks are the module's webhook parts: c is the manager's cached client (with controller.TargetIndex
// registered), live reads past the cache after a conflict.
type Hooks struct {
	Client client.Client
	Live   client.Reader
	Scheme *runtime.Scheme
	Clock  clock.PassiveClock
}

// Register serves the validating webhook on srv and adds the module's parts to the pod chains: the pod
// mutation (placing new pods) and the pod validation (recording deletions and evictions). Call it once,
// before the server starts.
func (h Hooks) Register(srv webhook.Server, pods *webhooks.PodChain, validations *webhooks.PodValidationChain) error {
	if srv == nil || h.Client == nil || h.Live == nil || h.Scheme == nil || pods == nil || validations == nil {
		return errors.New("registering the WorkloadSpread webhooks: server, clients, scheme and pod chains are required")
	}
	if h.Clock == nil {
		h.Clock = clock.RealClock{}
	}
	webhooks.Serve(srv, map[string]admission.Handler{ValidateWorkloadSpreadPath: validating(h.Client, admission.NewDecoder(h.Scheme))})
	s := &spreader{reader: h.Client, ledger: &controller.Ledger{Client: h.Client, Live: h.Live}, clock: h.Clock}
	pods.Add(s.mutate)
	validations.Add(s.released)
	return nil
}

// validating refuses a WorkloadSpread that breaks the module's rules, naming every faulty field.
func validating(reader client.Reader, decoder admission.Decoder) admission.Handler {
	return webhooks.ValidatingWithPeers(decoder, reader, "WorkloadSpread",
		func(cur, _ *kruiseappsv1alpha1.WorkloadSpread, peers *kruiseappsv1alpha1.WorkloadSpreadList) (field.ErrorList, []string) {
			return wsadmission.Validate(cur, peers.Items), wsadmission.Warnings(cur)
		})
}

// spreader is the module's part of the pod webhooks.
type spreader struct {
	reader client.Reader
	ledger *controller.Ledger
	clock  clock.PassiveClock
}

// mutate places a new pod of a spread workload in the first subset with room, recording it in the
// WorkloadSpread's status before the pod exists. A WorkloadSpread whose status does not describe its spec
// yet refuses the pod: its workload creates it again shortly, when the room is known.
func (s *spreader) mutate(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if _, placed := plan.MatchedOf(pod); placed {
		return false, nil // placed already (a webhook called again): recording it twice would take two rooms
	}
	ws, err := s.spreading(ctx, pod)
	if ws == nil || err != nil {
		return false, err
	}
	key, uid := pod.Name, ""
	if key == "" {
		uid = string(uuid.NewUUID())
		key = uid
	}
	var placed *corev1.Pod
	dryRun := isDryRun(ctx)
	_, err = s.ledger.Update(ctx, ws, func(w *kruiseappsv1alpha1.WorkloadSpread) (bool, error) {
		placed = nil
		if !plan.Reconciled(w) {
			return false, fmt.Errorf("WorkloadSpread %s has not been reconciled yet", w.Name)
		}
		subset, ok := plan.Choose(w)
		if !ok {
			return false, nil
		}
		placed = pod.DeepCopy()
		if err := plan.Inject(placed, w, subset, uid); err != nil {
			return false, err
		}
		return !dryRun && plan.Admit(&w.Status, subset.Name, key, metav1.NewTime(s.clock.Now())), nil
	})
	return s.outcome(ctx, pod, placed, err)
}

func (s *spreader) outcome(ctx context.Context, pod, placed *corev1.Pod, err error) (bool, error) {
	switch {
	case err != nil:
		controller.CountSpread("refused")
		return false, err
	case placed == nil:
		controller.CountSpread("full")
		return false, nil
	}
	controller.CountSpread("matched")
	*pod = *placed
	logf.FromContext(ctx).V(1).Info("Placed a pod in a WorkloadSpread subset", "pod", klog.KObj(pod),
		"matched", pod.Annotations[kruiseappsv1alpha1.MatchedWorkloadSpreadSubsetAnnotations])
	return true, nil
}

// spreading finds the WorkloadSpread whose target is the pod's workload; nil for a pod of none.
func (s *spreader) spreading(ctx context.Context, pod *corev1.Pod) (*kruiseappsv1alpha1.WorkloadSpread, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil, nil
	}
	gk, name, ok, err := controller.TopLevel(ctx, s.reader, s.ledger.Live, pod.Namespace, ref)
	if !ok || err != nil {
		return nil, err
	}
	list, err := controller.Spreading(ctx, s.reader, pod.Namespace, gk, name)
	if err != nil || len(list) == 0 || list[0].DeletionTimestamp != nil {
		return nil, err
	}
	ws := &list[0]
	if plan.Reconciled(ws) {
		return ws, nil
	}
	// The cache may lag behind the controller's status write: look past it once.
	if err := s.ledger.Live.Get(ctx, client.ObjectKeyFromObject(ws), ws); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return ws, nil
}

// released records the deletion or eviction of an active pod placed by a WorkloadSpread, so the room it
// frees is reusable before the pod is gone. It never refuses: a failed record only delays the room until
// the controller sees the pod go.
func (s *spreader) released(ctx context.Context, d webhooks.PodDisruption) error {
	if d.Operation == webhooks.PodUpdate || d.DryRun || !plan.Active(d.Pod) {
		return nil
	}
	m, ok := plan.MatchedOf(d.Pod)
	if !ok {
		return nil
	}
	ws := &kruiseappsv1alpha1.WorkloadSpread{}
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: d.Pod.Namespace, Name: m.Name}, ws); err != nil {
		return nil //nolint:nilerr // a WorkloadSpread gone or unreadable has nothing to record
	}
	now := metav1.NewTime(s.clock.Now())
	_, err := s.ledger.Update(ctx, ws, func(w *kruiseappsv1alpha1.WorkloadSpread) (bool, error) {
		return plan.Release(&w.Status, m.Subset, d.Pod.Name, now), nil
	})
	if err != nil {
		logf.FromContext(ctx).Error(err, "Recording a pod deletion failed", "pod", klog.KObj(d.Pod))
	}
	return nil
}

// isDryRun tells whether the admission request being answered changes nothing.
func isDryRun(ctx context.Context) bool {
	req, err := admission.RequestFromContext(ctx)
	return err == nil && req.DryRun != nil && *req.DryRun
}
