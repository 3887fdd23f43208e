package admission

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultPartitionPercentLimit is upstream's --partition-percent-limit default.
const DefaultPartitionPercentLimit = 50

// MaxSteps is the largest number of steps a release may have.
const MaxSteps = 50

// Options are the manager flags that change validation.
type Options struct {
	// FilterWorkloadType restricts workloadRef to the kinds the engine knows (upstream's
	// --filter-workload-type, default true). Turn it off to release StatefulSet-like custom kinds.
	FilterWorkloadType bool
	// PartitionPercentLimit is the largest percentage of replicas a partition-style step may have when
	// it also routes traffic (upstream's --partition-percent-limit). Zero or less means the default, 50.
	PartitionPercentLimit int
}

// DefaultOptions are upstream's defaults.
func DefaultOptions() Options {
	return Options{FilterWorkloadType: true, PartitionPercentLimit: DefaultPartitionPercentLimit}
}

func (o Options) partitionLimit() int {
	if o.PartitionPercentLimit <= 0 {
		return DefaultPartitionPercentLimit
	}
	return o.PartitionPercentLimit
}

// Workload kinds by group; the version of a workloadRef does not matter.
var (
	deploymentKind       = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	replicaSetKind       = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	statefulSetKind      = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	daemonSetKind        = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	cloneSetKind         = schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	advancedStatefulKind = schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}
	advancedDaemonKind   = schema.GroupKind{Group: "apps.kruise.io", Kind: "DaemonSet"}
)

// supportedWorkloadKinds are the kinds a workloadRef may name while FilterWorkloadType is on.
var supportedWorkloadKinds = []schema.GroupKind{
	deploymentKind, replicaSetKind, statefulSetKind, daemonSetKind,
	cloneSetKind, advancedStatefulKind, advancedDaemonKind,
}

// blueGreenWorkloadKinds are the kinds a blue-green release supports.
var blueGreenWorkloadKinds = []schema.GroupKind{deploymentKind, cloneSetKind}
