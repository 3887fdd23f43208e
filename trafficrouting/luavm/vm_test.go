package luavm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

func TestScriptErrors(t *testing.T) {
	vm := New(Options{})
	cases := []struct {
		name   string
		script string
		out    any
		msg    string
	}{
		{"syntax", "local a = 1\nlocal b = = 2\nreturn {}", &map[string]any{}, "line:2"},
		{"runtime", "local t = nil\nreturn t.x", &map[string]any{}, "script:2:"},
		{"error call", "\n\nerror('boom')", &map[string]any{}, "script:3: boom"},
		{"concat nil", "local x\nreturn {s = 'a' .. x}", &map[string]any{}, "script:2: attempt to concatenate a nil"},
		{"no return value", "local x = 1", &map[string]any{}, "returned nil"},
		{"string for a map", "return 'x'", &map[string]string{}, "decoding the return value"},
		{"number for a string", "return {a = 1}", &map[string]string{}, "decoding the return value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := vm.Eval(context.Background(), tc.script, nil, tc.out)
			if !errors.Is(err, ErrScript) || errors.Is(err, ErrTimeout) {
				t.Fatalf("error %v, want ErrScript", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestDecodesIntoCallerTypes(t *testing.T) {
	vm := New(Options{})
	var annotations map[string]string
	err := vm.Eval(context.Background(), `local a = {} for k, v in pairs(obj) do a[k] = v .. "!" end return a`,
		map[string]string{"x": "1", "y": "2"}, &annotations)
	if diff := cmp.Diff(map[string]string{"x": "1!", "y": "2!"}, annotations); err != nil || diff != "" {
		t.Errorf("%v (-want +got):\n%s", err, diff)
	}
	type data struct {
		Spec   map[string]any    `json:"spec"`
		Labels map[string]string `json:"labels"`
		Weight int32             `json:"weight"`
	}
	var got data
	err = vm.Eval(context.Background(), `return {spec = obj.spec, labels = {a = "b"}, weight = obj.w * 2}`,
		map[string]any{"spec": map[string]any{"hosts": []string{"h"}}, "w": 21}, &got)
	want := data{Spec: map[string]any{"hosts": []any{"h"}}, Labels: map[string]string{"a": "b"}, Weight: 42}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("%v (-want +got):\n%s", err, diff)
	}
}

func TestScriptsAreCompiledOnce(t *testing.T) {
	vm := New(Options{})
	for i := 0; i < 3; i++ {
		if _, err := evalAny(vm, "return {n = 1}", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := vm.cache.compiles.Load(); n != 1 {
		t.Errorf("compiled %d times, want 1", n)
	}
	if _, err := evalAny(vm, "return {n = 2}", nil); err != nil {
		t.Fatal(err)
	}
	if n := vm.cache.compiles.Load(); n != 2 {
		t.Errorf("compiled %d times, want 2", n)
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := newProtoCache(4)
	for i := 0; i < 20; i++ {
		if _, err := c.compile(fmt.Sprintf("return {n = %d}", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.protos) > 4 {
		t.Errorf("cache holds %d protos, want at most 4", len(c.protos))
	}
	if _, err := c.compile("return {"); err == nil || c.compiles.Load() != 20 {
		t.Errorf("a failed compile: %v, %d compiles", err, c.compiles.Load())
	}
}

// TestStateDoesNotLeak runs scripts that change globals and libraries concurrently; each must see a pristine
// state.
func TestStateDoesNotLeak(t *testing.T) {
	vm := New(Options{})
	script := `counter = (counter or 0) + 1
		local seen = string.marker
		string.marker = "set"
		string.rep = nil
		setmetatable(_G, {__index = function() return "leaked" end})
		return {counter = counter, seen = seen or "none", obj = obj.id}`
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				id := fmt.Sprint(g, "-", i)
				out, err := evalAny(vm, script, map[string]any{"id": id})
				want := map[string]any{"counter": 1.0, "seen": "none", "obj": id}
				if err != nil {
					errs <- err
				} else if diff := cmp.Diff(want, out); diff != "" {
					errs <- fmt.Errorf("(-want +got):\n%s", diff)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGuardedBuiltinsKeepLuaSemantics(t *testing.T) {
	vm := New(Options{})
	cases := []struct {
		expr string
		want []any
	}{
		{`("hello world"):gsub("o", "0")`, []any{"hell0 w0rld", 2.0}},
		{`("hello world"):gsub("(%w+)", "<%1>")`, []any{"<hello> <world>", 2.0}},
		{`("hello"):gsub("", "-")`, []any{"-h-e-l-l-o-", 6.0}},
		{`("abc"):gsub("%w", "%0%0")`, []any{"aabbcc", 3.0}},
		{`("abc"):gsub("%w", "%%")`, []any{"%%%", 3.0}},
		{`("$name is $age"):gsub("%$(%w+)", {name = "bob", age = 3})`, []any{"bob is 3", 2.0}},
		{`("a,b,c"):gsub(",", ";", 1)`, []any{"a;b,c", 1.0}},
		{`("abc"):gsub("()", "%1")`, []any{"1a2b3c4", 4.0}},
		{`("hello"):gsub("l", function(c) return nil end)`, []any{"hello", 2.0}},
		{`("hello"):gsub("(h)(e)", function(a, b) return b .. a end)`, []any{"ehllo", 1.0}},
		{`("x"):gsub("x", 5)`, []any{"5", 1.0}},
		{`string.gsub("abc", "b", "%2")`, nil},
		{`1 .. 2, "a" .. 1.5, "a" .. "b" .. "c" .. "d"`, []any{"12", "a1.5", "abcd"}},
		{`setmetatable({}, {__concat = function(a, b) return "meta" end}) .. "x"`, []any{"meta"}},
		{`"x" .. setmetatable({}, {__concat = function(a, b) return type(a) .. type(b) end}) .. "y"`,
			[]any{"xtablestring"}},
		{`string.format("%s=%d", "a", 5), string.format("%5.2f|%-3s|%%|%02d", 1.5, "x", 7)`,
			[]any{"a=5", " 1.50|x  |%|07"}},
		{`table.concat({1, "b", 3}, ", "), table.concat({"a", "b", "c"}, "-", 2, 3), table.concat({})`,
			[]any{"1, b, 3", "b-c", ""}},
		{`table.concat({1, {}, 3})`, nil},
		{`("ab"):rep(3), ("ab"):rep(0), ("ab"):rep(-1)`, []any{"ababab", "", ""}},
		{`("abc"):upper(), ("ABC"):lower(), ("abc"):reverse()`, []any{"ABC", "abc", "cba"}},
		{`string.rep("a", 1e5):find("b", 1, true), ("key=value"):match("(%w+)=(%w+)")`,
			[]any{nil, "key", "value"}},
		{`("a" .. "b"):upper(), select("#", "a" .. "b"), (function(x) return x .. 1 end)("y")`,
			[]any{"AB", 1.0, "y1"}},
	}
	for _, tc := range cases {
		out, err := evalAny(vm, "return {r = {"+tc.expr+"}}", nil)
		if tc.want == nil {
			if !errors.Is(err, ErrScript) {
				t.Errorf("%s: error %v, want ErrScript", tc.expr, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if diff := cmp.Diff(tc.want, out.(map[string]any)["r"]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.expr, diff)
		}
	}
}

// TestNoConcatenationBypassesTheGuard compiles `..` in every syntactic position and checks that no CONCAT
// instruction is left: each one must have become a call of the size-checking guard.
func TestNoConcatenationBypassesTheGuard(t *testing.T) {
	script := `local a, b = "x" .. 1, {k = "y" .. 2, ["z" .. 3] = 4, "w" .. 5}
		a = a .. b.k
		b["k" .. 1] = a .. a
		local function f(x, ...) return x .. select(1, ...) .. #("q" .. x) end
		function b.g(x) return (x .. "!"):upper() end
		function b:h(x) return self.k .. x end
		if a .. "" == "" then elseif ("e" .. "f") ~= a then else end
		while a .. "" == "" do end
		repeat local r = "r" .. a until r .. "" ~= ""
		for i = #("1" .. "2"), #("3" .. "4"), #("5" .. "6") do a = a .. i end
		for k, v in pairs({["m" .. 1] = "n" .. 2}) do a = k .. v end
		do local c = not ("a" .. "b") and -#("c" .. "d") + 1 or {} end
		print = f(a .. b.g("h"), b:h("i" .. "j") .. "k")
		return {a = a .. f("1", "2")}`
	proto, err := compileScript(script)
	if err != nil {
		t.Fatal(err)
	}
	if lines := concatLines(proto); len(lines) > 0 {
		t.Errorf("CONCAT left at lines %v", lines)
	}
	chunk, err := parse.Parse(strings.NewReader(script), "plain")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := lua.Compile(chunk, "plain")
	if err != nil || len(concatLines(plain)) == 0 {
		t.Errorf("the check finds no CONCAT in the unguarded script (%v)", err)
	}
	if _, err := evalAny(New(Options{}), script, nil); err != nil {
		t.Error(err)
	}
}

func concatLines(p *lua.FunctionProto) []int {
	var lines []int
	for i, inst := range p.Code {
		if int(inst>>26) == lua.OP_CONCAT {
			lines = append(lines, p.DbgSourcePositions[i])
		}
	}
	for _, nested := range p.FunctionPrototypes {
		lines = append(lines, concatLines(nested)...)
	}
	return lines
}

// TestEmptyConstructorsGetAHashHint checks that `{}` gets a hash-size hint of one wherever it appears, that
// constructors with fields keep the sizes the compiler gave them, and that the hinted tables work as maps,
// arrays and both.
func TestEmptyConstructorsGetAHashHint(t *testing.T) {
	script := `local m = {}
		local a = {1, 2}
		local h = {x = 1}
		local function f() local n = {} n[1] = "one" n.k = "v" return n end
		m.x, m[1], m[2] = "x", "a", "b"
		local l = {}
		for i = 1, 40 do l[#l + 1] = i end
		return {m = m, a = a, h = h, f = f(), n = #l, last = l[40]}`
	proto, err := compileScript(script)
	if err != nil {
		t.Fatal(err)
	}
	var sizes [][2]uint32
	var collect func(p *lua.FunctionProto)
	collect = func(p *lua.FunctionProto) {
		for _, inst := range p.Code {
			if int(inst>>26) == lua.OP_NEWTABLE {
				sizes = append(sizes, [2]uint32{inst & 0x1ff, inst >> 9 & 0x1ff})
			}
		}
		for _, nested := range p.FunctionPrototypes {
			collect(nested)
		}
	}
	collect(proto)
	// m, a, h, l, the returned table, then n in f.
	want := [][2]uint32{{0, 1}, {2, 0}, {0, 1}, {0, 1}, {0, 6}, {0, 1}}
	if diff := cmp.Diff(want, sizes); diff != "" {
		t.Errorf("NEWTABLE sizes (-want +got):\n%s", diff)
	}
	out, err := evalAny(New(Options{}), script, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantOut := map[string]any{
		"m": map[string]any{"x": "x", "1": "a", "2": "b"}, "a": []any{1.0, 2.0}, "h": map[string]any{"x": 1.0},
		"f": map[string]any{"1": "one", "k": "v"}, "n": 40.0, "last": 40.0,
	}
	if diff := cmp.Diff(wantOut, out); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}
