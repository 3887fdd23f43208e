package luavm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
)

// recycleInput has objects, arrays, empty ones of both, nulls in an array and a map with several tables, whose
// iteration order must not decide the order tables are built in; viaJSON adds a value that sends the whole
// input through its JSON.
func recycleInput(viaJSON bool) map[string]any {
	in := map[string]any{
		"a":          map[string]any{"b": []any{1, 2, 3}, "c": "x"},
		"list":       []any{map[string]any{"k": 1}, map[string]any{"k": 2}},
		"empty":      map[string]any{},
		"emptyList":  []any{},
		"holes":      []any{nil, "y", nil},
		"s":          "str",
		"byName":     map[string]any{"p": map[string]any{"v": 1}, "q": map[string]any{"v": 2}, "r": []any{"z"}},
		"typed":      map[string]string{"t": "u"},
		"deeperList": []any{[]any{[]any{"d"}}},
	}
	if viaJSON {
		in["marshaler"] = marshalsItself{}
	}
	return in
}

// objMutations each change obj's tables in a way the next call's obj must not show.
var objMutations = []string{
	"obj.a.c = nil",
	"obj.a.c = 'changed'",
	"obj.a.new = 1",
	"obj.a.new = 1 obj.a.new = nil",
	"obj.a[1] = true",
	"obj.a[1] = true obj.a[1] = nil",
	"obj.a[true] = 1 obj.a[true] = nil",
	"table.insert(obj.a.b, 4)",
	"table.insert(obj.a.b, 1, 0)",
	"table.remove(obj.a.b)",
	"table.remove(obj.a.b, 1) table.remove(obj.a.b)",
	"obj.a.b[2] = nil",
	"obj.a.b.x = 1",
	"obj.a.b.x = 1 obj.a.b.x = nil",
	"obj.a.b[10] = 1",
	"obj.a.b[0] = 1",
	"obj.a.b[1.5] = 1",
	"table.sort(obj.a.b, function(x, y) return x > y end)",
	"obj.empty.x = nil",
	"obj.empty.x = 1",
	"obj.empty[true] = 1",
	"table.insert(obj.emptyList, 1)",
	"obj.emptyList.x = nil",
	"obj.holes[1] = 'filled' obj.holes[4] = 'more'",
	"setmetatable(obj.a, {__index = function() return 1 end})",
	"setmetatable(obj.a, nil)",
	"obj.list[1], obj.list[2] = obj.list[2], obj.list[1]",
	"obj.a.b = obj.list",
	"obj.list[1].k = obj.list",
	"for k in pairs(obj.a) do obj.a[k] = nil end",
	"for k in pairs(obj) do obj[k] = nil end",
	"rawset(obj.byName.p, 'v', nil)",
	"obj.byName.p, obj.byName.q = obj.byName.q, obj.byName.p",
	"obj.typed.t = {}",
	"obj.deeperList[1][1][1] = {}",
	"obj.a = nil",
	"obj = nil",
}

// TestRecycledInputIsPristine makes each change to obj in one call; the next call's obj, built from the
// previous one's tables where they allow, must be what a new conversion makes, down to the key lists and
// array parts gopher-lua keeps.
func TestRecycledInputIsPristine(t *testing.T) {
	vm := New(Options{})
	for _, viaJSON := range []bool{false, true} {
		for _, m := range objMutations {
			t.Run(fmt.Sprintf("%s/json=%v", m, viaJSON), func(t *testing.T) {
				sb := newSandbox(vm.opts)
				defer sb.L.Close()
				for range 2 {
					evalWith(t, vm, sb, m+"\nreturn {}", recycleInput(viaJSON))
					checkFresh(t, sb, recycleInput(viaJSON))
				}
			})
		}
	}
}

// TestInputsOfOtherShapes alternates inputs that share some tables' shapes and not others'.
func TestInputsOfOtherShapes(t *testing.T) {
	vm := New(Options{})
	sb := newSandbox(vm.opts)
	defer sb.L.Close()
	inputs := []any{
		recycleInput(false),
		map[string]any{"a": map[string]any{"b": []any{1}, "c": "x", "d": true}},
		map[string]any{"a": []any{map[string]any{"c": "x"}}},
		[]any{recycleInput(false), recycleInput(true)},
		"scalar",
		map[string]any{"a": map[string]any{"b": []any{1, 2, 3}, "c": "x"}},
		recycleInput(true),
		recycleInput(false),
	}
	for i := range 3 * len(inputs) {
		in := inputs[i%len(inputs)]
		evalWith(t, vm, sb, "obj = nil return {}", in)
		checkFresh(t, sb, in)
	}
}

