package luavm

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// objGlobal names the global holding the input.
const objGlobal = "obj"

// removedGlobals are base functions a script must not reach: loading code, changing environments, the
// garbage collector, and printing to the manager's stdout.
var removedGlobals = []string{
	"load", "loadstring", "dofile", "loadfile", "require", "module", "getfenv", "setfenv", "collectgarbage",
	"newproxy", "print", "_printregs",
}

// sandbox is one Lua state with the libraries opened once. States are reused across calls, so prepare resets
// everything a script can reach and change: the global environment and library tables, the metatables of
// the built-in types and the JSON markers. Registers need no reset: gopher-lua sets every register of a
// frame to nil on entry, so no script reads what an earlier call left above the stack top.
type sandbox struct {
	L   *lua.LState
	lim limits
	// produced counts the bytes the guarded builtins created during this call.
	produced int
	// arrayMT and objectMT mark tables made from JSON arrays and objects, so they go back out as the same
	// kind even when empty. A script can reach them through getmetatable(obj), so a call gets new ones unless
	// the previous call's are still pristine; keptArrayMT and keptObjectMT hold those between calls.
	arrayMT, objectMT         *lua.LTable
	keptArrayMT, keptObjectMT *lua.LTable
	// guard is the size-checking `..` every chunk receives.
	guard *lua.LFunction
	// libs is the environment as opened, which prepare copies; inst is the copy in use, kept for the next
	// call while no script changed it.
	libs *template
	inst *instance
	// scratch is reused by the JSON reader, enc by the conversions to Go.
	scratch scratch
	enc     encoder
	// rec keeps the tables of the previous call's obj for this call's.
	rec recycler
	// builtins are one value of each type other than string whose metatable the state holds, rather than the
	// value (setmetatable(1, mt) sets the metatable of all numbers).
	builtins []lua.LValue
}

func newSandbox(o Options) *sandbox {
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
	sb := &sandbox{L: L}
	sb.openLibs()
	sb.installGuards()
	sb.installJSON()
	sb.guard = L.NewFunction(sb.concat)
	sb.builtins = []lua.LValue{lua.LNil, lua.LFalse, lua.LNumber(0), sb.guard, L, lua.LChannel(nil)}
	sb.libs = freezeEnv(L.G.Global, L.GetMetatable(lua.LString("")))
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

// prepare readies the state for one call and returns the call's global environment: copies of the globals
// and library tables (the previous call's when it left them as they were), the string metatable pointing at
// the copy of string, no metatables on other built-in types, new JSON markers and a zero allowance count.
func (sb *sandbox) prepare(lim limits) *lua.LTable {
	L := sb.L
	if sb.inst == nil || !sb.libs.unchanged(sb.inst) {
		sb.inst = sb.libs.instantiate(L)
	}
	env := sb.inst.env
	for _, v := range sb.builtins {
		L.SetMetatable(v, lua.LNil)
	}
	L.SetMetatable(lua.LString(""), sb.libs.stringMT(sb.inst))
	// Library code that looks up globals (none of what is opened does) would see this call's copy.
	L.G.Global, L.Env = env, env
	sb.lim, sb.produced = lim, 0
	sb.arrayMT, sb.objectMT = freshMarker(L, sb.keptArrayMT), freshMarker(L, sb.keptObjectMT)
	L.SetTop(0)
	return env
}

// freshMarker returns kept when no script could tell it from a new empty table (no metatable, no key ever
// set), else a new table.
func freshMarker(L *lua.LState, kept *lua.LTable) *lua.LTable {
	if kept != nil && kept.Metatable == lua.LNil {
		if keys, array, ok := tableSizes(kept); ok && keys == 0 && array == 0 {
			return kept
		}
	}
	return L.CreateTable(0, 0)
}

// release drops what the finished call left in the state, so the pool does not keep it alive.
func (sb *sandbox) release() {
	sb.L.SetTop(0)
	sb.L.RemoveContext()
	sb.inst.env.RawSetString(objGlobal, lua.LNil)
	sb.L.G.Global, sb.L.Env = sb.libs.global, sb.libs.global
	sb.keptArrayMT, sb.keptObjectMT = sb.arrayMT, sb.objectMT
	sb.arrayMT, sb.objectMT = nil, nil
}

// call runs proto in env with obj set to in and returns its first result.
func (sb *sandbox) call(proto *lua.FunctionProto, env *lua.LTable, in lua.LValue) (lua.LValue, error) {
	L := sb.L
	env.RawSetString(objGlobal, in)
	fn := L.NewFunctionFromProto(proto)
	fn.Env = env
	L.Push(fn)
	L.Push(sb.guard)
	if err := L.PCall(1, 1, nil); err != nil {
		return nil, err
	}
	ret := L.Get(-1)
	L.Pop(1)
	return ret, nil
}

// decode stores the script's return value into out as json.Unmarshal would store its JSON: an object into an
// empty map[string]any or map[string]string directly, anything else through the value in json.Unmarshal's
// generic form.
func (sb *sandbox) decode(ret lua.LValue, out any) error {
	if ret == lua.LNil {
		return fmt.Errorf("%w: the script returned nil", ErrScript)
	}
	if t, ok := ret.(*lua.LTable); ok {
		var done bool
		var err error
		switch out := out.(type) {
		case *map[string]any:
			done, err = fillMap(sb, t, out, anyMember)
		case *map[string]string:
			done, err = fillMap(sb, t, out, stringMember)
		}
		if done {
			return err
		}
	}
	r, err := sb.result(ret)
	if err != nil {
		return err
	}
	return decodeResult(r, out)
}

// result converts the script's return value; nil stands for an empty table without a JSON origin. validUTF8
// tells whether every string in it is valid UTF-8, so that JSON would carry it unchanged.
func (sb *sandbox) result(ret lua.LValue) (returned, error) {
	e := sb.encoder(true, sb.lim.result)
	defer sb.keepEncoder(e)
	v, err := e.value(ret, 0)
	if err != nil {
		return returned{}, resultError(err)
	}
	return returned{value: v, validUTF8: e.validUTF8}, nil
}

func resultError(err error) error {
	return fmt.Errorf("%w: return value: %w", ErrScript, err)
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
