package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// DefaultImagePullJobParallelism is the number of nodes pulling at once when parallelism is unset.
	DefaultImagePullJobParallelism = int32(1)
	// DefaultImagePullTimeoutSeconds is the per-attempt pull timeout when pullPolicy.timeoutSeconds is unset.
	DefaultImagePullTimeoutSeconds = int32(600)
	// DefaultImagePullBackoffLimit is the number of retries when pullPolicy.backoffLimit is unset.
	DefaultImagePullBackoffLimit = int32(3)
	// DefaultImagePullJobCompletionPolicyType is what the defaulting webhook writes when completionPolicy.type is unset.
	DefaultImagePullJobCompletionPolicyType = Always
	// DefaultImagePullPolicy is the node agent's behaviour when imagePullPolicy is unset.
	DefaultImagePullPolicy = PullIfNotPresent
)

// ImagePullPolicy says whether the node agent pulls an image that is already on the node.
// +kubebuilder:validation:Enum=Always;IfNotPresent
type ImagePullPolicy string

const (
	// PullAlways pulls even when the image is already present.
	PullAlways ImagePullPolicy = "Always"
	// PullIfNotPresent pulls only when the image is missing from the node. It is the default.
	PullIfNotPresent ImagePullPolicy = "IfNotPresent"
)

// ImagePullJobSpec is the desired state of an ImagePullJob.
type ImagePullJobSpec struct {
	// image is the full image reference to pull, name:tag or name@digest.
	// +required
	Image string `json:"image"`

	ImagePullJobTemplate `json:",inline"`
}

// ImagePullJobTemplate is the part of an ImagePullJob spec that ImageListPullJob shares for every image.
type ImagePullJobTemplate struct {
	// pullSecrets names secrets in the job's namespace used to authenticate the pull.
	// +optional
	PullSecrets []string `json:"pullSecrets,omitempty"`

	// selector picks nodes by names or by labels (not both). Unset selects every node.
	// +optional
	Selector *ImagePullJobNodeSelector `json:"selector,omitempty"`

	// podSelector picks the nodes running matching pods. It cannot be combined with selector.
	// +optional
	PodSelector *ImagePullJobPodSelector `json:"podSelector,omitempty"`

	// parallelism is how many nodes pull at once (default 1; 0 pauses the job). Percentages are not
	// accepted; a string must hold a whole number.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="parallelism must not be negative"
	// +kubebuilder:validation:Pattern=`^[0-9]+$`
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`

	// pullPolicy tunes each pull attempt. Unset uses the defaults.
	// +optional
	PullPolicy *PullPolicy `json:"pullPolicy,omitempty"`

	// completionPolicy says when the job is finished; its type defaults to Always.
	// +required
	CompletionPolicy CompletionPolicy `json:"completionPolicy"`

	// sandboxConfig adds labels and annotations to the CRI PullImage sandbox config.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`

	// imagePullPolicy is Always or IfNotPresent (the default).
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImagePullJobPodSelector selects pods; the image is pulled on their nodes.
type ImagePullJobPodSelector struct {
	metav1.LabelSelector `json:",inline"`
}

// ImagePullJobNodeSelector selects nodes by name or by label.
type ImagePullJobNodeSelector struct {
	// names lists the nodes to pull on.
	// +optional
	Names []string `json:"names,omitempty"`

	metav1.LabelSelector `json:",inline"`
}

// PullPolicy tunes a pull task.
type PullPolicy struct {
	// timeoutSeconds bounds one pull attempt (default 600).
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// backoffLimit is the number of retries before the task fails (default 3).
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// SandboxConfig is metadata passed to the CRI PullImage call, so runtimes and plugins can tell who pulls.
type SandboxConfig struct {
	// labels are added to the sandbox config's labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations are added to the sandbox config's annotations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ImagePullJobStatus is the observed state of an ImagePullJob.
type ImagePullJobStatus struct {
	// startTime is when the controller first picked the job up.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// desired is the number of pull tasks, usually the number of selected nodes.
	// +required
	Desired int32 `json:"desired"`

	// active is the number of pull tasks in progress.
	// +optional
	Active int32 `json:"active"`

	// succeeded is the number of pull tasks that succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// failed is the number of pull tasks that failed.
	// +optional
	Failed int32 `json:"failed"`

	// message summarises the job's state, for example why it failed.
	// +optional
	Message string `json:"message,omitempty"`

	// failedNodes lists the nodes where the pull failed.
	// +optional
	FailedNodes []string `json:"failedNodes,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="Nodes selected by the job."
// +kubebuilder:printcolumn:name="ACTIVE",type="integer",JSONPath=".status.active",description="Pull tasks in progress."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Pull tasks that succeeded."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Pull tasks that failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message",description="Status summary, for example why the job failed."

// ImagePullJob pre-pulls one image on a set of nodes.
type ImagePullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImagePullJobSpec   `json:"spec,omitempty"`
	Status ImagePullJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ImagePullJobList is a list of ImagePullJobs.
type ImagePullJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePullJob `json:"items"`
}

func init() {
	register(&ImagePullJob{}, &ImagePullJobList{})
}
