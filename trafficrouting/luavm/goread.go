package luavm

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// maxGoDepth bounds the nesting goToLua follows; deeper values (or reference cycles, which json.Marshal
// reports) take the JSON path.
const maxGoDepth = 1000

// goToLua converts v to the value jsonToLua makes of json.Marshal's encoding of v, without the JSON in
// between: the encoding's copies of every string and the reflection json.Marshal does per map entry were most
// of what converting an input allocated beside the tables. It handles booleans, numbers, strings that are
// valid UTF-8, pointers, interfaces, slices, arrays, maps with string keys and structs without embedded
// fields whose tags use no option but omitempty. ok is false for anything else (a type with its own JSON or
// text encoding, json.Number, []byte, NaN, a deeper nesting), and the caller takes the JSON path, which
// either gives the same value or reports why JSON cannot carry v.
func (sb *sandbox) goToLua(v any) (lua.LValue, bool) {
	c := &goReader{sb: sb, members: sb.scratch.members[:0], elems: sb.scratch.elems[:0],
		pending: sb.scratch.pending[:0], pendingValues: sb.scratch.pendingValues[:0]}
	lv, ok := c.value(v, 0)
	if cap(c.members)+cap(c.elems)+cap(c.pending)+cap(c.pendingValues) <= maxKeptScratch {
		sb.scratch.members, sb.scratch.elems = c.members[:0], c.elems[:0]
		sb.scratch.pending, sb.scratch.pendingValues = c.pending[:0], c.pendingValues[:0]
	}
	return lv, ok
}

type goReader struct {
	sb *sandbox
	// members and elems are stacks of the objects and arrays being converted, as in jsonReader.
	members []member
	elems   []lua.LValue
	// pending and pendingValues are stacks of the members of the maps being converted, sorted before
	// their values are.
	pending       []pendingMember
	pendingValues []pendingValue
}

type pendingMember struct {
	key   string
	value any
}

type pendingValue struct {
	key   string
	value reflect.Value
}

// value converts the types json.Unmarshal produces and the common map types directly, others by reflection.
func (c *goReader) value(v any, depth int) (lua.LValue, bool) {
	if depth > maxGoDepth {
		return nil, false
	}
	switch v := v.(type) {
	case nil:
		return lua.LNil, true
	case string:
		return goString(v)
	case bool:
		return lua.LBool(v), true
	case float64:
		return goFloat(v)
	case int64:
		return lua.LNumber(float64(v)), true
	case int:
		return lua.LNumber(float64(v)), true
	case int32:
		return lua.LNumber(float64(v)), true
	case map[string]any:
		return c.anyMap(v, depth)
	case map[string]string:
		return c.stringMap(v)
	case []any:
		return c.anySlice(v, depth)
	}
	return c.reflected(reflect.ValueOf(v), depth)
}

// anyMap converts m's members in key order, so that tables are built in an order that depends only on the
// input's shape (see recycler).
func (c *goReader) anyMap(m map[string]any, depth int) (lua.LValue, bool) {
	if m == nil {
		return lua.LNil, true
	}
	base := len(c.pending)
	for k, e := range m {
		c.pending = append(c.pending, pendingMember{key: k, value: e})
	}
	slices.SortFunc(c.pending[base:], func(a, b pendingMember) int { return strings.Compare(a.key, b.key) })
	membersBase := len(c.members)
	// Nested maps push above these; index rather than range, as the stack may move.
	for i := base; i < base+len(m); i++ {
		p := c.pending[i]
		ev, ok := c.value(p.value, depth+1)
		if !ok || !utf8.ValidString(p.key) {
			return c.abandon()
		}
		c.members = append(c.members, member{p.key, ev})
	}
	clear(c.pending[base:])
	c.pending = c.pending[:base]
	return c.object(membersBase), true
}

func (c *goReader) stringMap(m map[string]string) (lua.LValue, bool) {
	if m == nil {
		return lua.LNil, true
	}
	base := len(c.members)
	for k, e := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(e) {
			return c.abandon()
		}
		c.members = append(c.members, member{k, lua.LString(e)})
	}
	return c.object(base), true
}

