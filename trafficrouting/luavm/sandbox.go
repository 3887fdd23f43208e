package luavm

import (
	"context"
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// removedGlobals are base functions a script must not reach: loading code, changing environments, the
// garbage collector, and printing to the manager's stdout.
var removedGlobals = []string{
	"load", "loadstring", "dofile", "loadfile", "require", "module", "getfenv", "setfenv", "collectgarbage",
	"newproxy", "print", "_printregs",
}

// sandbox is one Lua state prepared for a single Eval.
type sandbox struct {
	L   *lua.LState
	lim limits
	// produced counts the bytes the guarded builtins created during this call.
	produced int
	// arrayMT and objectMT mark tables made from JSON arrays and objects, so they go back out as the same
	// kind even when empty.
	arrayMT, objectMT *lua.LTable
}

func newSandbox(ctx context.Context, o Options, lim limits) *sandbox {
	registry := max(o.RegistryMaxSize, 256)
	L := lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   o.CallStackSize,
		RegistrySize:    min(initialRegistrySize, registry),
		RegistryMaxSize: registry,
		// gopher-lua grows the value stack by a fixed step, copying it each time; small steps make a
		// runaway unpack quadratic.
		RegistryGrowStep: max(registry/16, 32),
	})
	sb := &sandbox{L: L, lim: lim, arrayMT: L.NewTable(), objectMT: L.NewTable()}
	sb.openLibs()
	sb.installGuards()
	sb.installJSON()
	L.SetContext(ctx)
	return sb
}

// openLibs opens only base, table, string and math, then removes what the sandbox forbids.
func (sb *sandbox) openLibs() {
	libs := []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	}
	for _, lib := range libs {
		sb.L.Push(sb.L.NewFunction(lib.open))
		sb.L.Push(lua.LString(lib.name))
		sb.L.Call(1, 0)
	}
	for _, name := range removedGlobals {
		sb.L.SetGlobal(name, lua.LNil)
	}
	sb.module(lua.StringLibName).RawSetString("dump", lua.LNil)
	// math.randomseed reseeds the process-wide generator.
	sb.module(lua.MathLibName).RawSetString("randomseed", lua.LNil)
}

func (sb *sandbox) module(name string) *lua.LTable {
	return sb.L.GetGlobal(name).(*lua.LTable)
}

// call runs proto with obj set to in and returns its first result.
func (sb *sandbox) call(proto *lua.FunctionProto, in any) (lua.LValue, error) {
	L := sb.L
	L.SetGlobal("obj", sb.toLua(in))
	L.Push(L.NewFunctionFromProto(proto))
	L.Push(L.NewFunction(sb.concat))
	if err := L.PCall(1, 1, nil); err != nil {
		return nil, err
	}
	ret := L.Get(-1)
	L.Pop(1)
	return ret, nil
}

// result converts the script's return value; nil stands for an empty table without a JSON origin.
func (sb *sandbox) result(ret lua.LValue) (any, error) {
	if ret == lua.LNil {
		return nil, fmt.Errorf("%w: the script returned nil", ErrScript)
	}
	v, err := sb.fromLua(ret, true, sb.lim.result)
	if err != nil {
		return nil, fmt.Errorf("%w: return value: %w", ErrScript, err)
	}
	return v, nil
}

// charge accounts n bytes a builtin is about to create and raises a Lua error past the limits.
func (sb *sandbox) charge(n int) {
	if n > sb.lim.str || n < 0 {
		sb.L.RaiseError("string of %d bytes exceeds the limit of %d bytes", n, sb.lim.str)
	}
	sb.produced += n
	if sb.produced > sb.lim.produced {
		sb.L.RaiseError("the script created more than %d bytes of strings", sb.lim.produced)
	}
}

// callOriginal calls fn with this Go function's arguments and returns its results.
func callOriginal(L *lua.LState, fn lua.LValue) int {
	top := L.GetTop()
	L.Push(fn)
	for i := 1; i <= top; i++ {
		L.Push(L.Get(i))
	}
	L.Call(top, lua.MultRet)
	return L.GetTop() - top
}
