package inject

import "testing"

func TestMergePatchJSON(t *testing.T) {
	cases := []struct {
		name, doc, patch, want string
		wantErr                bool
	}{
		{name: "no value yet takes the patch as is", doc: "", patch: `{"a": 1}`, want: `{"a": 1}`},
		{name: "keys merge", doc: `{"a":1}`, patch: `{"b":2}`, want: `{"a":1,"b":2}`},
		{name: "nested objects merge", doc: `{"a":{"x":1,"y":2}}`, patch: `{"a":{"y":3}}`, want: `{"a":{"x":1,"y":3}}`},
		{name: "null deletes", doc: `{"a":1,"b":2}`, patch: `{"a":null}`, want: `{"b":2}`},
		{name: "lists are replaced", doc: `{"a":[1,2]}`, patch: `{"a":[3]}`, want: `{"a":[3]}`},
		{name: "numbers keep their text", doc: `{"big":12345678901234567890}`, patch: `{"f":1.50}`, want: `{"big":12345678901234567890,"f":1.50}`},
		{name: "a non-object patch replaces", doc: `{"a":1}`, patch: `"x"`, want: `"x"`},
		{name: "pod value not JSON", doc: `nope`, patch: `{"a":1}`, wantErr: true},
		{name: "patch not JSON", doc: `{"a":1}`, patch: `{`, wantErr: true},
		{name: "trailing data", doc: `{"a":1} {}`, patch: `{"b":1}`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergePatchJSON(tc.doc, tc.patch)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
