package luavm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// toLua converts a value in json.Unmarshal's generic form: objects become tables with string keys (inserted
// in key order, so pairs is deterministic), arrays 1-based sequences, null nil.
func (sb *sandbox) toLua(v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := sb.L.CreateTable(len(v), 0)
		for i, e := range v {
			t.RawSetInt(i+1, sb.toLua(e))
		}
		t.Metatable = sb.arrayMT
		return t
	case map[string]any:
		return sb.objectToLua(v)
	default:
		return lua.LNil
	}
}

func (sb *sandbox) objectToLua(m map[string]any) *lua.LTable {
	t := sb.L.CreateTable(0, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if m[k] != nil {
			t.RawSetString(k, sb.toLua(m[k]))
		}
	}
	t.Metatable = sb.objectMT
	return t
}

// fromLua converts v to json.Marshal-able Go values within a size budget (string bytes plus a few bytes per
// value: a table can hold many references to one large string, which JSON repeats). An empty table that did not come
// from JSON becomes nil when emptyAsNull is set (so it fits both maps and slices), else an empty object.
func (sb *sandbox) fromLua(v lua.LValue, emptyAsNull bool, budget int) (any, error) {
	e := sb.encoder(emptyAsNull, budget)
	defer sb.keepEncoder(e)
	return e.value(v, 0)
}

// encoder readies the state's encoder for one conversion; its stacks are kept between calls. Conversions do
// not nest: no Lua code runs during one.
func (sb *sandbox) encoder(emptyAsNull bool, budget int) *encoder {
	e := &sb.enc
	e.sb, e.emptyAsNull, e.budget, e.validUTF8 = sb, emptyAsNull, budget, true
	return e
}

// keepEncoder drops the encoder's stacks when they grew too large to keep with a pooled state.
func (sb *sandbox) keepEncoder(e *encoder) {
	if cap(e.path)+cap(e.entries) > maxKeptScratch {
		e.path, e.entries = nil, nil
	}
}

type encoder struct {
	sb          *sandbox
	emptyAsNull bool
	budget      int
	// path holds the tables being converted, outermost first (at most maxNesting).
	path []*lua.LTable
	// entries is a stack of the entries of the tables on path.
	entries []entry
	// validUTF8 is cleared by a string or key that is not valid UTF-8, which JSON would alter.
	validUTF8 bool
}

// checkUTF8 notes a string JSON would not carry unchanged.
func (e *encoder) checkUTF8(s string) {
	if e.validUTF8 && !utf8.ValidString(s) {
		e.validUTF8 = false
	}
}

var errTooLarge = errors.New("value too large")

func (e *encoder) spend(n int) error {
	if e.budget -= n; e.budget < 0 {
		return errTooLarge
	}
	return nil
}

func (e *encoder) value(v lua.LValue, depth int) (any, error) {
	if err := e.spend(8); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LNumber:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("cannot encode the number %v", v)
		}
		return float64(v), nil
	case lua.LString:
		e.checkUTF8(string(v))
		return string(v), e.spend(len(v))
	case *lua.LTable:
		return e.table(v, depth+1)
	default:
		return nil, fmt.Errorf("cannot encode a %s value", v.Type().String())
	}
}

// entry is one key and value of a table; key is nil for the element at index of the array part, so that
// array keys need not be boxed.
type entry struct {
	key   lua.LValue
	index int
	value lua.LValue
}

// collect pushes t's entries: the array part by index, then the hash part in its order. Iterating with Next
// rather than ForEach reuses the keys the table holds instead of boxing each one anew.
func (e *encoder) collect(t *lua.LTable) {
	_, n, ok := tableSizes(t)
	if !ok {
		t.ForEach(func(k, v lua.LValue) { e.entries = append(e.entries, entry{key: k, value: v}) })
		return
	}
	for i := 1; i <= n; i++ {
		if v := t.RawGetInt(i); v != lua.LNil {
			e.entries = append(e.entries, entry{index: i, value: v})
		}
	}
	// Next continues after the last array slot; from nil it starts at the keys when there is none.
	var k, v lua.LValue
	if n == 0 {
		k, v = t.Next(lua.LNil)
	} else {
		k, v = t.Next(lua.LNumber(n))
	}
	for ; k != lua.LNil; k, v = t.Next(k) {
		e.entries = append(e.entries, entry{key: k, value: v})
	}
}

