package rollout

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=networking.istio.io,resources=virtualservices;destinationrules,verbs=get;list;watch;update;patch

// runTraffic carries out the traffic task the Rollout's status asks for and reports its outcome (nil when there
// is none, or when no provider runs in this manager and the planner reports that instead).
func (r *Reconciler) runTraffic(ctx context.Context, ro *rolloutsv1beta1.Rollout, info *control.WorkloadInfo) *plan.TrafficObs {
	task, ok, err := plan.PlanTraffic(ro.Status, ro.Spec)
	if (!ok && err == nil) || r.Traffic.Empty() {
		return nil
	}
	obs := &plan.TrafficObs{Task: task}
	if err == nil {
		obs.Done, err = r.network(ro, info).do(ctx, task)
	}
	switch {
	case err != nil:
		obs.Failure = err.Error()
		r.Recorder.Eventf(ro, nil, corev1.EventTypeWarning, plan.ReasonTrafficFailed, string(task.Kind), "%v", err)
	case !obs.Done:
		r.Recorder.Eventf(ro, nil, corev1.EventTypeNormal, "TrafficRouting", string(task.Kind), "%s", describeTask(task))
		r.changes.Mark(ro.UID, r.Clock.Now())
		// A prepare writes both Services in one call: once its writes succeeded they are as the step wants
		// them, and the batch may grow after the grace period without another call finding nothing to change.
		obs.Done = task.Kind == plan.TrafficPrepare
	}
	obs.LastChange = r.changes.Last(ro.UID)
	return obs
}

// describeTask is the event text of a traffic change.
func describeTask(t plan.TrafficTask) string {
	switch t.Kind {
	case plan.TrafficPrepare:
		return fmt.Sprintf("preparing Services for step %d", t.Step)
	case plan.TrafficRoute:
		return fmt.Sprintf("routing step %d: %s", t.Step, t.Routes)
	case plan.TrafficClear:
		return fmt.Sprintf("step %d routes no traffic: restoring the original routes", t.Step)
	default:
		return string(t.Kind)
	}
}

// network is one Rollout's view of its traffic routing: its Services and its providers.
type network struct {
	c         client.Client
	providers *trafficrouting.Registry
	cfg       trafficrouting.Config
	// revisionKey is the pod label whose value names a pod's revision.
	revisionKey string
	// generate: the Rollout has a canary Service of its own (not disableGenerateCanaryService).
	generate bool
	// podLabels are the patchPodTemplateMetadata labels the canary pods carry; appendLabels adds those the
	// stable selector does not have to the canary selector (the AppendPodSelector gate).
	podLabels    map[string]string
	appendLabels bool
}

func (r *Reconciler) network(ro *rolloutsv1beta1.Rollout, info *control.WorkloadInfo) *network {
	ref := ro.Spec.Strategy.GetTrafficRoutings()[0]
	n := &network{
		c: r.Client, providers: r.Traffic, revisionKey: revisionLabelKey(info, ro.Spec.WorkloadRef.Kind),
		generate: !disableCanaryService(ro.Spec.Strategy), appendLabels: r.AppendPodSelector,
		cfg: trafficrouting.Config{
			Namespace: ro.Namespace, Owner: *ownerRef(ro), Ref: ref,
			StableService: ref.Service, CanaryService: ref.Service,
		},
	}
	if n.generate {
		n.cfg.CanaryService = ref.Service + "-canary"
	}
	if c := ro.Spec.Strategy.Canary; c != nil && c.PatchPodTemplateMetadata != nil {
		n.podLabels = c.PatchPodTemplateMetadata.Labels
	}
	return n
}

func ownerRef(ro *rolloutsv1beta1.Rollout) *metav1.OwnerReference {
	return metav1.NewControllerRef(ro, rolloutsv1beta1.GroupVersion.WithKind("Rollout"))
}

func disableCanaryService(s rolloutsv1beta1.RolloutStrategy) bool {
	switch {
	case s.Canary != nil:
		return s.Canary.DisableGenerateCanaryService
	case s.BlueGreen != nil:
		return s.BlueGreen.DisableGenerateCanaryService
	}
	return false
}

// revisionLabelKey is the pod label naming a pod's revision, as the workload's control reports it; before
// the workload is read (or when it is gone) the kind decides.
func revisionLabelKey(info *control.WorkloadInfo, kind string) string {
	switch {
	case info != nil && info.RevisionLabelKey != "":
		return info.RevisionLabelKey
	case kind == "Deployment" || kind == "CloneSet":
		return rolloutsv1beta1.PodTemplateHashLabelKey
	default:
		return rolloutsv1beta1.ControllerRevisionHashLabelKey
	}
}

// do runs one task; it is done when nothing had to change.
func (n *network) do(ctx context.Context, t plan.TrafficTask) (bool, error) {
	switch t.Kind {
	case plan.TrafficPrepare:
		// The network objects must exist before any pod is upgraded, or the release could not be steered.
		if _, err := n.provider(ctx); err != nil {
			return false, err
		}
		return n.prepareServices(ctx, t)
	case plan.TrafficRoute:
		return n.route(ctx, t)
	case plan.TrafficClear:
		return n.clear(ctx)
	case plan.TrafficRestoreService:
		return n.restoreStable(ctx)
	case plan.TrafficToStable:
		return n.finalizeRoutes(ctx)
	case plan.TrafficRemoveCanary:
		return all(ctx, n.finalizeRoutes, n.removeCanaryService)
	case plan.TrafficToNew:
		return n.ensureRoutes(ctx, t.Routes)
	default:
		return true, nil
	}
}

// route prepares the Services, then, once they are settled, the routes.
func (n *network) route(ctx context.Context, t plan.TrafficTask) (bool, error) {
	done, err := n.prepareServices(ctx, t)
	if err != nil || !done {
		return done, err
	}
	return n.ensureRoutes(ctx, t.Routes)
}

// clear takes every trace of routing away while a step routes nothing.
func (n *network) clear(ctx context.Context) (bool, error) {
	return all(ctx, n.finalizeRoutes, n.restoreStable, n.removeCanaryService)
}

func (n *network) provider(ctx context.Context) (trafficrouting.Provider, error) {
	p, err := n.providers.For(n.cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Initialize(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (n *network) ensureRoutes(ctx context.Context, routes trafficrouting.Routes) (bool, error) {
	p, err := n.provider(ctx)
	if err != nil {
		return false, err
	}
	return p.EnsureRoutes(ctx, routes)
}

func (n *network) finalizeRoutes(ctx context.Context) (bool, error) {
	p, err := n.providers.For(n.cfg)
	if err != nil {
		return false, err
	}
	return p.Finalize(ctx)
}

// all runs every step, even after one that changed something, and is done when all were.
func all(ctx context.Context, steps ...func(context.Context) (bool, error)) (bool, error) {
	done := true
	for _, step := range steps {
		ok, err := step(ctx)
		if err != nil {
			return false, err
		}
		done = done && ok
	}
	return done, nil
}
