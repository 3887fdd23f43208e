package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
)

// probeScript reports what a script can observe of the libraries, the built-in types' metatables, the JSON
// markers and the globals.
const probeScript = `
local function keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = tostring(k) end
  table.sort(out)
  return out
end
local function fails(f) return not pcall(f) end
local n, b = 1, true
return {
  keys = {_G = keys(_G), string = keys(string), table = keys(table), math = keys(math), json = keys(json),
    objectMT = keys(getmetatable(obj)), arrayMT = keys(getmetatable(obj.list))},
  markers = {getmetatable(getmetatable(obj)) == nil, getmetatable(getmetatable(obj.list)) == nil,
    #getmetatable(obj) + #getmetatable(obj.list), getmetatable(obj) ~= getmetatable(obj.list),
    tostring(next(getmetatable(obj))), tostring(next(getmetatable(obj.list)))},
  -- next from a key the table does not hold starts over in a pristine table, so a key another call added and
  -- removed would show here.
  nextAfterRemoved = {tostring(next(string, "added")), tostring(next(_G, "added")), tostring(next(string, true)),
    tostring(next(string, 2^40))},
  libraryMetatables = getmetatable(_G) == nil and getmetatable(string) == nil and getmetatable(table) == nil
    and getmetatable(math) == nil and getmetatable(json) == nil,
  stringMT = getmetatable("") == string and string.__index == string,
  stringArray = #string + #table + #math + #json,
  methods = {("a"):upper(), ("ab"):rep(2), ("x"):len(), string.format("%d", 7)},
  math = {math.pi, math.floor(1.5)},
  table = (function() local t = {} table.insert(t, 1) return #t end)(),
  json = json.encode(obj),
  builtinIndexFails = {fails(function() return n.x end), fails(function() return b.x end),
    fails(function() return pairs.x end), fails(function() return ("x") + 1 end)},
  objectFields = {obj.missing == nil, obj.list.missing == nil},
  global = counter == nil,
}`

// mutations each change something probeScript can see.
var mutations = []string{
	"counter = 1",
	"string.added = 1 string.added = nil",
	"_G.added = 1 _G.added = nil",
	"string[true] = 1 string[true] = nil",
	"string[2^40] = 1 string[2^40] = nil",
	"string.rep = nil",
	"string.x = 'x'",
	"string.upper = function() return 'hacked' end",
	"rawset(string, 'raw', true)",
	"table.insert(string, 'array part')",
	"string[3] = 1 string[3] = nil",
	"table.insert(json, 'array part')",
	"table.insert = nil",
	"table.y = 2",
	"math.pi = 3",
	"math.floor = nil",
	"json.encode = nil",
	"json.z = 3",
	"getmetatable('').__add = function() return 0 end",
	"getmetatable('').__index = {len = function() return -1 end}",
	"string.__index = nil",
	"setmetatable(string, {__index = function() return 'meta' end})",
	"setmetatable(table, {})",
	"setmetatable(math, {}) setmetatable(math, nil)",
	"setmetatable(1, {__index = function() return 'number' end})",
	"setmetatable(true, {__index = function() return 'boolean' end})",
	"setmetatable(pairs, {__index = function() return 'function' end})",
	"setmetatable('', {__index = function() return 'string' end})",
	"getmetatable(obj).__index = function() return 'object' end",
	"getmetatable(obj.list).__index = function() return 'array' end",
	"rawset(getmetatable(obj), 'extra', 1)",
	"local m = getmetatable(obj) m.k = 1 m.k = nil",
	"local m = getmetatable(obj.list) m[1] = true",
	"rawset(getmetatable(obj), 1, 'x')",
	"setmetatable(getmetatable(obj), {__index = function() return 'marker' end})",
	"setmetatable(getmetatable(obj.list), {}) setmetatable(getmetatable(obj.list), nil)",
	"setmetatable(_G, {__index = function() return 'global' end})",
	"_G.string = {}",
	"_G._G = nil",
	"pairs = nil",
	"local s = string string = nil string = s",
}

// harmless leave the environment as it was, so the state keeps it.
var harmless = []string{
	"local s = string.rep",
	"string.rep = string.rep",
	"local r = string.rep string.rep = nil string.rep = r",
	"math.pi = math.pi",
	"obj = nil",
	"obj.name = 'y'",
	"local t = {} setmetatable(t, {}) t.x = 1",
}

var probeInput = map[string]any{"name": "x", "list": []any{1, 2}}

