package pub

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// InPlaceUpdateReady is the readiness gate (and pod condition) that holds a pod NotReady while it is
	// updated in place. It must be in template.spec.readinessGates for InPlaceIfPossible/InPlaceOnly.
	InPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"

	// InPlaceUpdateStateKey is the pod annotation whose value is an InPlaceUpdateState as JSON.
	InPlaceUpdateStateKey = "apps.kruise.io/inplace-update-state"
	// InPlaceUpdateStateKeyOld is the pre-v1.0 key still read on pods created by old controllers.
	InPlaceUpdateStateKeyOld = "inplace-update-state"

	// InPlaceUpdateGraceKey is the pod annotation holding the update that waits for
	// inPlaceUpdateStrategy.gracePeriodSeconds to expire.
	InPlaceUpdateGraceKey = "apps.kruise.io/inplace-update-grace"
	// InPlaceUpdateGraceKeyOld is the pre-v1.0 key of InPlaceUpdateGraceKey.
	InPlaceUpdateGraceKeyOld = "inplace-update-grace"

	// RuntimeContainerMetaKey is the pod annotation the node agent writes with a RuntimeContainerMetaSet.
	RuntimeContainerMetaKey = "apps.kruise.io/runtime-containers-meta"
)

// InPlaceUpdateState records the latest in-place update of a pod, including the container statuses
// from before the update, so completion can be detected when they change.
type InPlaceUpdateState struct {
	// Revision is the updated revision hash.
	Revision string `json:"revision"`

	// UpdateTimestamp is the start time when the in-place update happens.
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`

	// LastContainerStatuses records the before-in-place-update container statuses. It is a map from ContainerName
	// to InPlaceUpdateContainerStatus
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses"`

	// UpdateEnvFromMetadata indicates there are envs from annotations/labels that should be in-place update.
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata,omitempty"`

	// UpdateResources indicates there are resources that should be in-place update.
	UpdateResources bool `json:"updateResources,omitempty"`

	// UpdateImages indicates there are images that should be in-place update.
	UpdateImages bool `json:"updateImages,omitempty"`

	// VerticalUpdateOnly indicates there are only vertical update in this revision.
	VerticalUpdateOnly bool `json:"verticalUpdateOnly"`

	// NextContainerImages is the containers with lower priority that waiting for in-place update images in next batch.
	NextContainerImages map[string]string `json:"nextContainerImages,omitempty"`

	// NextContainerRefMetadata is the containers with lower priority that waiting for in-place update labels/annotations in next batch.
	NextContainerRefMetadata map[string]metav1.ObjectMeta `json:"nextContainerRefMetadata,omitempty"`

	// NextContainerResources is the containers with lower priority that waiting for in-place update resources in next batch.
	NextContainerResources map[string]corev1.ResourceRequirements `json:"nextContainerResources,omitempty"`

	// PreCheckBeforeNext is the pre-check that must pass before the next containers can be in-place update.
	PreCheckBeforeNext *InPlaceUpdatePreCheckBeforeNext `json:"preCheckBeforeNext,omitempty"`

	// ContainerBatchesRecord records the update batches that have patched in this revision.
	ContainerBatchesRecord []InPlaceUpdateContainerBatch `json:"containerBatchesRecord,omitempty"`
}

// InPlaceUpdatePreCheckBeforeNext contains the pre-check that must pass before the next containers can be in-place update.
type InPlaceUpdatePreCheckBeforeNext struct {
	ContainersRequiredReady []string `json:"containersRequiredReady,omitempty"`
}

// InPlaceUpdateContainerBatch indicates the timestamp and containers for a batch update
type InPlaceUpdateContainerBatch struct {
	// Timestamp is the time for this update batch
	Timestamp metav1.Time `json:"timestamp"`
	// Containers is the name list of containers for this update batch
	Containers []string `json:"containers"`
}

