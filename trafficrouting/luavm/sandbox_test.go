package luavm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func evalAny(vm *VM, script string, input any) (any, error) {
	var out any
	err := vm.Eval(context.Background(), script, input, &out)
	return out, err
}

func TestForbiddenNamesAreNil(t *testing.T) {
	vm := New(Options{})
	forbidden := []string{
		"load", "loadstring", "dofile", "loadfile", "require", "module", "getfenv", "setfenv", "collectgarbage",
		"newproxy", "print", "_printregs", "os", "io", "debug", "package", "coroutine", "channel", "string.dump",
		"math.randomseed", `getmetatable("").__index.dump`, `rawget(_G, "loadstring")`, `_G["load"]`,
	}
	for _, name := range forbidden {
		t.Run(name, func(t *testing.T) {
			out, err := evalAny(vm, "return {type = type("+name+")}", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.(map[string]any)["type"]; got != "nil" {
				t.Errorf("type(%s) = %v, want nil", name, got)
			}
		})
	}
}

func TestAllowedLibrariesArePresent(t *testing.T) {
	vm := New(Options{})
	allowed := []string{
		"pairs", "ipairs", "next", "pcall", "error", "tostring", "tonumber", "setmetatable", "unpack", "select",
		"table.insert", "table.concat", "table.sort", "string.format", "string.gsub", "string.find", "string.rep",
		"math.floor", "math.max", "json.encode", "json.decode",
	}
	for _, name := range allowed {
		out, err := evalAny(vm, "return {type = type("+name+")}", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := out.(map[string]any)["type"]; got != "function" {
			t.Errorf("type(%s) = %v, want function", name, got)
		}
	}
}

type escapeCase struct {
	name   string
	script string
	is     error
	msg    string
}

func runEscapes(t *testing.T, vm *VM, cases []escapeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := evalAny(vm, tc.script, nil)
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("took %v", elapsed)
			}
		})
	}
}

func TestRunawayScriptsFail(t *testing.T) {
	runEscapes(t, New(Options{Timeout: 200 * time.Millisecond}), []escapeCase{
		{"infinite loop", "while true do end", ErrTimeout, ""},
		{"pcall cannot swallow the timeout", "while true do pcall(function() while true do end end) end",
			ErrTimeout, ""},
		{"nested pcall loop", `local function spin() while true do pcall(spin) end end
			pcall(spin) while true do end`, ErrTimeout, ""},
		{"comparator loop in table.sort", `table.sort({3, 2, 1}, function(a, b) while true do end end)`,
			ErrTimeout, ""},
		{"growing a huge table", "local t = {} local i = 0 while true do i = i + 1 t[i] = i end", ErrTimeout, ""},
		{"deep recursion", "local function f(n) return 1 + f(n + 1) end return f(1)", ErrScript, "stack overflow"},
		{"recursion through metamethods", `local t = setmetatable({}, {__index = function(t, k) return t[k] end})
			return t.x`, ErrScript, "stack overflow"},
		{"unpacking a huge range", "return {unpack({}, 1, 1e8)}", ErrScript, "registry overflow"},
		{"string.rep", `return {s = string.rep("x", 1e10)}`, ErrScript, "string.rep"},
		{"string.rep method", `return {s = ("x"):rep(1e10)}`, ErrScript, "string.rep"},
		{"string.rep overflow", `return {s = ("xy"):rep(2^62)}`, ErrScript, "string.rep"},
		{"doubling concatenation", `local s = "x" while true do s = s .. s end`, ErrScript, "exceeds the limit"},
		{"go panic inside gopher-lua", `return {n = math.random(0, -1)}`, ErrScript, "Intn"},
		{"deep nesting in source", "return " + strings.Repeat("{", 2000) + strings.Repeat("}", 2000), ErrScript,
			"nests more than"},
		{"huge script", "return {s = '" + strings.Repeat("x", maxScriptBytes) + "'}", ErrScript, "bytes, more than"},
		{"returned cycle", `local t = {} t.self = t return t`, ErrScript, "contains itself"},
		{"returned function", `return {f = pairs}`, ErrScript, "function"},
	})
}

