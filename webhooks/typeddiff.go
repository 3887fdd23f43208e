package webhooks

import (
	"cmp"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gomodules.xyz/jsonpatch/v2"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// errNotDirect says a change needs the strategic merge: the typed walk cannot tell which raw element it
// belongs to (a list element removed or reordered, a list of unnamed elements changed within).
var errNotDirect = errors.New("the change needs a strategic merge")

// directPatch is the JSON patch that makes raw's object what out is to cur, found by walking the typed values
// side by side: only the members that differ are written, so every field raw holds that the types do not know
// stays where it is. Elements of a list of named objects are matched by name, as the strategic merge matches
// containers, volumes and env; a list of other elements may only grow at either end. Anything else is
// errNotDirect. It does what rawPatch does without converting, merging and diffing whole objects, which the
// pod webhook would pay on every pod creation.
func directPatch[T any](raw []byte, cur, out *T) ([]jsonpatch.JsonPatchOperation, error) {
	if t := reflect.TypeFor[T](); t.Kind() != reflect.Struct || opaque(t) {
		return nil, errNotDirect
	}
	d := &differ{raw: raw}
	if err := d.object(pointer{}, reflect.ValueOf(cur).Elem(), reflect.ValueOf(out).Elem()); err != nil {
		return nil, err
	}
	return d.ops, nil
}

// differ collects the operations of one walk; it decodes raw only when a member's presence in it cannot be
// read off the typed value (an empty struct: absent, or holding only fields no type knows).
type differ struct {
	raw     []byte
	doc     any
	decoded bool
	ops     []jsonpatch.JsonPatchOperation
}

// pointer locates a member twice: in the patch, whose paths count the list elements inserted before it, and
// in raw, which holds the elements as they were.
type pointer struct{ op, raw string }

// key is an object's member, its name escaped.
func (p pointer) key(name string) pointer {
	return pointer{op: p.op + "/" + name, raw: p.raw + "/" + name}
}

// at is element i of raw's list, j once the patch inserted its new elements.
func (p pointer) at(i, j int) pointer {
	return pointer{op: p.op + "/" + strconv.Itoa(j), raw: p.raw + "/" + strconv.Itoa(i)}
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// opaque values are compared and written whole: they encode themselves (quantities, times, int-or-strings)
// or are not objects.
func opaque(t reflect.Type) bool {
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice:
		return false
	case reflect.Pointer:
		return opaque(t.Elem())
	}
	return true
}

// add writes v at path, by its address where it has one: encoded the same, without copying it.
func (d *differ) add(path string, v reflect.Value) {
	d.ops = append(d.ops, jsonpatch.NewOperation("add", path, boxed(v)))
}

func boxed(v reflect.Value) any {
	if v.CanAddr() {
		return v.Addr().Interface()
	}
	return v.Interface()
}

// equal compares by address where both have one, so that comparing a pod's spec copies neither.
func equal(a, b reflect.Value) bool {
	if a.CanAddr() && b.CanAddr() {
		return reflect.DeepEqual(a.Addr().Interface(), b.Addr().Interface())
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

func (d *differ) remove(path string) {
	d.ops = append(d.ops, jsonpatch.NewOperation("remove", path, nil))
}

// object diffs two values of a struct type that raw holds as an object at p.
func (d *differ) object(p pointer, a, b reflect.Value) error {
	for _, f := range fieldsOf(a.Type()) {
		fa, fb := a.Field(f.index), b.Field(f.index)
		var err error
		switch {
		case !f.direct:
			err = errNotDirect
		case f.inline:
			err = d.object(p, fa, fb)
		default:
			err = d.member(p.key(f.name), fa, fb, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// jsonMember is how encoding/json encodes one field of a struct.
type jsonMember struct {
	index int
	// name is escaped for a JSON pointer; an inline field's fields are its struct's.
	name, opts string
	inline     bool
	opaque     bool
	// direct is false for the embeddings the walk leaves to the strategic merge: pointers, unexported structs.
	direct bool
}

// fieldsByType caches fieldsOf: the pod webhook walks the same few types on every pod creation.
var fieldsByType sync.Map

func fieldsOf(t reflect.Type) []jsonMember {
	if fs, ok := fieldsByType.Load(t); ok {
		return fs.([]jsonMember)
	}
	var out []jsonMember
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, skip := jsonField(f)
		if skip {
			continue
		}
		inline := name == ""
		out = append(out, jsonMember{index: i, name: escapePointer(name), opts: opts, inline: inline, opaque: opaque(f.Type),
			direct: !inline || f.IsExported() && f.Type.Kind() == reflect.Struct})
	}
	fieldsByType.Store(t, out)
	return out
}

// jsonField reads a field's JSON name and options as encoding/json does; an empty name is an embedded field
// whose fields are inlined.
func jsonField(f reflect.StructField) (name, opts string, skip bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() && !f.Anonymous {
		return "", "", true
	}
	name, opts, _ = strings.Cut(tag, ",")
	if name == "" && !f.Anonymous {
		name = f.Name
	}
	return name, opts, false
}

// member writes the change of one object member: removed when out's encoding omits it, else written whole or,
// where raw holds it as an object or a list of the same shape, walked into.
func (d *differ) member(p pointer, a, b reflect.Value, f jsonMember) error {
	if walkInPlace(a, b, f) {
		return d.walk(p, a, b)
	}
	if equal(a, b) {
		return nil
	}
	if omitted(b, f.opts) {
		if !omitted(a, f.opts) {
			d.remove(p.op)
		}
		return nil
	}
	if f.opaque || nilValue(b) {
		d.add(p.op, b)
		return nil
	}
	present, err := d.present(p.raw, a)
	if err != nil || !present {
		d.add(p.op, b)
		return err
	}
	return d.walk(p, a, b)
}

// walkInPlace tells a struct that raw holds, or two pointers to one, which the walk compares field by field
// rather than whole first and then again by field.
func walkInPlace(a, b reflect.Value, f jsonMember) bool {
	if f.opaque {
		return false
	}
	switch a.Kind() {
	case reflect.Struct:
		return !a.IsZero() && !omitted(b, f.opts)
	case reflect.Pointer:
		return !a.IsNil() && !b.IsNil() && a.Elem().Kind() == reflect.Struct
	}
	return false
}

func nilValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		return v.IsNil()
	}
	return false
}

// omitted reports whether encoding/json leaves the member out of the object.
func omitted(v reflect.Value, opts string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == "omitzero" && v.IsZero() || o == "omitempty" && emptyValue(v) {
			return true
		}
	}
	return false
}

func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// present reports whether raw holds the member at path as an object or list to walk into. A non-nil pointer,
// map or slice was decoded from one, a struct with any field set too; only an empty struct needs raw itself.
func (d *differ) present(path string, a reflect.Value) (bool, error) {
	switch a.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		return !a.IsNil(), nil
	}
	if !a.IsZero() {
		return true, nil
	}
	doc, err := d.lookup(path)
	if err != nil {
		return false, err
	}
	_, isObject := doc.(map[string]any)
	return isObject, nil
}

// lookup reads the value at a JSON pointer of raw, nil when there is none.
func (d *differ) lookup(path string) (any, error) {
	if !d.decoded {
		d.decoded = true
		if err := utiljson.Unmarshal(d.raw, &d.doc); err != nil {
			return nil, err
		}
	}
	doc := d.doc
	for _, token := range strings.Split(path, "/")[1:] {
		doc = child(doc, pointerUnescaper.Replace(token))
	}
	return doc, nil
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// child is an object's member or a list's element, nil when there is none.
func child(doc any, token string) any {
	switch n := doc.(type) {
	case map[string]any:
		return n[token]
	case []any:
		if i, err := strconv.Atoi(token); err == nil && i >= 0 && i < len(n) {
			return n[i]
		}
	}
	return nil
}

// walk diffs two values raw holds at p, as an object or a list.
func (d *differ) walk(p pointer, a, b reflect.Value) error {
	if a.Kind() == reflect.Pointer {
		a, b = a.Elem(), b.Elem()
	}
	switch a.Kind() {
	case reflect.Map:
		return d.mapping(p.op, a, b)
	case reflect.Slice:
		return d.list(p, a, b)
	case reflect.Struct:
		return d.object(p, a, b)
	}
	return errNotDirect
}

// mapping writes a map's keys removed, added and changed, in key order.
func (d *differ) mapping(path string, a, b reflect.Value) error {
	if a.Type().Key().Kind() != reflect.String {
		return errNotDirect
	}
	for _, k := range sortedKeys(a) {
		if !b.MapIndex(k).IsValid() {
			d.remove(path + "/" + escapePointer(k.String()))
		}
	}
	for _, k := range sortedKeys(b) {
		va, vb := a.MapIndex(k), b.MapIndex(k)
		if !va.IsValid() || !equal(va, vb) {
			d.add(path+"/"+escapePointer(k.String()), vb)
		}
	}
	return nil
}

func sortedKeys(m reflect.Value) []reflect.Value {
	keys := m.MapKeys()
	slices.SortFunc(keys, func(x, y reflect.Value) int { return cmp.Compare(x.String(), y.String()) })
	return keys
}

// list writes a list's change: a list of scalars whole, a list of named objects by name, any other list
// only grown at either end.
func (d *differ) list(p pointer, a, b reflect.Value) error {
	elem := a.Type().Elem()
	switch {
	case opaque(elem):
		d.add(p.op, b)
		return nil
	}
	if name := nameField(elem); name >= 0 {
		if index, ok := nameIndex(b, name); ok && namedList(a, name) {
			return d.namedList(p, a, b, name, index)
		}
	}
	return d.grownList(p.op, a, b)
}

// grownList writes the elements added before or after the elements a held.
func (d *differ) grownList(path string, a, b reflect.Value) error {
	n, m := a.Len(), b.Len()
	switch {
	case n < m && equal(a, b.Slice(0, n)):
		for i := n; i < m; i++ {
			d.add(path+"/"+strconv.Itoa(i), b.Index(i))
		}
	case n < m && equal(a, b.Slice(m-n, m)):
		for i := range m - n {
			d.add(path+"/"+strconv.Itoa(i), b.Index(i))
		}
	default:
		return errNotDirect
	}
	return nil
}

// namedList matches the elements of two lists of objects by name: every element of a must still be in b, in
// the same order. New elements are inserted at their places first, then the kept ones walked into.
func (d *differ) namedList(p pointer, a, b reflect.Value, name int, index map[string]int) error {
	at, err := keptAt(a, name, index)
	if err != nil {
		return err
	}
	kept := make([]bool, b.Len())
	for _, j := range at {
		kept[j] = true
	}
	for j := range b.Len() {
		if !kept[j] {
			d.add(p.op+"/"+strconv.Itoa(j), b.Index(j))
		}
	}
	for i, j := range at {
		if err := d.walk(p.at(i, j), a.Index(i), b.Index(j)); err != nil {
			return err
		}
	}
	return nil
}

// keptAt is, for each element of a, the index of its namesake in b (index: b's elements by name);
// errNotDirect when one is gone or the order changed.
func keptAt(a reflect.Value, name int, index map[string]int) ([]int, error) {
	at := make([]int, a.Len())
	for i := range a.Len() {
		j, ok := index[elementName(a.Index(i), name)]
		if !ok || i > 0 && j <= at[i-1] {
			return nil, errNotDirect
		}
		at[i] = j
	}
	return at, nil
}

// namedList reports whether l's elements are objects (or non-nil pointers to them) whose field name (see
// nameField) is set on each and the same on none two.
func namedList(l reflect.Value, name int) bool {
	_, ok := nameIndex(l, name)
	return ok
}

// nameIndex is l's elements' indexes by name, when l is a named list (see namedList).
func nameIndex(l reflect.Value, name int) (map[string]int, bool) {
	if name < 0 {
		return nil, false
	}
	index := make(map[string]int, l.Len())
	for i := range l.Len() {
		n := elementName(l.Index(i), name)
		if _, dup := index[n]; n == "" || dup {
			return nil, false
		}
		index[n] = i
	}
	return index, true
}

// nameField is the index of the string field that elements of type t (objects or pointers to them) encode as
// "name", or -1.
func nameField(t reflect.Type) int {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return -1
	}
	for _, f := range fieldsOf(t) {
		if f.name == "name" && t.Field(f.index).Type.Kind() == reflect.String {
			return f.index
		}
	}
	return -1
}

// elementName is the name field (nameField's index) of an element, "" for a nil pointer.
func elementName(v reflect.Value, name int) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	return v.Field(name).String()
}
