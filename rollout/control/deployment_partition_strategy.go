package control

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// DeploymentStrategyFrom parses a Deployment's deployment-strategy annotation; ok is false when the
// annotation is absent or empty.
func DeploymentStrategyFrom(annotations map[string]string) (s rolloutsv1beta1.DeploymentStrategy, ok bool, err error) {
	raw := annotations[rolloutsv1beta1.DeploymentStrategyAnnotation]
	if raw == "" {
		return s, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return s, false, fmt.Errorf("annotation %s: %w", rolloutsv1beta1.DeploymentStrategyAnnotation, err)
	}
	return s, true, nil
}

// partitionStrategyJSON is the annotation value of s.
func partitionStrategyJSON(s rolloutsv1beta1.DeploymentStrategy) string {
	b, _ := json.Marshal(s) //nolint:errchkjson // a DeploymentStrategy always marshals
	return string(b)
}

// PartitionedReplicas is how many of replicas pods a deployment-strategy partition puts on the new
// template: an absolute number, or a percentage rounded up. A percentage below 100% keeps at least one
// old pod when there is more than one pod, as upstream does. A bare number in a string counts as a
// number.
func PartitionedReplicas(partition intstr.IntOrString, replicas int32) (int32, error) {
	replicas = max(replicas, 0)
	value, percent, err := partitionNumber(partition)
	if err != nil {
		return 0, err
	}
	if !percent {
		return int32(min(max(value, 0), int64(replicas))), nil //nolint:gosec // clamped to [0, replicas]
	}
	scaled := int32(min(max(partitionCeilPercent(value, replicas), 0), int64(replicas))) //nolint:gosec // clamped
	if replicas > 1 && value < 100 {
		scaled = min(scaled, replicas-1)
	}
	return scaled, nil
}

func partitionNumber(p intstr.IntOrString) (value int64, percent bool, err error) {
	if p.Type == intstr.Int {
		return int64(p.IntVal), false, nil
	}
	s := strings.TrimSpace(p.StrVal)
	percent = strings.HasSuffix(s, "%")
	value, err = strconv.ParseInt(strings.TrimSuffix(s, "%"), 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("partition %q is neither a number nor a percentage", p.StrVal)
	}
	return value, percent, nil
}

// partitionCeilPercent is ceil(value% of total) without floating point.
func partitionCeilPercent(value int64, total int32) int64 {
	product := value * int64(total)
	if product <= 0 {
		return product / 100
	}
	return (product + 99) / 100
}

// partitionReplicasOf is spec.replicas with the API default of 1.
func partitionReplicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
