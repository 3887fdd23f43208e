package luavm

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// installGuards replaces the builtins that can create a large string in one step, or run long over a large
// subject, with versions that check sizes first.
func (sb *sandbox) installGuards() {
	str := sb.module(lua.StringLibName)
	str.RawSetString("rep", sb.L.NewFunction(sb.rep))
	str.RawSetString("gsub", sb.L.NewFunction(sb.gsub))
	str.RawSetString("format", sb.L.NewFunction(sb.format(str.RawGetString("format"))))
	for _, name := range []string{"upper", "lower", "reverse"} {
		str.RawSetString(name, sb.L.NewFunction(sb.copying(str.RawGetString(name))))
	}
	str.RawSetString("find", sb.L.NewFunction(sb.matching(str.RawGetString("find"), 4)))
	for _, name := range []string{"match", "gmatch", "gfind"} {
		str.RawSetString(name, sb.L.NewFunction(sb.matching(str.RawGetString(name), 0)))
	}
	sb.module(lua.TabLibName).RawSetString("concat", sb.L.NewFunction(sb.tableConcat))
}

// concat implements `..` for the rewritten script: operands arrive in source order and are joined from the
// right, a run of strings and numbers at once, other values through their __concat metamethod.
func (sb *sandbox) concat(L *lua.LState) int {
	acc := L.Get(L.GetTop())
	for i := L.GetTop() - 1; i >= 1; {
		if !lua.LVCanConvToString(acc) || !lua.LVCanConvToString(L.Get(i)) {
			acc = metaConcat(L, L.Get(i), acc)
			i--
			continue
		}
		j := i
		for j > 1 && lua.LVCanConvToString(L.Get(j-1)) {
			j--
		}
		acc = sb.join(L, j, i, acc)
		i = j - 1
	}
	L.Push(acc)
	return 1
}

// join concatenates the arguments from..to and tail.
func (sb *sandbox) join(L *lua.LState, from, to int, tail lua.LValue) lua.LValue {
	n := len(lua.LVAsString(tail))
	for i := from; i <= to; i++ {
		n += len(lua.LVAsString(L.Get(i)))
	}
	sb.charge(n)
	var b strings.Builder
	b.Grow(n)
	for i := from; i <= to; i++ {
		b.WriteString(lua.LVAsString(L.Get(i)))
	}
	b.WriteString(lua.LVAsString(tail))
	return lua.LString(b.String())
}

func metaConcat(L *lua.LState, lhs, rhs lua.LValue) lua.LValue {
	fn := L.GetMetaField(lhs, "__concat")
	if fn == lua.LNil {
		fn = L.GetMetaField(rhs, "__concat")
	}
	if fn.Type() != lua.LTFunction {
		bad := lhs
		if lua.LVCanConvToString(lhs) {
			bad = rhs
		}
		L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
	}
	L.Push(fn)
	L.Push(lhs)
	L.Push(rhs)
	L.Call(2, 1)
	ret := L.Get(-1)
	L.Pop(1)
	return ret
}

// rep is string.rep with the result size checked before anything is allocated.
func (sb *sandbox) rep(L *lua.LState) int {
	s := L.CheckString(1)
	n := float64(L.CheckNumber(2))
	if n < 1 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if n*float64(len(s)) > float64(sb.lim.str) {
		L.RaiseError("string.rep: result of %.0f bytes exceeds the limit of %d bytes", n*float64(len(s)),
			sb.lim.str)
	}
	sb.charge(int(n) * len(s))
	L.Push(lua.LString(strings.Repeat(s, int(n))))
	return 1
}

// copying wraps upper, lower and reverse, which copy their input (case mapping may grow invalid UTF-8 up to
// three times; that slack is not counted).
func (sb *sandbox) copying(orig lua.LValue) lua.LGFunction {
	return func(L *lua.LState) int {
		sb.charge(len(L.CheckString(1)))
		return callOriginal(L, orig)
	}
}

// matching wraps the pattern functions: gopher-lua's matcher recurses once per subject byte and cannot be
// interrupted, so subjects and patterns are capped. A plain find (argument plainArg) needs no cap.
func (sb *sandbox) matching(orig lua.LValue, plainArg int) lua.LGFunction {
	return func(L *lua.LState) int {
		plain := plainArg > 0 && lua.LVAsBool(L.Get(plainArg))
		if !plain {
			sb.checkPatternInput(L.CheckString(1), L.CheckString(2))
		}
		return callOriginal(L, orig)
	}
}

func (sb *sandbox) checkPatternInput(subject, pattern string) {
	if len(subject) > sb.lim.patternSubject || len(pattern) > sb.lim.patternSubject {
		sb.L.RaiseError("pattern matching is limited to subjects and patterns of %d bytes", sb.lim.patternSubject)
	}
}

// format wraps string.format: like Lua 5.1 it allows at most two digits of width and precision, so the result
// is bounded by the format and the arguments.
func (sb *sandbox) format(orig lua.LValue) lua.LGFunction {
	return func(L *lua.LState) int {
		f := L.CheckString(1)
		if !formatWidthsOK(f) {
			L.RaiseError("invalid format (width or precision too long)")
		}
		bound := len(f)
		for i := 2; i <= L.GetTop(); i++ {
			bound += len(lua.LVAsString(L.Get(i))) + 512
		}
		sb.charge(bound)
		return callOriginal(L, orig)
	}
}

// formatWidthsOK reports whether every conversion in f has at most two digits of width and of precision.
func formatWidthsOK(f string) bool {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		if i = skipDigits(f, i); i < 0 {
			return false
		}
		if i < len(f) && f[i] == '.' {
			if i = skipDigits(f, i+1); i < 0 {
				return false
			}
		}
	}
	return true
}

// skipDigits returns the index after up to two digits at i, or -1 when there are more.
func skipDigits(f string, i int) int {
	start := i
	for i < len(f) && f[i] >= '0' && f[i] <= '9' {
		i++
	}
	if i-start > 2 {
		return -1
	}
	return i
}

// tableConcat is table.concat building the result once, after checking its size.
func (sb *sandbox) tableConcat(L *lua.LState) int {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	from, to := L.OptInt(3, 1), L.OptInt(4, t.Len())
	var parts []string
	n := 0
	for i := from; i <= to; i++ {
		v := t.RawGet(lua.LNumber(i))
		if !lua.LVCanConvToString(v) {
			L.RaiseError("invalid value (at index %d) in table for 'concat'", i)
		}
		parts = append(parts, lua.LVAsString(v))
		if n += len(parts[len(parts)-1]) + len(sep); n > sb.lim.str {
			sb.charge(n)
		}
	}
	if len(parts) > 0 {
		n -= len(sep)
	}
	sb.charge(n)
	L.Push(lua.LString(strings.Join(parts, sep)))
	return 1
}
