package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ConversionDataAnnotation carries, as JSON, what the target version of a conversion cannot express:
// on a v1alpha1 object the v1beta1-only data (blue-green strategy and status, path and query-parameter
// matches, ...), on a v1beta1 object the v1alpha1-only data (the deprecated spec.rolloutID). Converting
// back restores that data and removes the annotation, so an old client that reads and writes back an
// object does not destroy what it cannot see. A missing or unreadable annotation is ignored.
const ConversionDataAnnotation = "rollouts.flotilla.dev/conversion-data"

var errNilObject = errors.New("conversion of a nil object")

// annotationValue is the state of one annotation key: absent, or present with a value.
// +kubebuilder:object:generate=false
type annotationValue struct {
	Value   string `json:"value,omitempty"`
	Present bool   `json:"present,omitempty"`
}

// annotationChange records an annotation a conversion wrote over the object's own value, so that the
// way back can restore the original as long as the client left the written value alone.
// +kubebuilder:object:generate=false
type annotationChange struct {
	Key      string          `json:"key"`
	Original annotationValue `json:"original"`
	Written  annotationValue `json:"written"`
}

func present(value string) annotationValue { return annotationValue{Value: value, Present: true} }

func annotationOf(annotations map[string]string, key string) annotationValue {
	value, ok := annotations[key]
	return annotationValue{Value: value, Present: ok}
}

func setAnnotation(meta *metav1.ObjectMeta, key string, value annotationValue) {
	if !value.Present {
		delete(meta.Annotations, key)
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = value.Value
}

// writeTracked sets an annotation of a converted object and records the value it replaced.
func writeTracked(meta *metav1.ObjectMeta, key string, want annotationValue, changes *[]annotationChange) {
	original := annotationOf(meta.Annotations, key)
	if original == want {
		return
	}
	setAnnotation(meta, key, want)
	*changes = append(*changes, annotationChange{Key: key, Original: original, Written: want})
}

// restoreTracked puts back the values writeTracked replaced, except where the client changed what was
// written: then the client's value is what it means.
func restoreTracked(src map[string]string, dst *metav1.ObjectMeta, changes []annotationChange) {
	for _, change := range changes {
		if annotationOf(src, change.Key) == change.Written {
			setAnnotation(dst, change.Key, change.Original)
		}
	}
}

// loadConversionData decodes the conversion-data annotation; a missing or unreadable annotation gives the
// zero value, so a hand-edited annotation can never make an object unconvertible.
func loadConversionData[T any](annotations map[string]string) T {
	var data T
	raw, ok := annotations[ConversionDataAnnotation]
	if !ok {
		return data
	}
	var decoded T
	if err := json.Unmarshal([]byte(raw), &decoded); err != nil {
		return data
	}
	return decoded
}

// storeConversionData replaces the conversion-data annotation of meta with data, or removes it when
// there is nothing to carry.
func storeConversionData(meta *metav1.ObjectMeta, data any, empty bool) error {
	delete(meta.Annotations, ConversionDataAnnotation)
	if empty {
		return nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", ConversionDataAnnotation, err)
	}
	setAnnotation(meta, ConversionDataAnnotation, present(string(raw)))
	return nil
}

// deepCopier is a pointer to a generated API type.
type deepCopier[T any] interface {
	*T
	DeepCopyInto(out *T)
}

// copySlice deep-copies a slice of API values, keeping nil and empty apart.
func copySlice[T any, P deepCopier[T]](src []T) []T {
	if src == nil {
		return nil
	}
	dst := make([]T, len(src))
	for i := range src {
		P(&src[i]).DeepCopyInto(&dst[i])
	}
	return dst
}

// convertSlice converts every element of a slice, keeping nil and empty apart.
func convertSlice[S, D any](src []S, convert func(*S) D) []D {
	if src == nil {
		return nil
	}
	dst := make([]D, len(src))
	for i := range src {
		dst[i] = convert(&src[i])
	}
	return dst
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyString(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyIntOrString(p *intstr.IntOrString) *intstr.IntOrString {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyTime(p *metav1.Time) *metav1.Time {
	if p == nil {
		return nil
	}
	return p.DeepCopy()
}

func equalInt32(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func copyStringMap(m map[string]string) map[string]string { return maps.Clone(m) }