func (c *goReader) anySlice(l []any, depth int) (lua.LValue, bool) {
	if l == nil {
		return lua.LNil, true
	}
	base := len(c.elems)
	for _, e := range l {
		ev, ok := c.value(e, depth+1)
		if !ok {
			return c.abandon()
		}
		c.elems = append(c.elems, ev)
	}
	return c.array(base), true
}

func (c *goReader) reflected(rv reflect.Value, depth int) (lua.LValue, bool) {
	if depth > maxGoDepth {
		return nil, false
	}
	if !rv.IsValid() {
		return lua.LNil, true
	}
	info := typeInfoOf(rv.Type())
	if !info.direct {
		return nil, false
	}
	switch rv.Kind() {
	case reflect.Bool:
		return lua.LBool(rv.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return lua.LNumber(float64(rv.Int())), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return lua.LNumber(float64(rv.Uint())), true
	case reflect.Float32:
		return goFloat32(rv.Float())
	case reflect.Float64:
		return goFloat(rv.Float())
	case reflect.String:
		return goString(rv.String())
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			return lua.LNil, true
		}
		e := rv.Elem()
		if k := e.Kind(); k == reflect.Map || k == reflect.Pointer {
			// Pointer-shaped: Interface does not allocate, and the common maps take value's fast paths.
			return c.value(e.Interface(), depth+1)
		}
		return c.reflected(e, depth+1)
	case reflect.Map:
		return c.reflectedMap(rv, depth)
	case reflect.Slice:
		if rv.IsNil() {
			return lua.LNil, true
		}
		return c.reflectedArray(rv, depth)
	case reflect.Array:
		return c.reflectedArray(rv, depth)
	case reflect.Struct:
		return c.reflectedStruct(rv, info, depth)
	default:
		return nil, false
	}
}

func (c *goReader) reflectedMap(rv reflect.Value, depth int) (lua.LValue, bool) {
	if rv.IsNil() {
		return lua.LNil, true
	}
	if rv.CanInterface() {
		switch m := rv.Interface().(type) {
		case map[string]any, map[string]string:
			return c.value(m, depth)
		}
	}
	// In key order, as in anyMap.
	base := len(c.pendingValues)
	for it := rv.MapRange(); it.Next(); {
		c.pendingValues = append(c.pendingValues, pendingValue{key: it.Key().String(), value: it.Value()})
	}
	slices.SortFunc(c.pendingValues[base:], func(a, b pendingValue) int { return strings.Compare(a.key, b.key) })
	membersBase := len(c.members)
	for i := base; i < base+rv.Len(); i++ {
		p := c.pendingValues[i]
		ev, ok := c.reflected(p.value, depth+1)
		if !ok || !utf8.ValidString(p.key) {
			return c.abandon()
		}
		c.members = append(c.members, member{p.key, ev})
	}
	clear(c.pendingValues[base:])
	c.pendingValues = c.pendingValues[:base]
	return c.object(membersBase), true
}

func (c *goReader) reflectedArray(rv reflect.Value, depth int) (lua.LValue, bool) {
	base := len(c.elems)
	for i := range rv.Len() {
		ev, ok := c.reflected(rv.Index(i), depth+1)
		if !ok {
			return c.abandon()
		}
		c.elems = append(c.elems, ev)
	}
	return c.array(base), true
}

func (c *goReader) reflectedStruct(rv reflect.Value, info *goTypeInfo, depth int) (lua.LValue, bool) {
	base := len(c.members)
	for _, f := range info.fields {
		fv := rv.Field(f.index)
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		ev, ok := c.reflected(fv, depth+1)
		if !ok {
			return c.abandon()
		}
		c.members = append(c.members, member{f.name, ev})
	}
	return c.object(base), true
}

// object builds the table of the members above base and pops them.
func (c *goReader) object(base int) lua.LValue {
	t := c.sb.objectTable(c.members[base:])
	clear(c.members[base:])
	c.members = c.members[:base]
	return t
}

// array builds the table of the elements above base and pops them.
func (c *goReader) array(base int) lua.LValue {
	t := c.sb.arrayTable(c.elems[base:])
	clear(c.elems[base:])
	c.elems = c.elems[:base]
	return t
}

