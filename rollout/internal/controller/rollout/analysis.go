package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=rolloutanalyses,verbs=get;list;watch

// analysisIndex indexes RolloutAnalyses by the Rollout they name.
const analysisIndex = "rollout.spec.rolloutRef.name"

// watchAnalyses wakes a Rollout when the RolloutAnalysis naming it changes (a run passed or failed).
func (r *Reconciler) watchAnalyses(mgr manager.Manager, b *builder.Builder) (*builder.Builder, error) {
	if !r.Analysis {
		return b, nil
	}
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &analysisv1alpha1.RolloutAnalysis{}, analysisIndex,
		func(obj client.Object) []string {
			return []string{obj.(*analysisv1alpha1.RolloutAnalysis).Spec.RolloutRef.Name}
		})
	if err != nil {
		return nil, fmt.Errorf("indexing RolloutAnalyses by Rollout: %w", err)
	}
	return b.Watches(&analysisv1alpha1.RolloutAnalysis{}, handler.EnqueueRequestsFromMapFunc(
		func(_ context.Context, obj client.Object) []reconcile.Request {
			ra := obj.(*analysisv1alpha1.RolloutAnalysis)
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ra.Namespace, Name: ra.Spec.RolloutRef.Name}}}
		})), nil
}

// readAnalysis condenses the RolloutAnalysis that binds the Rollout (the oldest, should several name it, as
// the analysis module decides too) for the planner; nil when none does.
func (r *Reconciler) readAnalysis(ctx context.Context, ro *rolloutsv1beta1.Rollout, br *rolloutsv1beta1.BatchRelease) (*plan.AnalysisObs, error) {
	if !r.Analysis {
		return nil, nil
	}
	list := &analysisv1alpha1.RolloutAnalysisList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ro.Namespace), client.MatchingFields{analysisIndex: ro.Name}); err != nil {
		return nil, fmt.Errorf("reading RolloutAnalyses: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	ra := slices.MinFunc(list.Items, func(a, b analysisv1alpha1.RolloutAnalysis) int { return analysisv1alpha1.CompareBinding(&a, &b) })
	obs := analysisObs(&ra, ro.Status.GetSubStatus())
	var err error
	if br != nil && plan.ProgressOverdue(ro.Status.GetSubStatus(), obs.ProgressDeadline, r.Clock.Now()) {
		obs.StuckPods, err = r.stuckPods(ctx, ro, br)
	}
	return obs, err
}

// maxStuckPods bounds the pods a progress-deadline message names.
const maxStuckPods = 5

// stuckPods names the new revision's pods that are not ready, and why. The workload is read as its
// BatchRelease reads it: only the release's own control finds a canary Deployment and its pods.
func (r *Reconciler) stuckPods(ctx context.Context, ro *rolloutsv1beta1.Rollout, br *rolloutsv1beta1.BatchRelease) ([]string, error) {
	ctl, err := r.Controls.For(r.Client, control.Target{Namespace: ro.Namespace, Ref: ro.Spec.WorkloadRef,
		Owner: *metav1.NewControllerRef(br, rolloutsv1beta1.GroupVersion.WithKind("BatchRelease")), Plan: br.Spec.ReleasePlan})
	if err != nil {
		return nil, err
	}
	info, err := ctl.Read(ctx)
	if errors.Is(err, control.ErrWorkloadGone) {
		return nil, nil
	}
	if err != nil || info.UpdatedPods == nil {
		// A control that cannot tell the new pods apart names none, rather than every pod of the namespace.
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(info.Object.GetNamespace()),
		client.MatchingLabelsSelector{Selector: info.UpdatedPods}); err != nil {
		return nil, fmt.Errorf("reading the step's pods: %w", err)
	}
	var out []string
	for i := range pods.Items {
		if why := podProblem(&pods.Items[i]); why != "" && len(out) < maxStuckPods {
			out = append(out, pods.Items[i].Name+" "+why)
		}
	}
	return out, nil
}

// podProblem says why a pod is not ready ("" when it is): a container's waiting reason (CrashLoopBackOff,
// ImagePullBackOff), the scheduler's word, or only that it is not ready.
func podProblem(pod *corev1.Pod) string {
	if podcondition.IsReady(pod) {
		return ""
	}
	for _, c := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if w := c.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("(container %s: %s)", c.Name, w.Reason)
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("(%s: %s)", c.Reason, c.Message)
		}
	}
	return "(not ready)"
}

// analysisObs is what the planner reads of a binding: its gated steps always, its runs only when they
// measure the release in progress.
func analysisObs(ra *analysisv1alpha1.RolloutAnalysis, sub *rolloutsv1beta1.CommonStatus) *plan.AnalysisObs {
	obs := &plan.AnalysisObs{
		Name: ra.Name, Runs: map[int32]plan.RunObs{}, Background: ra.Spec.Background != nil,
		Abort: ra.Spec.OnFailure != analysisv1alpha1.FailureActionPause,
	}
	if ra.Spec.ProgressDeadlineSeconds != nil {
		obs.ProgressDeadline = time.Duration(*ra.Spec.ProgressDeadlineSeconds) * time.Second
	}
	for _, s := range ra.Spec.Steps {
		obs.Gated = append(obs.Gated, s.Step)
	}
	if sub == nil || ra.Status.CanaryRevision == "" || ra.Status.CanaryRevision != sub.PodTemplateHash {
		return obs
	}
	for _, run := range ra.Status.Runs {
		obs.Runs[run.Step] = plan.RunObs{Name: run.Name, Phase: run.Phase, UntilTerminated: run.UntilTerminated}
	}
	obs.DeadlineAbort = ra.Status.ProgressDeadlineExceeded
	return obs
}