// evalOn runs script in sb as Eval would and readies sb for the next call; the call must succeed.
func evalOn(t *testing.T, vm *VM, sb *sandbox, script string) any {
	t.Helper()
	proto, err := vm.cache.compile(script)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	reuse, err := vm.evalIn(context.Background(), sb, proto, probeInput, &out)
	if err != nil || !reuse {
		t.Fatalf("reuse %v, error %v", reuse, err)
	}
	sb.release()
	return out
}

// TestReusedStateIsPristine makes each change in one call; the next call in the same state must not see it.
func TestReusedStateIsPristine(t *testing.T) {
	vm := New(Options{})
	for _, m := range mutations {
		t.Run(m, func(t *testing.T) {
			sb := newSandbox(vm.opts)
			defer sb.L.Close()
			want := evalOn(t, vm, sb, probeScript)
			for i := 0; i < 2; i++ {
				evalOn(t, vm, sb, m+"\nreturn {}")
				if diff := cmp.Diff(want, evalOn(t, vm, sb, probeScript)); diff != "" {
					t.Fatalf("(-pristine +got):\n%s", diff)
				}
			}
		})
	}
}

// TestUnchangedEnvironmentIsKept checks that the copies survive calls that leave them as they were, and are
// replaced after one that does not.
func TestUnchangedEnvironmentIsKept(t *testing.T) {
	vm := New(Options{})
	sb := newSandbox(vm.opts)
	defer sb.L.Close()
	evalOn(t, vm, sb, probeScript)
	kept := sb.inst
	for _, script := range append(harmless, "") {
		evalOn(t, vm, sb, script+"\nreturn {}")
		sb.prepare(defaultLimits)
		if sb.inst != kept {
			t.Fatalf("%s: the environment was copied again", script)
		}
	}
	evalOn(t, vm, sb, "string.x = 1 return {}")
	sb.prepare(defaultLimits)
	if sb.inst == kept {
		t.Fatal("the environment was kept after a change")
	}
}

// TestPristineMarkersAreKept checks that the JSON markers survive calls that leave them as new, and are
// replaced after one that changed them, even when a key was removed again (it would still steer next).
func TestPristineMarkersAreKept(t *testing.T) {
	vm := New(Options{})
	sb := newSandbox(vm.opts)
	defer sb.L.Close()
	evalOn(t, vm, sb, probeScript)
	for _, script := range []string{
		"return {}", "local m = getmetatable(obj) return {x = m.x, y = rawget(m, 'y'), n = #m}", "obj = nil return {}",
		// A metatable set and removed again leaves nothing to tell.
		"setmetatable(getmetatable(obj.list), {}) setmetatable(getmetatable(obj.list), nil) return {}",
	} {
		array, object := sb.keptArrayMT, sb.keptObjectMT
		evalOn(t, vm, sb, script)
		if sb.keptArrayMT != array || sb.keptObjectMT != object {
			t.Fatalf("%s: the markers were replaced", script)
		}
	}
	for _, script := range []string{
		"local m = getmetatable(obj) m.k = 1 m.k = nil return {}",
		"setmetatable(getmetatable(obj), {}) return {}",
		"rawset(getmetatable(obj.list), 1, 1) rawset(getmetatable(obj.list), 1, nil) return {}",
	} {
		array, object := sb.keptArrayMT, sb.keptObjectMT
		evalOn(t, vm, sb, script)
		evalOn(t, vm, sb, "return {}")
		if sb.keptArrayMT == array && sb.keptObjectMT == object {
			t.Fatalf("%s: the markers were kept", script)
		}
	}
}

// TestEvalReusesStatesWithoutLeaks alternates mutating and probing calls through Eval, which reuses pooled
// states.
func TestEvalReusesStatesWithoutLeaks(t *testing.T) {
	vm := New(Options{})
	want, err := evalAny(vm, probeScript, probeInput)
	if err != nil {
		t.Fatal(err)
	}
	// next's answer depends on each state's key order, so only the first state's matches want.
	delete(want.(map[string]any), "nextAfterRemoved")
	mutateAll := strings.Join(mutations, "\n") + "\nreturn {}"
	const rounds = 10
	for i := 0; i < rounds; i++ {
		if _, err := evalAny(vm, mutateAll, probeInput); err != nil {
			t.Fatal(err)
		}
		got, err := evalAny(vm, probeScript, probeInput)
		if err != nil {
			t.Fatal(err)
		}
		delete(got.(map[string]any), "nextAfterRemoved")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d (-pristine +got):\n%s", i, diff)
		}
	}
	if n := vm.created.Load(); n >= 2*rounds {
		t.Errorf("%d states made for %d calls: none was reused", n, 2*rounds+1)
	}
}

