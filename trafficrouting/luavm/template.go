package luavm

import (
	"math"
	"reflect"
	"slices"

	lua "github.com/yuin/gopher-lua"
)

// field is one entry of a table.
type field struct{ key, value lua.LValue }

// template is the global environment as opened, frozen: the globals and the contents of every table reachable
// from them (the libraries string, table, math and json) in iteration order. Calls get copies of these
// tables, so a script that changes a library changes only its own copy. The values themselves are shared:
// strings and numbers are immutable, and a script cannot change a function (no setfenv, no debug library;
// the metatable of all functions is reset per call).
type template struct {
	global  *lua.LTable
	globals []field
	// libs are the original library tables, contents what each held.
	libs     []*lua.LTable
	contents [][]field
	// stringLib is the index in libs of string, which is also the metatable of strings; -1 when absent.
	stringLib int
}

// instance is one copy of the environment: env is the global table, copies[i] the copy of libs[i].
type instance struct {
	env    *lua.LTable
	copies []*lua.LTable
}

func freezeEnv(global *lua.LTable, stringMT lua.LValue) *template {
	t := &template{global: global, globals: fields(global), stringLib: -1}
	t.collect(t.globals, stringMT)
	return t
}

// collect records every table reachable from fs, so that none is shared between calls.
func (t *template) collect(fs []field, stringMT lua.LValue) {
	for _, f := range fs {
		lib, ok := f.value.(*lua.LTable)
		if !ok || lib == t.global || slices.Contains(t.libs, lib) {
			continue
		}
		if lib == stringMT {
			t.stringLib = len(t.libs)
		}
		contents := fields(lib)
		t.libs = append(t.libs, lib)
		t.contents = append(t.contents, contents)
		t.collect(contents, stringMT)
	}
}

func fields(t *lua.LTable) []field {
	var out []field
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		out = append(out, field{k, v})
	}
	return out
}

// instantiate returns a fresh copy of the environment. References between the tables (_G, string.__index)
// point at the copies. The global obj gets its place among the keys now, so that setting it per call does
// not count as a change.
func (t *template) instantiate(L *lua.LState) *instance {
	in := &instance{env: L.CreateTable(0, len(t.globals)+1), copies: make([]*lua.LTable, len(t.libs))}
	for i, c := range t.contents {
		in.copies[i] = L.CreateTable(0, len(c))
	}
	for _, f := range t.globals {
		in.env.RawSet(f.key, t.remap(f.value, in))
	}
	in.env.RawSetString(objGlobal, lua.LTrue)
	in.env.RawSetString(objGlobal, lua.LNil)
	for i, c := range t.contents {
		for _, f := range c {
			in.copies[i].RawSet(f.key, t.remap(f.value, in))
		}
	}
	return in
}

// stringMT is the copy of string, which serves as the metatable of strings.
func (t *template) stringMT(in *instance) lua.LValue {
	if t.stringLib < 0 {
		return lua.LNil
	}
	return in.copies[t.stringLib]
}

// remap replaces an original table by its copy.
func (t *template) remap(v lua.LValue, in *instance) lua.LValue {
	tb, ok := v.(*lua.LTable)
	if !ok {
		return v
	}
	if tb == t.global {
		return in.env
	}
	for i, lib := range t.libs {
		if tb == lib {
			return in.copies[i]
		}
	}
	return v
}

// unchanged reports whether no script could tell in from a fresh copy, obj aside: every table still holds
// exactly its original entries, has no metatable and never had a key added, even one removed again (it would
// still steer next). Copying costs about as much as a short script, and scripts seldom touch the libraries.
func (t *template) unchanged(in *instance) bool {
	if !t.sameEntries(in.env, t.globals, 1, in) {
		return false
	}
	for i, c := range t.contents {
		if !t.sameEntries(in.copies[i], c, 0, in) {
			return false
		}
	}
	return true
}

// sameEntries reports whether tb holds want (with tables mapped to their copies in in), has no metatable, no
// array part, and no keys but want's and reserved ones ever.
func (t *template) sameEntries(tb *lua.LTable, want []field, reserved int, in *instance) bool {
	keys, array, ok := tableSizes(tb)
	if !ok || tb.Metatable != lua.LNil || array != 0 || keys != len(want)+reserved {
		return false
	}
	for _, f := range want {
		if !identical(tb.RawGet(f.key), t.remap(f.value, in)) {
			return false
		}
	}
	return true
}

// identical tells values apart as a script can, 0 from -0 included.
func identical(a, b lua.LValue) bool {
	an, aok := a.(lua.LNumber)
	bn, bok := b.(lua.LNumber)
	if aok && bok {
		return math.Float64bits(float64(an)) == math.Float64bits(float64(bn))
	}
	return a == b
}

// gopher-lua keeps a table's keys in insertion order in a list it only appends to (removed keys stay, and
// next still starts after them), and integer keys in an array part; neither length is exported.
var (
	keysField  = sliceField("keys")
	arrayField = sliceField("array")
)

func sliceField(name string) int {
	f, ok := reflect.TypeFor[lua.LTable]().FieldByName(name)
	if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.Slice {
		return -1
	}
	return f.Index[0]
}

// tableSizes returns the lengths of tb's key list and array part; ok is false when this version of
// gopher-lua lays tables out differently, and then nothing counts as unchanged.
func tableSizes(tb *lua.LTable) (keys, array int, ok bool) {
	if keysField < 0 || arrayField < 0 {
		return 0, 0, false
	}
	v := reflect.ValueOf(tb).Elem()
	return v.Field(keysField).Len(), v.Field(arrayField).Len(), true
}
