package podtemplate

import (
	"encoding/json"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FirstNonImageDifference finds the first field of two pod specs that differs, container images aside, in
// the specs' JSON (object keys in order), as a path under p; nil when only images (or nothing) differ. The
// InPlaceOnly checks of the workload webhooks name it: only an image change can be made in place.
func FirstNonImageDifference(oldS, newS *corev1.PodSpec, p *field.Path) *field.Path {
	o := oldS.DeepCopy()
	if len(o.Containers) == len(newS.Containers) {
		for i := range o.Containers {
			o.Containers[i].Image = newS.Containers[i].Image
		}
	}
	before, errBefore := toGeneric(o)
	after, errAfter := toGeneric(newS)
	if errBefore != nil || errAfter != nil {
		return p
	}
	return firstDifference(before, after, p)
}

func toGeneric(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(raw, &out)
}

// firstDifference walks two decoded JSON values and returns the path of the first difference, nil if
// they are equal. A list of another length differs as a whole.
func firstDifference(a, b any, p *field.Path) *field.Path {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return p
		}
		for _, k := range unionKeys(av, bv) {
			if d := firstDifference(av[k], bv[k], p.Child(k)); d != nil {
				return d
			}
		}
		return nil
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return p
		}
		for i := range av {
			if d := firstDifference(av[i], bv[i], p.Index(i)); d != nil {
				return d
			}
		}
		return nil
	default:
		if reflect.DeepEqual(a, b) {
			return nil
		}
		return p
	}
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
