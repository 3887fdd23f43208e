package custom

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// TestConfigOfMatchesJSON holds configOf to what json.Unmarshal makes of the result's JSON, on the direct path and
// on the results that leave it.
func TestConfigOfMatchesJSON(t *testing.T) {
	cases := map[string]map[string]any{
		"empty":                {},
		"usual":                {"spec": map[string]any{"http": []any{map[string]any{"weight": 30.0}}}, "labels": map[string]any{"a": "b"}, "annotations": map[string]any{"x": "y"}},
		"empty objects":        {"spec": map[string]any{}, "labels": map[string]any{}},
		"nulls":                {"spec": nil, "labels": nil, "annotations": map[string]any{"x": nil}},
		"other keys ignored":   {"spec": map[string]any{"a": 1.0}, "status": "x"},
		"key of another case":  {"Spec": map[string]any{"a": 1.0}, "LABELS": map[string]any{"k": "v"}},
		"both cases":           {"spec": map[string]any{"a": 1.0}, "Spec": map[string]any{"b": 2.0}},
		"number label":         {"labels": map[string]any{"a": 1.0}},
		"array spec":           {"spec": []any{"a"}},
		"string annotations":   {"annotations": "x"},
		"object in annotation": {"annotations": map[string]any{"a": map[string]any{}}},
	}
	for name, result := range cases {
		t.Run(name, func(t *testing.T) {
			var want config
			data, err := json.Marshal(result)
			if err != nil {
				t.Fatal(err)
			}
			wantErr := json.Unmarshal(data, &want)
			got, err := configOf(result)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, json.Unmarshal's %v", err, wantErr)
			}
			if err != nil {
				if !errors.Is(err, luavm.ErrScript) {
					t.Errorf("error %v does not wrap luavm.ErrScript", err)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("configOf = %#v, json.Unmarshal made %#v", got, want)
			}
		})
	}
}

// TestConfigDirectCoversTheUsualResult keeps the common result off the JSON round trip.
func TestConfigDirectCoversTheUsualResult(t *testing.T) {
	result := map[string]any{"spec": map[string]any{"hosts": []any{"a"}}, "labels": map[string]any{"a": "b"},
		"annotations": map[string]any{"x": nil}}
	c, ok := configDirect(result)
	if !ok {
		t.Fatal("the usual result took the JSON round trip")
	}
	if c.Annotations["x"] != "" || c.Labels["a"] != "b" || c.Spec["hosts"] == nil {
		t.Errorf("configDirect = %#v", c)
	}
}