type panickyOut struct{}

func (*panickyOut) UnmarshalJSON([]byte) error { panic("boom") }

// TestFailedCallsDiscardTheirState checks that no state goes back to the pool after a call that failed, in
// the script, in a limit, in time, in decoding or by a panic.
func TestFailedCallsDiscardTheirState(t *testing.T) {
	cases := []struct {
		name   string
		script string
		input  any
		out    func() any
	}{
		{"runtime error", "error('boom')", nil, nil},
		{"caught then uncaught", "pcall(error, 'x') local t = nil return t.x", nil, nil},
		{"timeout", "while true do end", nil, nil},
		{"size limit", "return {s = string.rep('x', 1e10)}", nil, nil},
		{"stack overflow", "local function f() return 1 + f() end return f()", nil, nil},
		{"returned nil", "local x = 1", nil, nil},
		{"returned function", "return {f = pairs}", nil, nil},
		{"decoding", "return {a = 1}", nil, func() any { return &map[string]string{} }},
		{"panic while decoding", "return {a = 1}", nil, func() any { return &panickyOut{} }},
		{"input out of range", "return {}", json.Number("1e400"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vm := New(Options{Timeout: 50 * time.Millisecond})
			const calls = 3
			for i := 0; i < calls; i++ {
				out := any(&map[string]any{})
				if tc.out != nil {
					out = tc.out()
				}
				if err := vm.Eval(context.Background(), tc.script, tc.input, out); err == nil {
					t.Fatal("the call succeeded")
				}
			}
			if n := vm.created.Load(); n != calls {
				t.Errorf("%d states made for %d failed calls", n, calls)
			}
		})
	}
}

// TestCanceledCallsDiscardTheirState covers the caller's context ending during and before a call.
func TestCanceledCallsDiscardTheirState(t *testing.T) {
	vm := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	var out any
	if err := vm.Eval(ctx, "while true do end", nil, &out); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if err := vm.Eval(ctx, "return {}", nil, &out); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := vm.created.Load(); n != 2 {
		t.Errorf("%d states made for 2 canceled calls", n)
	}
}

// TestEveryReachableTableIsCopied walks everything a script's environment reaches and checks that a new copy
// of the environment shares no table with the previous one.
func TestEveryReachableTableIsCopied(t *testing.T) {
	sb := newSandbox(New(Options{}).opts)
	defer sb.L.Close()
	first := reachableTables(sb.prepare(defaultLimits), sb)
	sb.inst.copies[0].RawSetString("changed", lua.LTrue)
	second := reachableTables(sb.prepare(defaultLimits), sb)
	if len(first) < 7 {
		t.Fatalf("found only %d tables", len(first))
	}
	for tb := range first {
		if second[tb] {
			t.Errorf("table %v is shared between calls", tb)
		}
	}
}

// TestTableLayoutIsKnown pins the fields of gopher-lua's tables that unchanged relies on: a new version that
// lays them out differently needs a look at whether key list and array part still tell every change.
func TestTableLayoutIsKnown(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[lua.LTable]().Fields() {
		names = append(names, f.Name)
	}
	want := []string{"Metatable", "array", "dict", "strdict", "keys", "k2i"}
	if diff := cmp.Diff(want, names); diff != "" || keysField < 0 || arrayField < 0 {
		t.Errorf("gopher-lua's LTable changed (-known +now):\n%s", diff)
	}
}

// reachableTables returns the tables reachable from env, the metatables of the built-in types and the JSON
// markers, through keys, values and metatables.
func reachableTables(env *lua.LTable, sb *sandbox) map[*lua.LTable]bool {
	seen := map[*lua.LTable]bool{}
	var walk func(v lua.LValue)
	walk = func(v lua.LValue) {
		tb, ok := v.(*lua.LTable)
		if !ok || seen[tb] {
			return
		}
		seen[tb] = true
		walk(tb.Metatable)
		tb.ForEach(func(k, v lua.LValue) {
			walk(k)
			walk(v)
		})
	}
	walk(env)
	for _, v := range append(sb.builtins, lua.LString("")) {
		walk(sb.L.GetMetatable(v))
	}
	walk(sb.arrayMT)
	walk(sb.objectMT)
	return seen
}
