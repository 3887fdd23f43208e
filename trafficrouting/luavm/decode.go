package luavm

import (
	"encoding/json"
	"fmt"
	"reflect"
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
