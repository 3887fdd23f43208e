package v1alpha1

import (
	"slices"
	"testing"
)

func TestParsePubProtectOperations(t *testing.T) {
	cases := []struct {
		value   string
		want    []PubOperation
		wantErr bool
	}{
		{value: "", want: nil},
		{value: "DELETE", want: []PubOperation{PubDeleteOperation}},
		{value: " DELETE, UPDATE ,EVICT", want: []PubOperation{PubDeleteOperation, PubUpdateOperation, PubEvictOperation}},
		{value: ",,RESIZE,,", want: []PubOperation{PubResizeOperation}},
		{value: "DELETE,delete", wantErr: true},
		{value: "BOGUS", wantErr: true},
	}
	for _, tc := range cases {
		got, err := ParsePubProtectOperations(tc.value)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParsePubProtectOperations(%q) error = %v, want error %v", tc.value, err, tc.wantErr)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParsePubProtectOperations(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestJoinPubProtectOperationsRoundTrips(t *testing.T) {
	ops := []PubOperation{PubEvictOperation, PubDeleteOperation}
	joined := JoinPubProtectOperations(ops)
	if joined != "EVICT,DELETE" {
		t.Fatalf("JoinPubProtectOperations = %q, want %q", joined, "EVICT,DELETE")
	}
	back, err := ParsePubProtectOperations(joined)
	if err != nil || !slices.Equal(back, ops) {
		t.Fatalf("round trip of %q = %v, %v; want %v", joined, back, err, ops)
	}
}
