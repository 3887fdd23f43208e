package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnalysisTemplateSpec is a reusable set of metrics and the arguments they read.
type AnalysisTemplateSpec struct {
	// args are the arguments the metrics read as {{args.<name>}}; a run supplies or overrides their values.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Args []Argument `json:"args,omitempty"`

	// metrics are measured side by side by every run of the template.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +required
	Metrics []Metric `json:"metrics"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// AnalysisTemplate is a namespaced set of metrics that AnalysisRuns of its namespace measure.
type AnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template's metrics and arguments.
	// +required
	Spec AnalysisTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// AnalysisTemplateList contains a list of AnalysisTemplate.
type AnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AnalysisTemplate `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// ClusterAnalysisTemplate is an AnalysisTemplate that AnalysisRuns of every namespace may use; the Secrets its
// metrics and arguments name are read from the run's namespace.
type ClusterAnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template's metrics and arguments.
	// +required
	Spec AnalysisTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ClusterAnalysisTemplateList contains a list of ClusterAnalysisTemplate.
type ClusterAnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterAnalysisTemplate `json:"items"`
}

func init() {
	register(&AnalysisTemplate{}, &AnalysisTemplateList{}, &ClusterAnalysisTemplate{}, &ClusterAnalysisTemplateList{})
}