// TestAllocationGuards runs with small limits so that each guard trips quickly on a slow machine.
func TestAllocationGuards(t *testing.T) {
	vm := New(Options{Timeout: 5 * time.Second})
	vm.limits = limits{str: 64 << 10, produced: 1 << 20, patternSubject: 4 << 10, result: 256 << 10}
	runEscapes(t, vm, []escapeCase{
		{"one wide concatenation", `local s = string.rep("x", 2^14) return {s = s..s..s..s..s}`,
			ErrScript, "exceeds the limit"},
		{"many large strings", `local t = {} for i = 1, 100 do t[i] = string.rep("x", 6e4 - i) end`,
			ErrScript, "created more than"},
		{"upper of large strings", `local t = {} local s = string.rep("x", 1e4)
			for i = 1, 200 do t[i] = s:upper() end`, ErrScript, "created more than"},
		{"table.concat of shared strings", `local s = string.rep("x", 1e4) local t = {}
			for i = 1, 1000 do t[i] = s end return {s = table.concat(t)}`, ErrScript, "exceeds the limit"},
		{"gsub amplification", `return {s = string.rep("x", 4000):gsub("x", string.rep("y", 100))}`,
			ErrScript, "exceeds the limit"},
		{"gsub function amplification", `local big = string.rep("y", 1e4)
			return {s = string.rep("x", 4000):gsub("x", function() return big end)}`, ErrScript, "exceeds the limit"},
		{"format width", `return {s = string.format("%1000000d", 1)}`, ErrScript, "width or precision"},
		{"format of large strings", `local s = string.rep("x", 4e4) return {s = string.format("%s%s", s, s)}`,
			ErrScript, "exceeds the limit"},
		{"pattern subject", `return {string.rep("a", 1e4):find(".-b")}`, ErrScript, "pattern matching"},
		{"json.encode amplification", `local s = string.rep("x", 1e4) local t = {}
			for i = 1, 100 do t[i] = s end return {s = json.encode(t)}`, ErrScript, "json.encode"},
		{"json.decode of large input", `local s = json.encode(string.rep("x", 6e4)) local t = {}
			for i = 1, 100 do t[i] = json.decode(s) end`, ErrScript, "created more than"},
		{"returned references amplify", `local s = string.rep("x", 1e4) local t = {}
			for i = 1, 100 do t[i] = s end return {t = t}`, ErrScript, "too large"},
	})
}

func TestLargeArrayIndexDoesNotAllocateTheGap(t *testing.T) {
	vm := New(Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	out, err := evalAny(vm, "local t = {} t[2^26 - 1] = 1 return {n = #t, v = t[2^26 - 1]}", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(map[string]any); got["n"] != 0.0 || got["v"] != 1.0 {
		t.Errorf("got %v", got)
	}
	if elapsed := time.Since(start); elapsed > 100*time.Millisecond {
		t.Errorf("took %v", elapsed)
	}
}

func TestContextEndsTheCall(t *testing.T) {
	vm := New(Options{Timeout: 10 * time.Second})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		var out any
		err := vm.Eval(ctx, "while true do end", nil, &out)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrScript) {
			t.Errorf("error %v, want only context.Canceled", err)
		}
	})
	t.Run("already canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out any
		if err := vm.Eval(ctx, "return {}", nil, &out); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var out any
		err := vm.Eval(ctx, "while true do end", nil, &out)
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v, want ErrTimeout and DeadlineExceeded", err)
		}
	})
}

func TestEvalRecoversPanics(t *testing.T) {
	var out any
	err := New(Options{}).Eval(context.Background(), "return obj", panicky{}, &out)
	if !errors.Is(err, ErrScript) {
		t.Errorf("error %v, want ErrScript", err)
	}
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom") }
