package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// AdvancedCronJobKind is the kind name, used in owner references of the jobs it creates.
	AdvancedCronJobKind = "AdvancedCronJob"

	// DefaultAdvancedCronJobConcurrencyPolicy is what the defaulting webhook writes when concurrencyPolicy is unset.
	DefaultAdvancedCronJobConcurrencyPolicy = AllowConcurrent
	// DefaultSuccessfulJobsHistoryLimit is what the defaulting webhook writes when successfulJobsHistoryLimit is unset.
	DefaultSuccessfulJobsHistoryLimit = int32(3)
	// DefaultFailedJobsHistoryLimit is what the defaulting webhook writes when failedJobsHistoryLimit is unset.
	DefaultFailedJobsHistoryLimit = int32(1)
)

// AdvancedCronJobSpec is the desired state of an AdvancedCronJob.
type AdvancedCronJobSpec struct {
	// schedule is a cron expression, for example "*/1 * * * *".
	// +required
	Schedule string `json:"schedule"`

	// timeZone is a tz database name such as "Asia/Shanghai". Unset means the manager's local zone.
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// startingDeadlineSeconds is how late a missed run may still start; later runs count as failed.
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// concurrencyPolicy is Allow (the default: runs may overlap), Forbid (skip a run while the previous
	// one is active) or Replace (stop the active run and start the new one).
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// paused stops new runs from being created. The defaulting webhook sets it to false.
	// +optional
	Paused *bool `json:"paused,omitempty"`

	// successfulJobsHistoryLimit is how many finished successful jobs to keep (default 3).
	// +optional
	// +kubebuilder:validation:Minimum=0
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// failedJobsHistoryLimit is how many finished failed jobs to keep (default 1).
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`

	// template is the job created on each run: exactly one of jobTemplate, broadcastJobTemplate or
	// imageListPullJobTemplate.
	// +required
	Template CronJobTemplate `json:"template"`
}

// CronJobTemplate holds the kind of job an AdvancedCronJob creates.
type CronJobTemplate struct {
	// jobTemplate creates a batch/v1 Job per run. It is kept verbatim (no schema).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	JobTemplate *batchv1.JobTemplateSpec `json:"jobTemplate,omitempty"`

	// broadcastJobTemplate creates a BroadcastJob per run.
	// +optional
	BroadcastJobTemplate *BroadcastJobTemplateSpec `json:"broadcastJobTemplate,omitempty"`

	// imageListPullJobTemplate creates an ImageListPullJob per run, which pre-pulls its images on the
	// selected nodes. Its completionPolicy.type must be Always (or unset, which defaults to Always).
	// +optional
	ImageListPullJobTemplate *ImageListPullJobTemplateSpec `json:"imageListPullJobTemplate,omitempty"`
}

// TemplateKind names the kind of job an AdvancedCronJob creates; it is reported in status.type.
type TemplateKind string

const (
	// JobTemplate means the AdvancedCronJob creates batch/v1 Jobs.
	JobTemplate TemplateKind = "Job"
	// BroadcastJobTemplate means the AdvancedCronJob creates BroadcastJobs.
	BroadcastJobTemplate TemplateKind = "BroadcastJob"
	// ImageListPullJobTemplate means the AdvancedCronJob creates ImageListPullJobs.
	ImageListPullJobTemplate TemplateKind = "ImageListPullJob"
)

// BroadcastJobTemplateSpec is the BroadcastJob an AdvancedCronJob creates on each run.
type BroadcastJobTemplateSpec struct {
	// metadata is copied onto each created BroadcastJob. Its content is kept as written, so that labels
	// and annotations reach the created jobs.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the created BroadcastJob's spec.
	// +optional
	Spec BroadcastJobSpec `json:"spec,omitempty"`
}

// ImageListPullJobTemplateSpec is the ImageListPullJob an AdvancedCronJob creates on each run.
type ImageListPullJobTemplateSpec struct {
	// metadata is copied onto each created ImageListPullJob. Its content is kept as written, so that labels
	// and annotations reach the created jobs.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the created ImageListPullJob's spec.
	// +optional
	Spec ImageListPullJobSpec `json:"spec,omitempty"`
}

// ConcurrencyPolicy says how overlapping runs are handled.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

const (
	// AllowConcurrent lets runs overlap.
	AllowConcurrent ConcurrencyPolicy = "Allow"
	// ForbidConcurrent skips a run while the previous one is still active.
	ForbidConcurrent ConcurrencyPolicy = "Forbid"
	// ReplaceConcurrent stops the active run and starts the new one.
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// AdvancedCronJobStatus is the observed state of an AdvancedCronJob.
type AdvancedCronJobStatus struct {
	// type is the kind of job the template creates: Job, BroadcastJob or ImageListPullJob.
	// +optional
	Type TemplateKind `json:"type,omitempty"`

	// active references the jobs currently running.
	// +optional
	Active []corev1.ObjectReference `json:"active,omitempty"`

	// lastScheduleTime is when a job was last created successfully.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=acj
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Schedule",type="string",JSONPath=".spec.schedule",description="Cron schedule."
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".status.type",description="Kind of job created."
// +kubebuilder:printcolumn:name="LastScheduleTime",type="date",JSONPath=".status.lastScheduleTime",description="When a job was last created."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// AdvancedCronJob creates Jobs, BroadcastJobs or ImageListPullJobs on a cron schedule.
type AdvancedCronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AdvancedCronJobSpec   `json:"spec,omitempty"`
	Status AdvancedCronJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AdvancedCronJobList is a list of AdvancedCronJobs.
type AdvancedCronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AdvancedCronJob `json:"items"`
}

func init() {
	register(&AdvancedCronJob{}, &AdvancedCronJobList{})
}
