package admission

import (
	"encoding/json"
	"fmt"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// The two served versions share their JSON: v1alpha1 is v1beta1 without the fields added since, and the CRD
// converts between them by changing apiVersion only. Reading one as the other is a JSON round trip; fields
// v1alpha1 lacks are dropped on the way back, as the API server would prune them.

// FromV1alpha1 reads a v1alpha1 set as the v1beta1 set it is.
func FromV1alpha1(in *kruiseappsv1alpha1.StatefulSet) (*kruiseappsv1beta1.StatefulSet, error) {
	out := &kruiseappsv1beta1.StatefulSet{}
	return out, roundTrip(in, out)
}

// ToV1alpha1 writes a v1beta1 set in the v1alpha1 shape, dropping the fields v1alpha1 lacks.
func ToV1alpha1(in *kruiseappsv1beta1.StatefulSet) (*kruiseappsv1alpha1.StatefulSet, error) {
	out := &kruiseappsv1alpha1.StatefulSet{}
	if err := roundTrip(in, out); err != nil {
		return nil, err
	}
	out.APIVersion = kruiseappsv1alpha1.GroupVersion.String()
	return out, nil
}

func roundTrip(in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding the StatefulSet: %w", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decoding the StatefulSet: %w", err)
	}
	return nil
}
