package admission

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// InProgressingValue is the value of the in-progressing annotation for a Rollout.
func InProgressingValue(rolloutName string) string {
	b, _ := json.Marshal(rolloutsv1beta1.InProgressingState{RolloutName: rolloutName}) //nolint:errchkjson // a struct of strings always marshals
	return string(b)
}

// ParseInProgressing reads the in-progressing annotation; nil when absent or empty.
func ParseInProgressing(annotations map[string]string) (*rolloutsv1beta1.InProgressingState, error) {
	return parseAnnotation[rolloutsv1beta1.InProgressingState](annotations, rolloutsv1beta1.InProgressingAnnotation)
}

// ParseDeploymentStrategy reads a Deployment's deployment-strategy annotation; nil when absent or empty.
func ParseDeploymentStrategy(annotations map[string]string) (*rolloutsv1beta1.DeploymentStrategy, error) {
	return parseAnnotation[rolloutsv1beta1.DeploymentStrategy](annotations, rolloutsv1beta1.DeploymentStrategyAnnotation)
}

// ParseControlInfo reads a workload's control-info annotation (the BatchRelease's owner reference); nil when
// absent or empty.
func ParseControlInfo(annotations map[string]string) (*metav1.OwnerReference, error) {
	return parseAnnotation[metav1.OwnerReference](annotations, rolloutsv1beta1.BatchReleaseControlAnnotation)
}

func parseAnnotation[T any](annotations map[string]string, key string) (*T, error) {
	raw := annotations[key]
	if raw == "" {
		return nil, nil
	}
	out := new(T)
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid: %w", key, err)
	}
	return out, nil
}
