package luavm

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// maxReadDepth is encoding/json's nesting limit; deeper documents are left to it so that it reports them.
const maxReadDepth = 10000

// jsonToLua converts a JSON document as toLua converts what json.Unmarshal makes of it, without building the
// Go value in between. The reader handles the JSON encoding/json produces; whatever it does not handle
// exactly (string escapes aside, which encoding/json decodes for it) sends the document through
// json.Unmarshal and toLua, which also report invalid documents.
func (sb *sandbox) jsonToLua(data []byte) (lua.LValue, error) {
	if v, ok := sb.readJSON(data); ok {
		return v, nil
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return lua.LNil, err
	}
	return sb.toLua(generic), nil
}

// readJSON reads data directly, or reports false when it leaves the document to encoding/json.
func (sb *sandbox) readJSON(data []byte) (lua.LValue, bool) {
	r := &jsonReader{sb: sb, data: data, members: sb.scratch.members[:0], elems: sb.scratch.elems[:0]}
	v, ok := r.value()
	if ok {
		r.skipSpace()
		ok = r.pos == len(r.data)
	}
	if cap(r.members)+cap(r.elems) <= maxKeptScratch {
		sb.scratch.members, sb.scratch.elems = r.members[:0], r.elems[:0]
	}
	return v, ok
}

// maxKeptScratch bounds the stacks a pooled state keeps, so one huge document does not stay with it.
const maxKeptScratch = 4096

// scratch holds the readers' stacks between calls.
type scratch struct {
	members       []member
	elems         []lua.LValue
	pending       []pendingMember
	pendingValues []pendingValue
}

type member struct {
	key   string
	value lua.LValue
}

type jsonReader struct {
	sb    *sandbox
	data  []byte
	pos   int
	depth int
	// members and elems are stacks of the objects and arrays being read.
	members []member
	elems   []lua.LValue
}

func (r *jsonReader) skipSpace() {
	for r.pos < len(r.data) && strings.IndexByte(" \t\r\n", r.data[r.pos]) >= 0 {
		r.pos++
	}
}

