package plan

import (
	"encoding/json"
	"fmt"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// RevisionData is what a UnitedDeployment's ControllerRevision records: its spec.template, as a patch that
// replaces the template when applied (the shape of upstream's revisions).
func RevisionData(ud *kruiseappsv1alpha1.UnitedDeployment) ([]byte, error) {
	raw, err := json.Marshal(ud.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("encoding spec.template: %w", err)
	}
	template := map[string]any{}
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, fmt.Errorf("decoding spec.template: %w", err)
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}
