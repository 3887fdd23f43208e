package luavm

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// gsub is string.gsub built in one pass (gopher-lua's copies the whole buffer per match) with the result
// size checked as it grows, including what a replacement function or table returns.
func (sb *sandbox) gsub(L *lua.LState) int {
	s, pattern := L.CheckString(1), L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTNumber, lua.LTTable, lua.LTFunction)
	repl, limit := L.Get(3), L.OptInt(4, -1)
	sb.checkPatternInput(s, pattern)
	matches, err := pm.Find(pattern, []byte(s), 0, limit)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		piece := sb.replacement(s, m, repl)
		if b.Len()+len(piece)+m.Capture(0)-last > sb.lim.str {
			sb.charge(b.Len() + len(piece) + m.Capture(0) - last)
		}
		b.WriteString(s[last:m.Capture(0)])
		b.WriteString(piece)
		last = m.Capture(1)
	}
	b.WriteString(s[last:])
	sb.charge(b.Len())
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(len(matches)))
	return 2
}

// replacement is the text that replaces match m of s.
func (sb *sandbox) replacement(s string, m *pm.MatchData, repl lua.LValue) string {
	L := sb.L
	whole := s[m.Capture(0):m.Capture(1)]
	switch r := repl.(type) {
	case *lua.LTable:
		return replacementValue(L, L.GetTable(r, capture(L, s, m, 1)), whole)
	case *lua.LFunction:
		L.Push(r)
		n := max(1, m.CaptureLength()/2-1)
		for i := 1; i <= n; i++ {
			L.Push(capture(L, s, m, i))
		}
		L.Call(n, 1)
		v := L.Get(-1)
		L.Pop(1)
		return replacementValue(L, v, whole)
	default:
		return sb.expandReplacement(lua.LVAsString(r), s, m)
	}
}

// replacementValue applies Lua's rule: false or nil keeps the match, strings and numbers replace it.
func replacementValue(L *lua.LState, v lua.LValue, whole string) string {
	if lua.LVIsFalse(v) {
		return whole
	}
	if !lua.LVCanConvToString(v) {
		L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	}
	return lua.LVAsString(v)
}

// expandReplacement substitutes %0-%9 in a replacement string; %x for any other x is x.
func (sb *sandbox) expandReplacement(r, s string, m *pm.MatchData) string {
	L := sb.L
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		if r[i] != '%' {
			b.WriteByte(r[i])
			continue
		}
		i++
		switch {
		case i == len(r):
			L.RaiseError("invalid use of '%%' in replacement string")
		case r[i] == '0':
			b.WriteString(s[m.Capture(0):m.Capture(1)])
		case r[i] >= '1' && r[i] <= '9':
			b.WriteString(lua.LVAsString(capture(L, s, m, int(r[i]-'0'))))
		default:
			b.WriteByte(r[i])
		}
		if b.Len() > sb.lim.str {
			L.RaiseError("string.gsub: replacement exceeds the limit of %d bytes", sb.lim.str)
		}
	}
	return b.String()
}

// capture returns capture i (1-based) of m; a pattern without captures has the whole match as capture 1.
func capture(L *lua.LState, s string, m *pm.MatchData, i int) lua.LValue {
	if m.CaptureLength() == 2 && i == 1 {
		return lua.LString(s[m.Capture(0):m.Capture(1)])
	}
	idx := 2 * i
	if idx+1 >= m.CaptureLength() {
		L.RaiseError("invalid capture index %%%d", i)
	}
	if m.IsPosCapture(idx) {
		return lua.LNumber(m.Capture(idx))
	}
	return lua.LString(s[m.Capture(idx):m.Capture(idx+1)])
}
