package luavm

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

type plainStruct struct {
	Name     string            `json:"name"`
	Count    int32             `json:"count,omitempty"`
	Ratio    float32           `json:"ratio"`
	Big      uint64            `json:"big"`
	Ptr      *string           `json:"ptr,omitempty"`
	NilPtr   *int              `json:"nilPtr"`
	Any      any               `json:"any"`
	Labels   map[string]string `json:"labels,omitempty"`
	Nested   *plainStruct      `json:"nested,omitempty"`
	List     []plainStruct     `json:"list"`
	Fixed    [2]uint8          `json:"fixed"`
	Flag     bool              `json:",omitempty"`
	Skipped  string            `json:"-"`
	NoTag    float64
	unexport int
}

type marshalsItself struct{ V int }

func (m marshalsItself) MarshalJSON() ([]byte, error) { return []byte(`{"custom":true}`), nil }

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("text-" + string(k)), nil }

type pointerMarshaler struct{ V int }

func (*pointerMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"pointer"`), nil }

type embedded struct{ Inner string }

type withEmbedded struct {
	embedded
	Outer string
}

type withStringOption struct {
	N int `json:"n,string"`
}

type withOmitZero struct {
	T time.Time `json:"t,omitzero"`
}

// duplicateNames has two fields named B in JSON: encoding/json keeps the tagged one.
type duplicateNames struct {
	A string `json:"B"`
	B string
}

type cyclic struct {
	Next *cyclic `json:"next"`
}

// goInputs are values goToLua converts itself and values it leaves to the JSON path; either way the result
// must be what the JSON path makes.
func goInputs() map[string]any {
	s := "pointed"
	prefix, path := gatewayv1.PathMatchPathPrefix, "/api"
	regex := gatewayv1.HeaderMatchRegularExpression
	loop := &cyclic{}
	loop.Next = loop
	return map[string]any{
		"nil":         nil,
		"scalars":     map[string]any{"s": "x", "f": 2.5, "neg0": math.Copysign(0, -1), "t": true, "n": nil, "i": int64(1) << 60},
		"ints":        []any{int(3), int32(-4), int64(5), uint8(6), int8(-7), uint(8), uintptr(9)},
		"floats32":    []float32{0.1, 1e-7, 3.4e38, -0.5, 16777217},
		"struct":      plainStruct{Name: "a", Ratio: 0.1, Big: math.MaxUint64, Ptr: &s, Any: map[string]any{"k": []any{1.0}}},
		"empty":       plainStruct{unexport: 1},
		"nested":      &plainStruct{Nested: &plainStruct{Name: "in", List: []plainStruct{{Name: "l"}}}, Labels: map[string]string{}},
		"maps":        map[string]any{"ss": map[string]string{"b": "2", "a": "1"}, "typed": map[string]int{"z": 1}, "nilmap": map[string]any(nil)},
		"slices":      map[string]any{"nil": []string(nil), "empty": []int{}, "holes": []any{nil, 1.0, nil}, "strings": []string{"a", "b"}},
		"named types": map[gatewayv1.HTTPHeaderName]gatewayv1.HTTPHeaderName{"x-a": "b"},
		"matches": []rolloutsv1beta1.HttpRouteMatch{
			{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-canary", Value: "always"}, {Type: &regex, Name: "x-user", Value: "qa-.*"}}},
			{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}, QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "canary", Value: "1"}}},
		},
		"header filter": &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "a", Value: "b"}}, Remove: []string{"c"}},
		"html":          "<a&b>\u2028",
		"unicode keys":  map[string]any{"ключ": "значение", "": "empty"},
		// Left to the JSON path.
		"marshaler":         map[string]any{"m": marshalsItself{1}, "p": &pointerMarshaler{2}, "v": []pointerMarshaler{{3}}},
		"text keys":         map[textKey]int{"k": 1},
		"text values":       map[string]any{"k": textKey("v")},
		"int keys":          map[int]string{2: "two", 1: "one"},
		"bytes":             map[string]any{"b": []byte("hi"), "arr": [2]byte{1, 2}},
		"json number":       map[string]any{"n": json.Number("12.50")},
		"invalid utf8":      map[string]any{"s": "a\xffb"},
		"invalid utf8 key":  map[string]string{"a\xff": "b"},
		"embedded":          withEmbedded{embedded{"in"}, "out"},
		"string option":     withStringOption{N: 3},
		"omitzero":          withOmitZero{},
		"duplicate names":   duplicateNames{A: "a", B: "b"},
		"time":              time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		"deep":              deepValue(maxGoDepth + 10),
		"nan":               map[string]any{"x": math.NaN()},
		"inf32":             []float32{float32(math.Inf(1))},
		"cycle":             loop,
		"channel":           map[string]any{"c": make(chan int)},
		"func field":        struct{ F func() }{},
		"deep but readable": deepValue(maxGoDepth - 10),
	}
}

func deepValue(n int) any {
	var v any = "leaf"
	for i := range n {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

// TestGoToLuaMatchesTheJSONPath converts each input directly and through JSON and compares what a script
// could observe: values, key order, array parts and the JSON markers.
func TestGoToLuaMatchesTheJSONPath(t *testing.T) {
	for name, input := range goInputs() {
		t.Run(name, func(t *testing.T) {
			sb := newSandbox(New(Options{}).opts)
			defer sb.L.Close()
			sb.prepare(defaultLimits)
			got, gotErr := sb.inputToLua(input)
			want := lua.LNil
			data, wantErr := json.Marshal(input)
			if wantErr == nil {
				want, wantErr = sb.jsonToLua(data)
			}
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("error %v, the JSON path's %v", gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			if diff := luaDiff(want, got, "obj"); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestDirectInputsConvertDirectly checks which inputs take which path, and that both leave the reader's
// stacks empty.
func TestDirectInputsConvertDirectly(t *testing.T) {
	sb := newSandbox(New(Options{}).opts)
	defer sb.L.Close()
	sb.prepare(defaultLimits)
	inputs := goInputs()
	for _, name := range []string{"nil", "scalars", "ints", "floats32", "struct", "empty", "nested", "maps",
		"slices", "named types", "matches", "header filter", "html", "unicode keys", "deep but readable",
		// encoding/json takes keys of a string kind as they are, text encoding or not.
		"text keys"} {
		if _, ok := sb.goToLua(inputs[name]); !ok {
			t.Errorf("%s took the JSON path", name)
		}
		if len(sb.scratch.members)+len(sb.scratch.elems)+len(sb.scratch.pending)+len(sb.scratch.pendingValues) != 0 {
			t.Errorf("%s left entries on the stacks", name)
		}
	}
	for _, name := range []string{"marshaler", "int keys", "bytes", "json number", "invalid utf8",
		"invalid utf8 key", "text values", "embedded", "string option", "omitzero", "duplicate names", "time", "deep", "nan",
		"inf32", "cycle", "channel", "func field"} {
		if _, ok := sb.goToLua(inputs[name]); ok {
			t.Errorf("%s was converted directly", name)
		}
		if len(sb.scratch.members)+len(sb.scratch.elems)+len(sb.scratch.pending)+len(sb.scratch.pendingValues) != 0 {
			t.Errorf("%s left entries on the stacks", name)
		}
	}
}

func FuzzGoToLua(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a": [1, null, {"b": []}], "c": {"d": "e"}}`, `[1e300, -0, 1e-300, "x", true, null]`,
		`{"s": "\u00ff\ud800", "n": -0, "arr": [null, null, 1]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var input any
		if json.Unmarshal([]byte(in), &input) != nil || depth(input) >= maxGoDepth {
			t.Skip("not JSON, or nested deeper than goToLua follows (the JSON path takes those)")
		}
		sb := newSandbox(New(Options{}).opts)
		defer sb.L.Close()
		sb.prepare(defaultLimits)
		got, ok := sb.goToLua(input)
		if !ok {
			t.Fatalf("%s took the JSON path", in)
		}
		data, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sb.jsonToLua(data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := luaDiff(want, got, "obj"); diff != "" {
			t.Error(diff)
		}
	})
}
