package luavm

import (
	"encoding/json"
	"fmt"
	"reflect"

	lua "github.com/yuin/gopher-lua"
)

// returned is a script's converted return value; a nil value stands for an empty table without a JSON
// origin.
type returned struct {
	value any
	// validUTF8 tells whether every string and key is valid UTF-8, which JSON carries unchanged.
	validUTF8 bool
}

// decodeResult fills out from the script's result as json.Unmarshal would from the result's JSON. The common
// targets are filled directly when that gives the same outcome; everything else takes the JSON round trip.
func decodeResult(r returned, out any) error {
	if r.validUTF8 && storeDirectly(r.value, out) {
		return nil
	}
	return decodeJSON(r.value, out)
}

// decodeJSON fills out from v through its JSON.
func decodeJSON(v any, out any) error {
	data := emptyJSONFor(out)
	if v != nil {
		var err error
		if data, err = json.Marshal(v); err != nil {
			return fmt.Errorf("%w: encoding the return value: %w", ErrScript, err)
		}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: decoding the return value: %w", ErrScript, err)
	}
	return nil
}

// emptyJSONFor is the JSON of an empty value of the kind out points to.
func emptyJSONFor(out any) []byte {
	t := reflect.TypeOf(out)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return []byte("null")
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return []byte("[]")
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct || t.Kind() == reflect.Interface:
		return []byte("{}")
	default:
		return []byte("null")
	}
}

// storeDirectly stores v (in json.Unmarshal's generic form, so already what JSON would decode into an any)
// into a *map[string]any, *map[string]string or *any, and reports false, leaving out untouched, when out is
// another type or v does not fit it; Unmarshal then reports the mismatch as before.
func storeDirectly(v any, out any) bool {
	switch out := out.(type) {
	case *map[string]any:
		return storeMap(v, out, func(e any) (any, bool) { return e, true })
	case *map[string]string:
		return storeMap(v, out, stringOrNull)
	case *any:
		return storeAny(v, out)
	default:
		return false
	}
}

// storeMap adds v's members to *out, making the map when it is nil; like Unmarshal it keeps other entries.
func storeMap[E any](v any, out *map[string]E, elem func(any) (E, bool)) bool {
	obj, ok := v.(map[string]any)
	if out == nil || (!ok && v != nil) {
		return false
	}
	for _, e := range obj {
		if _, ok := elem(e); !ok {
			return false
		}
	}
	if *out == nil {
		*out = make(map[string]E, len(obj))
	}
	for k, e := range obj {
		(*out)[k], _ = elem(e)
	}
	return true
}

// stringOrNull is what Unmarshal makes of a map[string]string member: strings as they are, null as "".
func stringOrNull(e any) (string, bool) {
	switch e := e.(type) {
	case string:
		return e, true
	case nil:
		return "", true
	default:
		return "", false
	}
}

// storeAny replaces *out unless it holds a pointer, which Unmarshal would decode into instead.
func storeAny(v any, out *any) bool {
	if out == nil || (*out != nil && reflect.TypeOf(*out).Kind() == reflect.Pointer) {
		return false
	}
	if v == nil {
		v = map[string]any{}
	}
	*out = v
	return true
}

// fillMap stores t's members into *out, an empty map, as decode would store t's generic value, without
// building that value (or, for map[string]string, boxing the strings). done is false, and *out as it was,
// when t goes out as an array, a member does not fit E, or a string is not valid UTF-8 (JSON would alter
// it): the generic path then takes over and meets the same errors in the same order.
func fillMap[E any](sb *sandbox, t *lua.LTable, out *map[string]E, member memberFunc[E]) (done bool, err error) {
	if out == nil || len(*out) > 0 {
		return false, nil
	}
	e := sb.encoder(true, sb.lim.result)
	defer sb.keepEncoder(e)
	made := *out == nil
	done, err = fillMembers(e, t, out, member)
	if err != nil || !done {
		if made {
			*out = nil
		} else {
			clear(*out)
		}
	}
	if err != nil {
		return true, resultError(err)
	}
	return done, nil
}

// memberFunc converts a member's value; ok is false when it does not fit E.
type memberFunc[E any] func(e *encoder, v lua.LValue) (value E, ok bool, err error)

// fillMembers walks t as encoder.value would at the top level, spending the same budget.
func fillMembers[E any](e *encoder, t *lua.LTable, out *map[string]E, member memberFunc[E]) (bool, error) {
	if err := e.spend(8); err != nil {
		return true, err
	}
	base, err := e.enter(t, 1)
	if err != nil {
		return true, err
	}
	defer e.leave(base)
	entries := e.entries[base:]
	if _, isArray := e.arrayLength(t, entries); isArray {
		return false, nil
	}
	if *out == nil {
		*out = make(map[string]E, len(entries))
	}
	for _, en := range entries {
		k, err := e.key(en)
		if err != nil {
			return true, err
		}
		v, ok, err := member(e, en.value)
		if err != nil {
			return true, err
		}
		if !ok {
			return false, nil
		}
		(*out)[k] = v
	}
	return e.validUTF8, nil
}

func anyMember(e *encoder, v lua.LValue) (any, bool, error) {
	out, err := e.value(v, 1)
	return out, true, err
}

// stringMember takes strings as encoder.value does; other values (Unmarshal rejects them) do not fit.
func stringMember(e *encoder, v lua.LValue) (string, bool, error) {
	s, ok := v.(lua.LString)
	if !ok {
		return "", false, nil
	}
	if err := e.spend(8); err != nil {
		return "", true, err
	}
	e.checkUTF8(string(s))
	return string(s), true, e.spend(len(s))
}