// TestSameShapeReusesTables checks that recycling happens: obj of the same shape is built from the same
// tables, whichever order Go iterates the maps in.
func TestSameShapeReusesTables(t *testing.T) {
	sb := newSandbox(New(Options{}).opts)
	defer sb.L.Close()
	for _, viaJSON := range []bool{false, true} {
		sb.prepare(defaultLimits)
		first := tablesOf(t, sb, recycleInput(viaJSON))
		for range 5 {
			sb.release()
			sb.prepare(defaultLimits)
			if diff := cmp.Diff(first, tablesOf(t, sb, recycleInput(viaJSON))); diff != "" {
				t.Fatalf("json=%v: tables not reused (-first +now):\n%s", viaJSON, diff)
			}
		}
		sb.release()
	}
}

// TestDecodedTablesAreNew checks that json.decode inside a script never hands out obj's tables.
func TestDecodedTablesAreNew(t *testing.T) {
	vm := New(Options{})
	in := map[string]any{"a": map[string]any{"b": 1}}
	script := `local d = json.decode('{"a": {"b": 1}}') return {distinct = d ~= obj and d.a ~= obj.a}`
	for range 3 {
		var out map[string]any
		if err := vm.Eval(context.Background(), script, in, &out); err != nil || out["distinct"] != true {
			t.Fatalf("%v, %v", out, err)
		}
	}
}

// evalWith runs script in sb on input as Eval would and readies sb for the next call.
func evalWith(t *testing.T, vm *VM, sb *sandbox, script string, input any) {
	t.Helper()
	proto, err := vm.cache.compile(script)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if reuse, err := vm.evalIn(context.Background(), sb, proto, input, &out); err != nil || !reuse {
		t.Fatalf("reuse %v, error %v", reuse, err)
	}
	sb.release()
}

// checkFresh builds obj from input as a call does and compares it with tables made anew through JSON.
func checkFresh(t *testing.T, sb *sandbox, input any) {
	t.Helper()
	sb.prepare(defaultLimits)
	got, err := sb.inputToLua(input)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sb.jsonToLua(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := luaDiff(want, got, "obj"); diff != "" {
		t.Fatal(diff)
	}
	if diff := layoutDiff(want, got, "obj"); diff != "" {
		t.Fatal(diff)
	}
	sb.release()
}

// layoutDiff compares the lengths of the key lists and array parts, which luaDiff cannot see through next
// when a key was removed.
func layoutDiff(want, got lua.LValue, path string) string {
	wt, ok := want.(*lua.LTable)
	if !ok {
		return ""
	}
	gt := got.(*lua.LTable)
	wk, wa, _ := tableSizes(wt)
	gk, ga, _ := tableSizes(gt)
	if wk != gk || wa != ga {
		return fmt.Sprintf("%s: %d keys and %d in the array part, want %d and %d", path, gk, ga, wk, wa)
	}
	for k, v := wt.Next(lua.LNil); k != lua.LNil; k, v = wt.Next(k) {
		if diff := layoutDiff(v, gt.RawGet(k), fmt.Sprintf("%s.%v", path, k)); diff != "" {
			return diff
		}
	}
	return ""
}

// tablesOf builds obj from input and lists its tables by path.
func tablesOf(t *testing.T, sb *sandbox, input any) map[string]string {
	t.Helper()
	v, err := sb.inputToLua(input)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(v lua.LValue, path string)
	walk = func(v lua.LValue, path string) {
		tb, ok := v.(*lua.LTable)
		if !ok {
			return
		}
		out[path] = fmt.Sprintf("%p", tb)
		for k, e := tb.Next(lua.LNil); k != lua.LNil; k, e = tb.Next(k) {
			walk(e, fmt.Sprintf("%s.%v", path, k))
		}
	}
	walk(v, "obj")
	return out
}
