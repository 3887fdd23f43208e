package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// normalize is what a JSON value looks like after a trip through Lua: object members that are null vanish
// (a Lua table cannot hold nil) and so do trailing nulls of arrays (they do not extend a sequence).
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e != nil {
				out[k] = normalize(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(e)
		}
		for len(out) > 0 && out[len(out)-1] == nil {
			out = out[:len(out)-1]
		}
		return out
	default:
		return v
	}
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestConversionRoundTrip(t *testing.T) {
	vm := New(Options{})
	cases := map[string]string{
		"scalars":           `{"s": "x", "n": -3, "f": 2.5, "t": true, "false": false, "big": 1e300, "tiny": 1e-300}`,
		"nested":            `{"a": {"b": [1, 2.5, "x", true, false, {"c": [[], {}]}]}, "e": {}, "l": []}`,
		"null members":      `{"a": null, "b": {"c": null, "d": 1}}`,
		"array with a hole": `{"a": [1, null, 3]}`,
		"trailing nulls":    `{"a": [1, null, null], "b": [null]}`,
		"numeric keys":      `{"1": "one", "2": "two"}`,
		"unicode":           `{"ключ": "значение ✓", "": "empty key", "esc": "<a&b>\n\t\"q\""}`,
		"array of objects":  `{"routes": [{"destination": {"host": "svc"}, "weight": 100}]}`,
		"empty object":      `{}`,
	}
	scripts := map[string]string{
		"direct":       "return obj",
		"through json": "return json.decode(json.encode(obj))",
	}
	for name, in := range cases {
		for how, script := range scripts {
			t.Run(name+"/"+how, func(t *testing.T) {
				input := mustJSON(t, in)
				out, err := evalAny(vm, script, input)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(normalize(input), out); diff != "" {
					t.Errorf("round trip (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func FuzzConvert(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a": [1, null, {"b": []}], "c": {"d": "e"}}`, `{"1": [[], [[]]], "x": 1e-7, "y": true}`,
		`{"s": "\u00ff\ud800", "n": -0, "arr": [null, null, 1]}`,
	} {
		f.Add(seed)
	}
	vm := New(Options{})
	f.Fuzz(func(t *testing.T, in string) {
		var input map[string]any
		if json.Unmarshal([]byte(in), &input) != nil || input == nil || depth(input) >= maxNesting {
			t.Skip()
		}
		for _, script := range []string{"return obj", "return json.decode(json.encode(obj))"} {
			var out map[string]any
			if err := vm.Eval(context.Background(), script, input, &out); err != nil {
				t.Fatalf("%s: %v", script, err)
			}
			if diff := cmp.Diff(normalize(input), any(out)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", script, diff)
			}
		}
	})
}

func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	case []any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	default:
		return 0
	}
	return d + 1
}

func TestEmptyTables(t *testing.T) {
	vm := New(Options{})
	ctx := context.Background()
	t.Run("top level fits a map and a slice", func(t *testing.T) {
		var m map[string]string
		var s []string
		if err := vm.Eval(ctx, "return {}", nil, &m); err != nil || m == nil || len(m) != 0 {
			t.Errorf("map: %v %#v", err, m)
		}
		if err := vm.Eval(ctx, "return {}", nil, &s); err != nil || s == nil || len(s) != 0 {
			t.Errorf("slice: %v %#v", err, s)
		}
	})
	t.Run("nested fits a map and a slice", func(t *testing.T) {
		var out struct {
			List []string         `json:"list"`
			Map  map[string]int   `json:"map"`
			Any  map[string]any   `json:"any"`
			Objs []map[string]any `json:"objs"`
		}
		script := "return {list = {}, map = {}, any = {x = {}}, objs = {{}}}"
		if err := vm.Eval(ctx, script, nil, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.List) != 0 || len(out.Map) != 0 || out.Any["x"] != nil || len(out.Objs) != 1 {
			t.Errorf("got %#v", out)
		}
	})
	t.Run("empty JSON containers keep their kind", func(t *testing.T) {
		out, err := evalAny(vm, "return {l = obj.l, o = obj.o, el = json.encode(obj.l), eo = json.encode(obj.o)}",
			map[string]any{"l": []any{}, "o": map[string]any{}})
		want := map[string]any{"l": []any{}, "o": map[string]any{}, "el": "[]", "eo": "{}"}
		if diff := cmp.Diff(want, out); err != nil || diff != "" {
			t.Errorf("%v (-want +got):\n%s", err, diff)
		}
	})
}

func TestJSONModule(t *testing.T) {
	vm := New(Options{})
	cases := []struct {
		script string
		want   any
	}{
		{`return {s = json.encode({})}`, "{}"},
		{`return {s = json.encode({1, 2, 3})}`, "[1,2,3]"},
		{`return {s = json.encode({a = 1, b = {c = "x"}})}`, `{"a":1,"b":{"c":"x"}}`},
		{`return {s = json.encode({1, nil, 3})}`, "[1,null,3]"},
		{`return {s = json.encode({[1] = 1, [100] = 2})}`, `{"1":1,"100":2}`},
		{`return {s = json.encode({1, a = 2})}`, `{"1":1,"a":2}`},
		{`return {s = json.encode({[1.5] = true})}`, `{"1.5":true}`},
		{`return {s = json.encode("<a&b>")}`, `"<a&b>"`},
		{`return {s = json.encode(2^53)}`, "9007199254740992"},
		{`return {s = json.decode('{"a":[1,"x",null,true]}').a[2]}`, "x"},
		{`return {s = #json.decode('[1,2,3]')}`, 3.0},
		{`return {s = json.decode('null') == nil}`, true},
		{`return {s = json.encode(json.decode('{"b":[],"a":{}}'))}`, `{"a":{},"b":[]}`},
	}
	for _, tc := range cases {
		out, err := evalAny(vm, tc.script, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.script, err)
			continue
		}
		if got := out.(map[string]any)["s"]; got != tc.want {
			t.Errorf("%s = %v, want %v", tc.script, got, tc.want)
		}
	}
	for _, script := range []string{
		`return json.decode("{")`, `return json.encode({f = pairs})`, `return json.encode(0/0)`,
		`return json.encode({[true] = 1})`, `local t = {} t[1] = t return json.encode(t)`,
	} {
		if _, err := evalAny(vm, script, nil); !errors.Is(err, ErrScript) || !strings.Contains(err.Error(), "json.") {
			t.Errorf("%s: error %v, want a json error", script, err)
		}
	}
}

// TestTableKeys converts tables whose keys sit in the array part, the hash part or both, including keys
// removed again, which stay in the hash part's order.
func TestTableKeys(t *testing.T) {
	vm := New(Options{})
	cases := []struct {
		script string
		want   any
	}{
		{`return {1, 2, [0] = "z", [-1] = "m", [1.5] = "f", [2^40] = "b", x = "s"}`,
			map[string]any{"1": 1.0, "2": 2.0, "0": "z", "-1": "m", "1.5": "f", "1099511627776": "b", "x": "s"}},
		{`local t = {a = 1, b = 2, c = 3} t.b = nil t.d = 4 return t`, map[string]any{"a": 1.0, "c": 3.0, "d": 4.0}},
		{`local t = {1, 2, 3} t[3] = nil t.k = nil return t`, []any{1.0, 2.0}},
		{`local t = {1, 2} t[1], t[2] = nil, nil t.k = "v" return t`, map[string]any{"k": "v"}},
		{`local t = {1, nil, 3} t.k = "v" return t`, map[string]any{"1": 1.0, "3": 3.0, "k": "v"}},
		{`return {[1] = 1, [3] = 3}`, []any{1.0, nil, 3.0}},
		{`local t = {} t[2^40] = 1 t[2^40] = nil t[1] = "a" return t`, []any{"a"}},
		{`local t = {} t.x = 1 t.x = nil return {t = t}`, map[string]any{"t": nil}},
		{`local t = {n = {1, {2, {k = {}}}}} return t`, map[string]any{"n": []any{1.0, []any{2.0, map[string]any{"k": nil}}}}},
	}
	for _, tc := range cases {
		out, err := evalAny(vm, tc.script, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.script, err)
			continue
		}
		if diff := cmp.Diff(tc.want, out); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.script, diff)
		}
	}
	for _, script := range []string{`return {[true] = 1}`, `return {1, [{}] = 2}`} {
		if _, err := evalAny(vm, script, nil); err == nil || !strings.Contains(err.Error(), "table key of type") {
			t.Errorf("%s: %v", script, err)
		}
	}
}
