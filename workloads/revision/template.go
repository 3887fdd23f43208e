package revision

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TemplateOf decodes the pod template a revision built by TemplatePatch records ({"spec":{"template":{...}}}).
func TemplateOf(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	if cr == nil {
		return nil, ErrNilRevision
	}
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("decode revision %s: %w", cr.Name, err)
	}
	return &data.Spec.Template, nil
}