func (e *encoder) table(t *lua.LTable, depth int) (any, error) {
	base, err := e.enter(t, depth)
	if err != nil {
		return nil, err
	}
	defer e.leave(base)
	// Nested tables push their entries after these, so the view stays valid.
	entries := e.entries[base:]
	if n, ok := e.arrayLength(t, entries); ok {
		return e.array(entries, n, depth)
	}
	if len(entries) == 0 && t.Metatable != e.sb.objectMT && e.emptyAsNull {
		return nil, nil
	}
	return e.object(entries, depth)
}

// enter puts t on the path and pushes its entries, from index base of e.entries; leave(base) takes them off.
func (e *encoder) enter(t *lua.LTable, depth int) (base int, err error) {
	if slices.Contains(e.path, t) {
		return 0, errors.New("cannot encode a table that contains itself")
	}
	if depth > maxNesting {
		return 0, fmt.Errorf("cannot encode tables nested more than %d levels", maxNesting)
	}
	e.path = append(e.path, t)
	base = len(e.entries)
	e.collect(t)
	return base, nil
}

func (e *encoder) leave(base int) {
	e.path[len(e.path)-1] = nil
	e.path = e.path[:len(e.path)-1]
	clear(e.entries[base:])
	e.entries = e.entries[:base]
}

// arrayLength decides whether t goes out as an array and how long: a table from a JSON array whenever its
// keys allow, another table when its keys are 1..n with few holes (nil elements become null).
func (e *encoder) arrayLength(t *lua.LTable, entries []entry) (int, bool) {
	if t.Metatable == e.sb.objectMT || (len(entries) == 0 && t.Metatable != e.sb.arrayMT) {
		return 0, false
	}
	highest := 0.0
	for _, en := range entries {
		if en.key == nil {
			highest = max(highest, float64(en.index))
			continue
		}
		k, ok := en.key.(lua.LNumber)
		if !ok || float64(k) < 1 || float64(k) != math.Trunc(float64(k)) {
			return 0, false
		}
		highest = max(highest, float64(k))
	}
	n := len(entries)
	if t.Metatable != e.sb.arrayMT && highest > float64(max(2*n, 10)) {
		return 0, false
	}
	if highest > float64(e.budget/8) {
		return 0, false
	}
	return int(highest), true
}

func (e *encoder) array(entries []entry, n int, depth int) (any, error) {
	if err := e.spend(8 * n); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for _, en := range entries {
		v, err := e.value(en.value, depth)
		if err != nil {
			return nil, err
		}
		i := en.index
		if en.key != nil {
			i = int(en.key.(lua.LNumber))
		}
		out[i-1] = v
	}
	return out, nil
}

func (e *encoder) object(entries []entry, depth int) (any, error) {
	out := make(map[string]any, len(entries))
	for _, en := range entries {
		k, err := e.key(en)
		if err != nil {
			return nil, err
		}
		if out[k], err = e.value(en.value, depth); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// key is an entry's key as an object member, charged and checked.
func (e *encoder) key(en entry) (string, error) {
	k, err := objectKey(en)
	if err != nil {
		return "", err
	}
	if err := e.spend(len(k)); err != nil {
		return "", err
	}
	e.checkUTF8(k)
	return k, nil
}

// objectKey names an entry's key in JSON: strings as they are, numbers in Lua's notation.
func objectKey(en entry) (string, error) {
	if en.key == nil {
		return strconv.Itoa(en.index), nil
	}
	switch k := en.key.(type) {
	case lua.LString:
		return string(k), nil
	case lua.LNumber:
		if f := float64(k); f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return k.String(), nil
	default:
		return "", fmt.Errorf("cannot encode a table key of type %s", k.Type().String())
	}
}
