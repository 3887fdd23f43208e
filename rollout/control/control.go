// Package control is how the Rollout engine drives one kind of workload: it freezes the workload, moves it one
// batch at a time, and releases it. The engine picks a WorkloadControl from a Registry by the workload's
// group/kind and the release's rolling style.
//
// Every control is the engine's, the kruise kinds' included, and the rollout module registers them all
// (RegisterNative). A control works on the kind's API, which Flotilla shares with upstream OpenKruise, and the
// engine must release a CloneSet whoever runs its controller: Flotilla's cloneset module, or an upstream
// OpenKruise beside an engine-only manager (--enable-modules=rollout, the chart's engineOnly). Controls
// registered by the workload modules would be missing exactly there.
package control

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ErrWorkloadGone is returned by WorkloadControl.Read when the workload does not exist.
var ErrWorkloadGone = errors.New("workload not found")

// ErrNotObserved is returned when a control's own recent write is not in its (cached) reads yet, so acting
// now could repeat it; the caller retries shortly, without treating it as a failure.
var ErrNotObserved = errors.New("own recent change not observed yet")

// Target is the release a control works for.
type Target struct {
	// Namespace and Ref name the workload.
	Namespace string
	Ref       rolloutsv1beta1.ObjectRef
	// Owner is the BatchRelease's controller reference; it is written to the workload's control-info
	// annotation and owns any object the control creates (such as a canary Deployment).
	Owner metav1.OwnerReference
	// Plan is the BatchRelease's release plan. Finalize while Plan.BatchPartition still names a batch (a
	// release handed over to the next one) keeps the workload frozen; a Rollout that means to release its
	// workload clears batchPartition first.
	Plan rolloutsv1beta1.ReleasePlan
}

// WorkloadInfo is what the engine reads from a workload.
type WorkloadInfo struct {
	// Object is the workload as read (typed or unstructured).
	Object client.Object
	// Replicas is the desired number of pods (spec.replicas, or the desired number scheduled of a DaemonSet).
	Replicas int32
	// UpdatedReplicas and UpdatedReadyReplicas count the pods of UpdateRevision (for canary style: of the
	// canary workload).
	UpdatedReplicas      int32
	UpdatedReadyReplicas int32
	// StableRevision and UpdateRevision are the values of RevisionLabelKey on the old and new pods.
	StableRevision   string
	UpdateRevision   string
	RevisionLabelKey string
	// UpdatedPods selects the pods of UpdateRevision, in Object's namespace.
	UpdatedPods labels.Selector
	// PodsRecreated: the pods of UpdateRevision are new pods, never pods updated in place, so each one the
	// pod cache shows Ready counts as updated and ready before the workload's status says so.
	PodsRecreated bool
	// Consistent is false while the workload's own controller has not observed its latest spec.
	Consistent bool
	// Controlled is true when the workload's control-info annotation names this release's BatchRelease.
	Controlled bool
}

// Batch is what a batch asks of a workload.
type Batch struct {
	// DesiredUpdated is the number of updated pods the batch runs.
	DesiredUpdated int32
	// Share, when set, is the percentage of the workload DesiredUpdated came from. A control that can hold
	// a percentage writes it instead, as upstream does, so the batch keeps its share when the workload
	// scales.
	Share *intstr.IntOrString
	// PodLabels are the labels of the batch's pods (BatchPodLabels). A control whose workload can create
	// pods with them says so to the workload; the release labels any pod that still lacks them.
	PodLabels map[string]string
	// Unmoved is the number of pods a rollback in batches finds already on the revision it releases: the
	// pods the release being rolled back never reached. They are part of DesiredUpdated. A control whose
	// partition counts ordinals rather than pods must not count them, as they sit below the partition.
	Unmoved int32
	// Abort: the release was aborted (its analysis failed). The workload goes back to DesiredUpdated new pods
	// even below what it runs, the one case a batch moves a release backwards; the BatchRelease asks again
	// until it does. DaemonSets keep their pods: they create every pod from their template.
	Abort bool
}

