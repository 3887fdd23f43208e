package framework

import (
	"reflect"
	"testing"
)

func TestMissing(t *testing.T) {
	tests := []struct {
		name      string
		want, got any
		expect    []string
	}{
		{
			name:   "server adds fields",
			want:   map[string]any{"a": int64(1)},
			got:    map[string]any{"a": float64(1), "b": "x"},
			expect: nil,
		},
		{
			name:   "pruned field",
			want:   map[string]any{"spec": map[string]any{"keep": "x", "gone": "y"}},
			got:    map[string]any{"spec": map[string]any{"keep": "x"}},
			expect: []string{"spec.gone: missing (pruned or dropped)"},
		},
		{
			name:   "changed value and type",
			want:   map[string]any{"p": "5", "q": int64(2)},
			got:    map[string]any{"p": int64(5), "q": int64(3)},
			expect: []string{`p: sent "5", got 5`, "q: sent 2, got 3"},
		},
		{
			name:   "null means unset",
			want:   map[string]any{"policy": map[string]any{"type": nil}},
			got:    map[string]any{"policy": map[string]any{}},
			expect: nil,
		},
		{
			name:   "list shorter than sent",
			want:   map[string]any{"l": []any{"a", "b"}},
			got:    map[string]any{"l": []any{"a"}},
			expect: []string{"l: sent 2 items, got 1"},
		},
		{
			name:   "list item changed, items appended",
			want:   map[string]any{"l": []any{map[string]any{"n": "a"}}},
			got:    map[string]any{"l": []any{map[string]any{"n": "b"}, "extra"}},
			expect: []string{`l[0].n: sent "a", got "b"`},
		},
		{
			name:   "dotted keys are quoted",
			want:   map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "x"}},
			got:    map[string]any{"labels": map[string]any{}},
			expect: []string{`labels["app.kubernetes.io/name"]: missing (pruned or dropped)`},
		},
		{
			name:   "object replaced by scalar",
			want:   map[string]any{"o": map[string]any{"k": "v"}},
			got:    map[string]any{"o": "v"},
			expect: []string{`o: sent an object, got "v"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Missing(tt.want, tt.got); !reflect.DeepEqual(got, tt.expect) {
				t.Errorf("Missing() = %q, want %q", got, tt.expect)
			}
		})
	}
}

func TestComparedFields(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "K",
		"metadata":   map[string]any{"name": "n", "labels": map[string]any{"a": "b"}},
		"spec":       map[string]any{"x": int64(1)},
		"status":     map[string]any{"y": int64(2)},
	}
	want := map[string]any{
		"apiVersion": "v1",
		"kind":       "K",
		"metadata":   map[string]any{"labels": map[string]any{"a": "b"}},
		"spec":       map[string]any{"x": int64(1)},
	}
	if got := ComparedFields(obj); !reflect.DeepEqual(got, want) {
		t.Errorf("ComparedFields() = %v, want %v", got, want)
	}
}