// next skips white space and reports whether c comes next, consuming it if so.
func (r *jsonReader) next(c byte) bool {
	r.skipSpace()
	if r.pos < len(r.data) && r.data[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

func (r *jsonReader) value() (lua.LValue, bool) {
	r.skipSpace()
	if r.pos >= len(r.data) {
		return nil, false
	}
	switch r.data[r.pos] {
	case '{', '[':
		return r.nested()
	case '"':
		s, ok := r.str()
		return lua.LString(s), ok
	case 't':
		return r.literal("true", lua.LTrue)
	case 'f':
		return r.literal("false", lua.LFalse)
	case 'n':
		return r.literal("null", lua.LNil)
	default:
		return r.number()
	}
}

// nested reads an object or an array.
func (r *jsonReader) nested() (lua.LValue, bool) {
	if r.depth++; r.depth > maxReadDepth {
		return nil, false
	}
	open := r.data[r.pos]
	r.pos++
	var t *lua.LTable
	var ok bool
	if open == '{' {
		t, ok = r.object()
	} else {
		t, ok = r.array()
	}
	r.depth--
	return t, ok
}

// object reads the members after '{' into a table with the keys inserted in sorted order (so pairs is
// deterministic); like json.Unmarshal into a map, the last of duplicate keys wins, and null members are left
// out.
func (r *jsonReader) object() (*lua.LTable, bool) {
	base := len(r.members)
	defer func() {
		clear(r.members[base:])
		r.members = r.members[:base]
	}()
	if !r.next('}') {
		for {
			m, ok := r.member()
			if !ok {
				return nil, false
			}
			r.members = append(r.members, m)
			if r.next('}') {
				break
			}
			if !r.next(',') {
				return nil, false
			}
		}
	}
	return r.sb.objectTable(r.members[base:]), true
}

func (r *jsonReader) member() (member, bool) {
	r.skipSpace()
	if r.pos >= len(r.data) || r.data[r.pos] != '"' {
		return member{}, false
	}
	key, ok := r.str()
	if !ok || !r.next(':') {
		return member{}, false
	}
	v, ok := r.value()
	return member{key, v}, ok
}

// objectTable builds the table of an object's members, or refills the previous obj's table that held the
// same keys; it sorts and compacts members in place.
func (sb *sandbox) objectTable(members []member) *lua.LTable {
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	members = settled(members)
	t := sb.rec.object(members)
	if t == nil {
		t = sb.L.CreateTable(0, len(members))
	}
	for _, m := range members {
		t.RawSetString(m.key, m.value)
	}
	t.Metatable = sb.objectMT
	sb.rec.keepObject(t, members)
	return t
}

// settled keeps of sorted members what the table holds, in place: like json.Unmarshal into a map, the last of
// duplicate keys wins, and null members are left out.
func settled(members []member) []member {
	out := members[:0]
	for i, m := range members {
		last := i == len(members)-1 || members[i+1].key != m.key
		if last && m.value != lua.LNil {
			out = append(out, m)
		}
	}
	return out
}

// array reads the elements after '[' into a sequence, nulls included as nil.
func (r *jsonReader) array() (*lua.LTable, bool) {
	base := len(r.elems)
	defer func() {
		clear(r.elems[base:])
		r.elems = r.elems[:base]
	}()
	if !r.next(']') {
		for {
			v, ok := r.value()
			if !ok {
				return nil, false
			}
			r.elems = append(r.elems, v)
			if r.next(']') {
				break
			}
			if !r.next(',') {
				return nil, false
			}
		}
	}
	return r.sb.arrayTable(r.elems[base:]), true
}

// arrayTable builds the sequence of elems, nils included, or refills an array of the previous obj.
func (sb *sandbox) arrayTable(elems []lua.LValue) *lua.LTable {
	t := sb.rec.array(len(elems))
	if t == nil {
		t = sb.L.CreateTable(len(elems), 0)
	}
	for i, e := range elems {
		t.RawSetInt(i+1, e)
	}
	t.Metatable = sb.arrayMT
	sb.rec.keepArray(t)
	return t
}

func (r *jsonReader) literal(word string, v lua.LValue) (lua.LValue, bool) {
	if len(r.data)-r.pos < len(word) || string(r.data[r.pos:r.pos+len(word)]) != word {
		return nil, false
	}
	r.pos += len(word)
	return v, true
}

// str reads a string literal. Literals without escapes that are valid UTF-8 are taken as they are; others
// are decoded by encoding/json, which replaces invalid UTF-8 and bad surrogates its own way.
func (r *jsonReader) str() (string, bool) {
	start := r.pos
	escaped, ascii := false, true
	for i := start + 1; i < len(r.data); i++ {
		switch c := r.data[i]; {
		case c == '"':
			r.pos = i + 1
			return unquote(r.data[start:r.pos], escaped, ascii)
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

func unquote(lit []byte, escaped, ascii bool) (string, bool) {
	body := lit[1 : len(lit)-1]
	if !escaped && (ascii || utf8.Valid(body)) {
		return string(body), true
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", false
	}
	return s, true
}

// number reads a number in JSON's grammar as json.Unmarshal does, as a float64; one out of range is left to
// json.Unmarshal to report.
func (r *jsonReader) number() (lua.LValue, bool) {
	start := r.pos
	end := numberEnd(r.data, start)
	if end < 0 {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(r.data[start:end]), 64)
	if err != nil {
		return nil, false
	}
	r.pos = end
	return lua.LNumber(f), true
}

// numberEnd returns the end of the number starting at i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// or -1 when there is none.
func numberEnd(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(data, i)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if i = digits(data, i+1); i < 0 {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		i = digits(data, i)
	}
	return i
}

// digits returns the end of the run of at least one digit at i, or -1.
func digits(data []byte, i int) int {
	start := i
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
