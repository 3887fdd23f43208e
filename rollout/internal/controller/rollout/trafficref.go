package rollout

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
)

// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=trafficroutings,verbs=get;list;watch;update;patch

// syncTrafficRoutingRef keeps this Rollout's progressing finalizer on the TrafficRouting its
// rollouts.kruise.io/trafficrouting annotation names exactly while a release runs: the TrafficRouting routes
// its own strategy while any Rollout holds it (the end-to-end canary of several workloads), and restores its
// objects once none does. As upstream, only the annotation counts.
func (r *Reconciler) syncTrafficRoutingRef(ctx context.Context, ro *rolloutsv1beta1.Rollout, st rolloutsv1beta1.RolloutStatus) error {
	name := ro.Annotations[rolloutsv1beta1.TrafficRoutingAnnotation]
	if name == "" {
		return nil
	}
	tr := &rolloutsv1alpha1.TrafficRouting{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: name}, tr)
	if apierrors.IsNotFound(err) {
		if releasing(ro, st) {
			r.Recorder.Eventf(ro, nil, corev1.EventTypeWarning, "TrafficRoutingNotFound", "Reconcile",
				"TrafficRouting %s/%s named by annotation %s does not exist", ro.Namespace, name, rolloutsv1beta1.TrafficRoutingAnnotation)
		}
		return nil
	}
	if err != nil {
		return err
	}
	finalizer := rolloutsv1beta1.ProgressingRolloutFinalizer(ro.Name)
	if releasing(ro, st) {
		if !tr.DeletionTimestamp.IsZero() {
			return nil
		}
		return reconcileutil.PatchFinalizers(ctx, r.Client, tr, func(o client.Object) bool { return controllerutil.AddFinalizer(o, finalizer) })
	}
	return reconcileutil.RemoveFinalizer(ctx, r.Client, tr, finalizer)
}

// releasing: a release of this Rollout runs its steps (not finalising, not deleted).
func releasing(ro *rolloutsv1beta1.Rollout, st rolloutsv1beta1.RolloutStatus) bool {
	sub := st.GetSubStatus()
	return ro.DeletionTimestamp.IsZero() && st.Phase == rolloutsv1beta1.RolloutPhaseProgressing &&
		sub != nil && sub.FinalisingStep == "" && sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateCompleted
}