// WorkloadControl drives one workload for one release. Every method is idempotent: the BatchRelease
// controller calls them again on each reconcile until they report done.
type WorkloadControl interface {
	// Read returns the workload's current state, or ErrWorkloadGone.
	Read(ctx context.Context) (*WorkloadInfo, error)
	// Initialize takes control of the workload: control-info annotation, frozen rollout.
	Initialize(ctx context.Context) error
	// UpgradeBatch lets the workload run updated pods until b.DesiredUpdated of them exist. It never moves a
	// release backwards, but for an aborted one (b.Abort).
	UpgradeBatch(ctx context.Context, b Batch) error
	// Finalize releases the workload. With Plan.BatchPartition nil the release completes (the workload
	// rolls out fully); otherwise the workload is left as the last batch made it. done is false while the
	// control still waits for the workload (for example Plan.FinalizingPolicy WaitResume).
	Finalize(ctx context.Context) (done bool, err error)
}

// BatchInitializer is a WorkloadControl that can take control of its workload and start a batch in the same
// write: a release then begins one write (and one reconcile of the workload's controller) sooner.
type BatchInitializer interface {
	// InitializeBatch is Initialize followed by UpgradeBatch(b), written at once.
	InitializeBatch(ctx context.Context, b Batch) error
}

// Factory builds the control of one release.
type Factory func(c client.Client, t Target) WorkloadControl

// Key selects a Factory.
type Key struct {
	GroupKind schema.GroupKind
	Style     rolloutsv1beta1.RollingStyleType
}

// Registry maps workload kinds and rolling styles to controls. The rollout module fills it at wiring time
// (RegisterNative) and its controllers only read it afterwards.
type Registry struct {
	factories map[Key]Factory
	fallback  Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{factories: map[Key]Factory{}}
}

// Register adds the factory for a kind and style; registering a key twice is a wiring error.
func (r *Registry) Register(gk schema.GroupKind, style rolloutsv1beta1.RollingStyleType, f Factory) error {
	key := Key{GroupKind: gk, Style: style}
	if _, ok := r.factories[key]; ok {
		return fmt.Errorf("a workload control for %s with rolling style %q is already registered", gk, style)
	}
	r.factories[key] = f
	return nil
}

// RegisterFallback sets the partition-style control used for any kind nothing else claims (StatefulSet-like
// custom resources).
func (r *Registry) RegisterFallback(f Factory) {
	r.fallback = f
}

// For returns the control of a release. Canary style applies to Deployments only; other kinds fall back to
// partition style, as upstream does.
func (r *Registry) For(c client.Client, t Target) (WorkloadControl, error) {
	gv, err := schema.ParseGroupVersion(t.Ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("workloadRef.apiVersion %q: %w", t.Ref.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: t.Ref.Kind}
	style := EffectiveStyle(t.Plan)
	if f, ok := r.factories[Key{GroupKind: gk, Style: style}]; ok {
		return f(c, t), nil
	}
	if style == rolloutsv1beta1.CanaryRollingStyle {
		if f, ok := r.factories[Key{GroupKind: gk, Style: rolloutsv1beta1.PartitionRollingStyle}]; ok {
			return f(c, t), nil
		}
	}
	if style != rolloutsv1beta1.BlueGreenRollingStyle && r.fallback != nil {
		return r.fallback(c, t), nil
	}
	return nil, fmt.Errorf("no workload control for %s with rolling style %q", gk, style)
}

// EffectiveStyle is the plan's rolling style; an empty style means canary when the plan asks for an extra
// workload and partition otherwise.
func EffectiveStyle(p rolloutsv1beta1.ReleasePlan) rolloutsv1beta1.RollingStyleType {
	switch {
	case p.RollingStyle != "":
		return p.RollingStyle
	case p.EnableExtraWorkloadForCanary:
		return rolloutsv1beta1.CanaryRollingStyle
	default:
		return rolloutsv1beta1.PartitionRollingStyle
	}
}
