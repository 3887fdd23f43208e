package promoted

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=bcj
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desired",description="Pods wanted, usually one per eligible node."
// +kubebuilder:printcolumn:name="Active",type="integer",JSONPath=".status.active",description="Pods running."
// +kubebuilder:printcolumn:name="Succeeded",type="integer",JSONPath=".status.succeeded",description="Pods that succeeded."
// +kubebuilder:printcolumn:name="Failed",type="integer",JSONPath=".status.failed",description="Pods that failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// BroadcastJob runs a pod to completion on every eligible node.
type BroadcastJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   kruiseappsv1alpha1.BroadcastJobSpec   `json:"spec,omitempty"`
	Status kruiseappsv1alpha1.BroadcastJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="Nodes selected by the job."
// +kubebuilder:printcolumn:name="ACTIVE",type="integer",JSONPath=".status.active",description="Pull tasks in progress."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Pull tasks that succeeded."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Pull tasks that failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."
// (v1beta1 has no MESSAGE column: upstream 1.9 dropped it.)

// ImagePullJob pre-pulls one image on a set of nodes.
type ImagePullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   kruiseappsv1alpha1.ImagePullJobSpec   `json:"spec,omitempty"`
	Status kruiseappsv1alpha1.ImagePullJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="ImagePullJobs wanted."
// +kubebuilder:printcolumn:name="SUCCEEDED",type="integer",JSONPath=".status.succeeded",description="ImagePullJobs that succeeded on every node."
// +kubebuilder:printcolumn:name="COMPLETED",type="integer",JSONPath=".status.completed",description="ImagePullJobs that finished."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// ImageListPullJob pre-pulls a list of images on a set of nodes.
type ImageListPullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   kruiseappsv1alpha1.ImageListPullJobSpec   `json:"spec,omitempty"`
	Status kruiseappsv1alpha1.ImageListPullJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=acj
// +kubebuilder:printcolumn:name="Schedule",type="string",JSONPath=".spec.schedule",description="Cron schedule."
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".status.type",description="Kind of job created."
// +kubebuilder:printcolumn:name="LastScheduleTime",type="date",JSONPath=".status.lastScheduleTime",description="When a job was last created."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."
// (Flotilla's v1alpha1 has v1beta1's imageListPullJobTemplate already, so the two are one shape.)

// AdvancedCronJob creates Jobs, BroadcastJobs or ImageListPullJobs on a cron schedule.
type AdvancedCronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   kruiseappsv1alpha1.AdvancedCronJobSpec   `json:"spec,omitempty"`
	Status kruiseappsv1alpha1.AdvancedCronJobStatus `json:"status,omitempty"`
}
