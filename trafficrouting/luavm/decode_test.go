package luavm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
)

var decodeSeeds = []string{
	`{}`, `{"a": "x", "b": "y"}`, `{"a": null, "b": "y"}`, `{"a": 1}`, `{"a": true}`, `{"a": {"b": [1, null, "x"]}}`,
	`{"a": []}`, `[]`, `[1, "x"]`, `"x"`, `1.5`, `-0`, `false`, `{"keep": "new", "\u2028<&>": "\u00e9"}`,
}

// targets are fresh outs of the directly filled types, empty, nil and holding entries, as a caller may pass.
func decodeTargets() map[string]func() any {
	return map[string]func() any{
		"nil map[string]any":      func() any { return new(map[string]any) },
		"map[string]any":          func() any { return &map[string]any{"keep": 1.0, "a": "old"} },
		"empty map[string]any":    func() any { return &map[string]any{} },
		"empty map[string]string": func() any { return &map[string]string{} },
		"nil map[string]string":   func() any { return new(map[string]string) },
		"map[string]string":       func() any { return &map[string]string{"keep": "1", "a": "old"} },
		"nil any":                 func() any { return new(any) },
		"any holding a map":       func() any { v := any(map[string]any{"keep": 1.0}); return &v },
		"any holding a pointer":   func() any { m := map[string]string{"keep": "1"}; v := any(&m); return &v },
		"nil *map[string]any":     func() any { return (*map[string]any)(nil) },
		"nil *map[string]string":  func() any { return (*map[string]string)(nil) },
		"nil *any":                func() any { return (*any)(nil) },
		"map[string]int":          func() any { return &map[string]int{} },
		"struct":                  func() any { return &struct{ A any }{} },
		"any holding a nil value": func() any { var m map[string]any; v := any(m); return &v },
	}
}

// TestDirectDecodingMatchesJSON checks that whenever a result is stored directly, out ends as the JSON round
// trip leaves it, and that out is untouched otherwise.
func TestDirectDecodingMatchesJSON(t *testing.T) {
	for _, doc := range append(decodeSeeds, "") {
		compareDecoding(t, doc)
	}
	v := map[string]any{"a": "x", "b": nil}
	for _, name := range []string{"nil map[string]any", "map[string]any", "nil map[string]string", "map[string]string",
		"nil any", "any holding a map"} {
		if !storeDirectly(v, decodeTargets()[name]()) {
			t.Errorf("%v into %s went through JSON", v, name)
		}
	}
}

func FuzzDecodeResult(f *testing.F) {
	for _, doc := range decodeSeeds {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			t.Skip()
		}
		compareDecoding(t, doc)
	})
}

// compareDecoding decodes doc's generic value, or nil (an empty table without a JSON origin) for "", into every
// target both ways.
func compareDecoding(t *testing.T, doc string) {
	t.Helper()
	var v any
	if doc != "" {
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range decodeTargets() {
		direct, viaJSON := target(), target()
		before := fmt.Sprintf("%#v", direct)
		if !storeDirectly(v, direct) {
			if after := fmt.Sprintf("%#v", direct); after != before {
				t.Errorf("%s into %s: refused but changed out from %s to %s", doc, name, before, after)
			}
			continue
		}
		if err := decodeJSON(v, viaJSON); err != nil {
			t.Errorf("%s into %s: stored directly, but JSON fails: %v", doc, name, err)
			continue
		}
		if diff := cmp.Diff(viaJSON, direct); diff != "" {
			t.Errorf("%s into %s (-JSON +direct):\n%s", doc, name, diff)
		}
	}
}

// TestInvalidUTF8GoesThroughJSON checks that strings JSON would alter still are.
func TestInvalidUTF8GoesThroughJSON(t *testing.T) {
	vm := New(Options{})
	script := `return {["k\255"] = "a\254b", ok = "é"}`
	want := map[string]string{"k\ufffd": "a\ufffdb", "ok": "é"}
	var strs map[string]string
	if err := vm.Eval(t.Context(), script, nil, &strs); err != nil || !cmp.Equal(want, strs) {
		t.Errorf("map[string]string: %q, %v", strs, err)
	}
	var anys map[string]any
	if err := vm.Eval(t.Context(), script, nil, &anys); err != nil || anys["k\ufffd"] != "a\ufffdb" {
		t.Errorf("map[string]any: %q, %v", anys, err)
	}
}

// resultScripts return objects, arrays, empty tables of each origin, members that fit only some targets,
// invalid UTF-8, and values that cannot be encoded.
var resultScripts = []string{
	`return {}`, `return {a = "x", b = "y"}`, `return {a = 1}`, `return {a = true}`, `return {a = {b = {1, "x"}}}`,
	`return {1, 2}`, `return {[1] = "x", y = "z"}`, `return {[1.5] = "x"}`, `return {[2] = "x"}`, `return obj`,
	`return obj.list`, `return obj.empty`, `return obj.emptyList`, `return {a = obj.empty, b = obj.emptyList}`,
	`return {["k\255"] = "v"}`, `return {k = "v\255"}`, `return {a = "x", f = pairs}`, `return {f = pairs, a = 1}`,
	`local t = {} t.t = t return t`, `return {a = string.rep("x", 100)}`, `return {a = 0/0}`, `return "x"`,
	`return 1`, `return {[true] = 1}`, `return {a = "x", n = 1, [3] = "y"}`,
}

// TestFilledMapsMatchTheGenericPath decodes each result into each target directly where fillMap takes it
// and through the generic value, and wants the same out and the same error.
func TestFilledMapsMatchTheGenericPath(t *testing.T) {
	vm := New(Options{})
	vm.limits.result = 100
	in := map[string]any{"a": "x", "list": []any{1}, "empty": map[string]any{}, "emptyList": []any{}}
	for _, script := range resultScripts {
		for name, target := range decodeTargets() {
			direct, generic := target(), target()
			directErr := decodeWith(t, vm, script, in, func(sb *sandbox, ret lua.LValue) error {
				return sb.decode(ret, direct)
			})
			genericErr := decodeWith(t, vm, script, in, func(sb *sandbox, ret lua.LValue) error {
				r, err := sb.result(ret)
				if err != nil {
					return err
				}
				return decodeResult(r, generic)
			})
			if fmt.Sprint(directErr) != fmt.Sprint(genericErr) {
				t.Errorf("%s into %s: error %v, the generic path's %v", script, name, directErr, genericErr)
			}
			if diff := cmp.Diff(generic, direct); diff != "" {
				t.Errorf("%s into %s (-generic +direct):\n%s", script, name, diff)
			}
		}
	}
}

// decodeWith runs script on in in a new state and decodes its result with decode.
func decodeWith(t *testing.T, vm *VM, script string, in any,
	decode func(sb *sandbox, ret lua.LValue) error) error {
	t.Helper()
	sb := newSandbox(vm.opts)
	defer sb.L.Close()
	proto, err := vm.cache.compile(script)
	if err != nil {
		t.Fatal(err)
	}
	env := sb.prepare(vm.limits)
	obj, err := sb.inputToLua(in)
	if err != nil {
		t.Fatal(err)
	}
	ret, _, err := vm.run(context.Background(), sb, proto, env, obj)
	if err != nil {
		t.Fatal(err)
	}
	return decode(sb, ret)
}
