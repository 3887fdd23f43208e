package control

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Kinds of the workloads the engine drives with controls of its own.
var (
	DeploymentKind  = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	StatefulSetKind = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	DaemonSetKind   = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	CloneSetKind    = schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	// AdvancedDaemonSetKind shares its kind name with the native DaemonSet.
	AdvancedDaemonSetKind = schema.GroupKind{Group: "apps.kruise.io", Kind: "DaemonSet"}
)

// ErrAdvancedDeploymentOff explains why a partition-style Deployment release cannot run.
var ErrAdvancedDeploymentOff = errors.New("partition-style Deployment releases need the AdvancedDeployment feature gate " +
	"(set spec.strategy.canary.enableExtraWorkloadForCanary: true for a canary Deployment instead)")

// RegisterNative registers every control the engine has: those of the native kinds, of CloneSets and of
// Advanced DaemonSets, and StatefulSet-like partition as the control of any kind nothing else claims
// (Advanced StatefulSets and StatefulSet-like custom kinds). The kruise kinds' controls are here rather than
// in their workload modules because the engine releases those kinds when the modules do not run (see the
// package doc).
func RegisterNative(r *Registry, advancedDeployment bool) error {
	partitionDeployment := NewDeploymentPartition
	if !advancedDeployment {
		partitionDeployment = unavailable(ErrAdvancedDeploymentOff)
	}
	r.RegisterFallback(NewStatefulSetLike)
	return errors.Join(
		r.Register(DeploymentKind, rolloutsv1beta1.PartitionRollingStyle, partitionDeployment),
		r.Register(DeploymentKind, rolloutsv1beta1.CanaryRollingStyle, NewDeploymentCanary),
		r.Register(DeploymentKind, rolloutsv1beta1.BlueGreenRollingStyle, NewDeploymentBlueGreen),
		r.Register(StatefulSetKind, rolloutsv1beta1.PartitionRollingStyle, NewStatefulSetLike),
		r.Register(DaemonSetKind, rolloutsv1beta1.PartitionRollingStyle, NewNativeDaemonSet),
		// The engine releases CloneSets whoever runs them: Flotilla's CloneSet module or upstream OpenKruise.
		r.Register(CloneSetKind, rolloutsv1beta1.PartitionRollingStyle, NewCloneSetPartition),
		r.Register(CloneSetKind, rolloutsv1beta1.BlueGreenRollingStyle, NewCloneSetBlueGreen),
		// The fallback would read an Advanced DaemonSet as a StatefulSet: no update revision, no release.
		r.Register(AdvancedDaemonSetKind, rolloutsv1beta1.PartitionRollingStyle, NewAdvancedDaemonSet),
	)
}

// unavailable is a control that can read its workload but refuses to change it, for a reason.
func unavailable(reason error) Factory {
	return func(c client.Client, t Target) WorkloadControl {
		return refusing{reader: NewDeploymentCanary(c, t), reason: reason}
	}
}

type refusing struct {
	reader WorkloadControl
	reason error
}

func (r refusing) Read(ctx context.Context) (*WorkloadInfo, error) { return r.reader.Read(ctx) }
func (r refusing) Initialize(context.Context) error                { return r.reason }
func (r refusing) UpgradeBatch(context.Context, Batch) error       { return r.reason }
func (r refusing) Finalize(context.Context) (bool, error)          { return false, r.reason }
