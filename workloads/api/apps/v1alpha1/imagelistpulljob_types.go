package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImageListPullJobSpec is the desired state of an ImageListPullJob: one ImagePullJob per image, all
// sharing the same template.
type ImageListPullJobSpec struct {
	// images are the full image references to pull.
	// +required
	Images []string `json:"images"`

	ImagePullJobTemplate `json:",inline"`
}

// ImageListPullJobStatus is the observed state of an ImageListPullJob.
type ImageListPullJobStatus struct {
	// startTime is when the controller first picked the job up.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when every ImagePullJob finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// desired is the number of ImagePullJobs, normally len(spec.images).
	// +required
	Desired int32 `json:"desired"`

	// active is the number of ImagePullJobs the ImagePullJob controller is working on.
	// +optional
	Active int32 `json:"active"`

	// completed is the number of finished ImagePullJobs.
	// +optional
	Completed int32 `json:"completed"`

	// succeeded is the number of finished ImagePullJobs whose every node succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// failedImageStatuses describes the ImagePullJobs that have failed nodes.
	// +optional
	FailedImageStatuses []*FailedImageStatus `json:"failedImageStatuses,omitempty"`
}

// FailedImageStatus describes an ImagePullJob of the list that has failed nodes.
type FailedImageStatus struct {
	// imagePullJob is the name of the ImagePullJob.
	// +optional
	ImagePullJob string `json:"imagePullJob,omitempty"`

	// name is the image.
	// +optional
	Name string `json:"name,omitempty"`

	// message is the ImagePullJob's status message.
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="ImagePullJobs wanted."
// +kubebuilder:printcolumn:name="SUCCEEDED",type="integer",JSONPath=".status.succeeded",description="ImagePullJobs that succeeded on every node."
// +kubebuilder:printcolumn:name="COMPLETED",type="integer",JSONPath=".status.completed",description="ImagePullJobs that finished."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// ImageListPullJob pre-pulls a list of images on a set of nodes.
type ImageListPullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImageListPullJobSpec   `json:"spec,omitempty"`
	Status ImageListPullJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ImageListPullJobList is a list of ImageListPullJobs.
type ImageListPullJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageListPullJob `json:"items"`
}

func init() {
	register(&ImageListPullJob{}, &ImageListPullJobList{})
}