// InPlaceUpdateContainerStatus records the statuses of the container that are mainly used
// to determine whether the InPlaceUpdate is completed.
type InPlaceUpdateContainerStatus struct {
	ImageID   string                      `json:"imageID,omitempty"`
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// InPlaceUpdateStrategy defines the strategies for in-place update.
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is the timespan between set Pod status to not-ready and update images in Pod spec
	// when in-place update a Pod.
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`
}

// RuntimeContainerMetaSet contains all the containers' meta of the Pod.
type RuntimeContainerMetaSet struct {
	Containers []RuntimeContainerMeta `json:"containers"`
}

// RuntimeContainerMeta contains the meta data of a runtime container.
type RuntimeContainerMeta struct {
	Name         string                 `json:"name"`
	ContainerID  string                 `json:"containerID"`
	RestartCount int32                  `json:"restartCount"`
	Hashes       RuntimeContainerHashes `json:"hashes"`
}

// RuntimeContainerHashes contains the hashes of such container.
type RuntimeContainerHashes struct {
	// PlainHash is the hash that directly calculated from pod.spec.container[x].
	// Usually it is calculated by Kubelet and will be in annotation of each runtime container.
	PlainHash uint64 `json:"plainHash"`
	// PlainHashWithoutResources is the hash that directly calculated from pod.spec.container[x]
	// over fields with Resources field zero'd out.
	// Usually it is calculated by Kubelet and will be in annotation of each runtime container.
	PlainHashWithoutResources uint64 `json:"plainHashWithoutResources"`
	// ExtractedEnvFromMetadataHash is the hash that calculated from pod.spec.container[x],
	// whose envs from annotations/labels have already been extracted to the real values.
	ExtractedEnvFromMetadataHash uint64 `json:"extractedEnvFromMetadataHash,omitempty"`
}

// GetInPlaceUpdateState returns the raw in-place update state annotation, preferring the current key
// over the legacy one.
func GetInPlaceUpdateState(obj metav1.Object) (string, bool) {
	return annotationWithFallback(obj, InPlaceUpdateStateKey, InPlaceUpdateStateKeyOld)
}

// GetInPlaceUpdateGrace returns the raw grace annotation, preferring the current key over the legacy one.
func GetInPlaceUpdateGrace(obj metav1.Object) (string, bool) {
	return annotationWithFallback(obj, InPlaceUpdateGraceKey, InPlaceUpdateGraceKeyOld)
}

// RemoveInPlaceUpdateGrace deletes both the current and the legacy grace annotation.
func RemoveInPlaceUpdateGrace(obj metav1.Object) {
	annotations := obj.GetAnnotations()
	delete(annotations, InPlaceUpdateGraceKey)
	delete(annotations, InPlaceUpdateGraceKeyOld)
}

// ParseInPlaceUpdateState decodes the pod's in-place update state; nil without error when absent.
func ParseInPlaceUpdateState(obj metav1.Object) (*InPlaceUpdateState, error) {
	raw, ok := GetInPlaceUpdateState(obj)
	if !ok {
		return nil, nil
	}
	state := &InPlaceUpdateState{}
	if err := json.Unmarshal([]byte(raw), state); err != nil {
		return nil, fmt.Errorf("decode annotation %s: %w", InPlaceUpdateStateKey, err)
	}
	return state, nil
}

// GetRuntimeContainerMetaSet decodes the node agent's container report; nil without error when absent.
func GetRuntimeContainerMetaSet(obj metav1.Object) (*RuntimeContainerMetaSet, error) {
	raw, ok := obj.GetAnnotations()[RuntimeContainerMetaKey]
	if !ok {
		return nil, nil
	}
	set := &RuntimeContainerMetaSet{}
	if err := json.Unmarshal([]byte(raw), set); err != nil {
		return nil, fmt.Errorf("decode annotation %s: %w", RuntimeContainerMetaKey, err)
	}
	return set, nil
}

func annotationWithFallback(obj metav1.Object, key, legacyKey string) (string, bool) {
	annotations := obj.GetAnnotations()
	if v, ok := annotations[key]; ok {
		return v, true
	}
	v, ok := annotations[legacyKey]
	return v, ok
}
