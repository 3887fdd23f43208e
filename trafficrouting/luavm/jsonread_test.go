package luavm

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

var jsonReaderSeeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e3`, `-12.25E-2`, `"x"`, ` {"a" : [ 1 , null , 3 ] } `,
	`{"b": 1, "a": 2, "c": {"z": [], "y": {}}}`, `{"a": 1, "a": 2}`, `{"a": 1, "a": null}`, `{"a": null, "a": 1}`,
	`[null, null]`, `[1, null]`, `{"a": [[], [[]], {}]}`, `{"": ""}`,
	`"esc \" \\ \/ \b \f \n \r \t \u00e9 \u2028 \ud83d\ude00"`, `"bad surrogate \ud800 \udc00x \ud800\u0041"`,
	"\"raw \xff invalid \xc3\"", "\"raw é ✓\"", `{"ключ": "значение"}`, `"\u0000"`, "\"ctl \x01\"",
	`1e400`, `-1e400`, `1e-400`, `01`, `1.`, `.5`, `+1`, `-`, `1e`, `1e+`, `0x10`, `NaN`, `Infinity`,
	`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `{} {}`, `{}x`, ``, ` `, `tru`, `nul`, `"open`,
	"\ufeff{}", `{"a":1}` + "\u00a0", strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300),
}

// TestJSONReaderMatchesUnmarshal checks the reader against json.Unmarshal followed by toLua on the seeds,
// and that the documents encoding/json produces do not need its help.
func TestJSONReaderMatchesUnmarshal(t *testing.T) {
	sb := newSandbox(New(Options{}).opts)
	sb.prepare(defaultLimits)
	for _, doc := range jsonReaderSeeds {
		if diff := compareReaders(sb, []byte(doc)); diff != "" {
			t.Errorf("%.60q: %s", doc, diff)
		}
	}
	for _, doc := range jsonReaderSeeds[:25] {
		if _, ok := sb.readJSON([]byte(doc)); !ok {
			t.Errorf("%q went through encoding/json", doc)
		}
	}
}

func FuzzJSONReader(f *testing.F) {
	for _, doc := range jsonReaderSeeds {
		f.Add([]byte(doc))
	}
	sb := newSandbox(New(Options{}).opts)
	sb.prepare(defaultLimits)
	f.Fuzz(func(t *testing.T, doc []byte) {
		if diff := compareReaders(sb, doc); diff != "" {
			t.Errorf("%q: %s", doc, diff)
		}
	})
}

// compareReaders describes how jsonToLua's result for doc differs from that of json.Unmarshal and toLua.
func compareReaders(sb *sandbox, doc []byte) string {
	got, gotErr := sb.jsonToLua(doc)
	var generic any
	wantErr := json.Unmarshal(doc, &generic)
	switch {
	case wantErr != nil && gotErr == nil:
		return fmt.Sprintf("read %v, want error %v", got, wantErr)
	case wantErr != nil && gotErr.Error() != wantErr.Error():
		return fmt.Sprintf("error %v, want %v", gotErr, wantErr)
	case wantErr != nil:
		return ""
	case gotErr != nil:
		return fmt.Sprintf("error %v", gotErr)
	}
	return luaDiff(sb.toLua(generic), got, "$")
}

// luaDiff compares two values made from JSON, including what pairs and # show of tables (key order,
// sequence length, the array part with its nils) and their markers.
func luaDiff(want, got lua.LValue, path string) string {
	if want.Type() != got.Type() {
		return fmt.Sprintf("%s: %s, want %s", path, got.Type(), want.Type())
	}
	wt, ok := want.(*lua.LTable)
	if !ok {
		if wn, ok := want.(lua.LNumber); ok && math.Float64bits(float64(wn)) != math.Float64bits(float64(got.(lua.LNumber))) {
			return fmt.Sprintf("%s: %v, want %v", path, got, want)
		}
		if want != got {
			return fmt.Sprintf("%s: %v, want %v", path, got, want)
		}
		return ""
	}
	gt := got.(*lua.LTable)
	if wt.Metatable != gt.Metatable || wt.Len() != gt.Len() || arrayPartLen(wt) != arrayPartLen(gt) {
		return fmt.Sprintf("%s: table shape differs", path)
	}
	for i := 1; i <= arrayPartLen(wt); i++ {
		if wt.RawGetInt(i).Type() != gt.RawGetInt(i).Type() {
			return fmt.Sprintf("%s[%d]: %v, want %v", path, i, gt.RawGetInt(i), wt.RawGetInt(i))
		}
	}
	wk, wv := wt.Next(lua.LNil)
	gk, gv := gt.Next(lua.LNil)
	for ; wk != lua.LNil || gk != lua.LNil; wk, gk = nextPair(wt, wk, &wv), nextPair(gt, gk, &gv) {
		if wk != gk {
			return fmt.Sprintf("%s: key %v, want %v", path, gk, wk)
		}
		if diff := luaDiff(wv, gv, fmt.Sprintf("%s.%v", path, wk)); diff != "" {
			return diff
		}
	}
	return ""
}

func nextPair(t *lua.LTable, k lua.LValue, v *lua.LValue) lua.LValue {
	k, *v = t.Next(k)
	return k
}

// arrayPartLen reads the length of a table's array part, nils included, which # and table.insert depend on.
func arrayPartLen(t *lua.LTable) int {
	return reflect.ValueOf(t).Elem().FieldByName("array").Len()
}