// abandon gives up the whole conversion and empties the stacks.
func (c *goReader) abandon() (lua.LValue, bool) {
	clear(c.members)
	c.members = c.members[:0]
	clear(c.elems)
	c.elems = c.elems[:0]
	clear(c.pending)
	c.pending = c.pending[:0]
	clear(c.pendingValues)
	c.pendingValues = c.pendingValues[:0]
	return nil, false
}

// goString is JSON's string: encoding/json replaces invalid UTF-8, so such strings take the JSON path.
func goString(s string) (lua.LValue, bool) {
	if !utf8.ValidString(s) {
		return nil, false
	}
	return lua.LString(s), true
}

// goFloat is a float64 read back from JSON, which carries it exactly; JSON has no NaN or infinities.
func goFloat(f float64) (lua.LValue, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	return lua.LNumber(f), true
}

// goFloat32 is a float32 read back from JSON: encoding/json writes the shortest decimal that identifies the
// float32, and the reader parses that as a float64.
func goFloat32(f float64) (lua.LValue, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	parsed, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
	if err != nil {
		return nil, false
	}
	return lua.LNumber(parsed), true
}

// isEmptyValue is omitempty's test in encoding/json.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	default:
		return false
	}
}

// goTypeInfo is what goToLua needs to know of a type; direct is false when values of the type take the JSON
// path.
type goTypeInfo struct {
	direct bool
	// fields are a struct's encoded fields in order.
	fields []goField
}

type goField struct {
	index     int
	name      string
	omitEmpty bool
}

var (
	goTypes          sync.Map // reflect.Type -> *goTypeInfo
	jsonMarshaler    = reflect.TypeFor[json.Marshaler]()
	textMarshaler    = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumber       = reflect.TypeFor[json.Number]()
	convertibleKinds = map[reflect.Kind]bool{
		reflect.Bool: true, reflect.Int: true, reflect.Int8: true, reflect.Int16: true, reflect.Int32: true,
		reflect.Int64: true, reflect.Uint: true, reflect.Uint8: true, reflect.Uint16: true, reflect.Uint32: true,
		reflect.Uint64: true, reflect.Uintptr: true, reflect.Float32: true, reflect.Float64: true,
		reflect.String: true, reflect.Interface: true, reflect.Pointer: true, reflect.Map: true,
		reflect.Slice: true, reflect.Array: true, reflect.Struct: true,
	}
)

func typeInfoOf(t reflect.Type) *goTypeInfo {
	if info, ok := goTypes.Load(t); ok {
		return info.(*goTypeInfo)
	}
	info, _ := goTypes.LoadOrStore(t, newTypeInfo(t))
	return info.(*goTypeInfo)
}

func newTypeInfo(t reflect.Type) *goTypeInfo {
	ownEncoding := t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		(t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
			(reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)))
	switch {
	case ownEncoding || !convertibleKinds[t.Kind()] || t == jsonNumber:
		return &goTypeInfo{}
	case t.Kind() == reflect.Map && t.Key().Kind() != reflect.String:
		return &goTypeInfo{}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		// []byte is base64 unless the element type has its own encoding; both take the JSON path.
		return &goTypeInfo{}
	case t.Kind() == reflect.Struct:
		fields, ok := structFields(t)
		return &goTypeInfo{direct: ok, fields: fields}
	default:
		return &goTypeInfo{direct: true}
	}
}

// structFields lists the fields encoding/json encodes for a struct without embedded fields; ok is false for
// a struct whose encoding needs more of its rules: embedded fields, tag options other than omitempty, names
// it would reject, or two fields of one name.
func structFields(t reflect.Type) ([]goField, bool) {
	var fields []goField
	seen := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		f := goField{index: i, name: name}
		for opt := range strings.SplitSeq(opts, ",") {
			switch opt {
			case "":
			case "omitempty":
				f.omitEmpty = true
			default:
				return nil, false
			}
		}
		if f.name == "" {
			f.name = sf.Name
		} else if !plainName(f.name) {
			return nil, false
		}
		if seen[f.name] {
			return nil, false
		}
		seen[f.name] = true
		fields = append(fields, f)
	}
	return fields, true
}

// plainName reports whether a tag name is one encoding/json surely takes as it is: letters, digits and a few
// punctuation characters (its own rule allows more; names outside this take the JSON path).
func plainName(name string) bool {
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_./", r) {
			return false
		}
	}
	return true
}
