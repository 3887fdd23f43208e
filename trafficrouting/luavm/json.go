package luavm

import (
	"bytes"
	"encoding/json"

	lua "github.com/yuin/gopher-lua"
)

// installJSON adds the json module: json.encode(value) and json.decode(string), with the same value mapping
// as obj and the return value (an empty table that did not come from JSON encodes as {}).
func (sb *sandbox) installJSON() {
	mod := sb.L.NewTable()
	mod.RawSetString("encode", sb.L.NewFunction(sb.jsonEncode))
	mod.RawSetString("decode", sb.L.NewFunction(sb.jsonDecode))
	sb.L.SetGlobal("json", mod)
}

func (sb *sandbox) jsonEncode(L *lua.LState) int {
	v, err := sb.fromLua(L.CheckAny(1), false, sb.lim.str)
	if err != nil {
		L.RaiseError("json.encode: %s", err.Error())
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Annotation values stay readable: no \u003c for < > &.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		L.RaiseError("json.encode: %s", err.Error())
	}
	sb.charge(buf.Len())
	L.Push(lua.LString(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
	return 1
}

func (sb *sandbox) jsonDecode(L *lua.LState) int {
	s := L.CheckString(1)
	// Decoding builds tables in proportion to the input, so it counts against the same allowance.
	sb.charge(len(s))
	v, err := sb.jsonToLua([]byte(s))
	if err != nil {
		L.RaiseError("json.decode: %s", err.Error())
	}
	L.Push(v)
	return 1
}
