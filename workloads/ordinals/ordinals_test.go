package ordinals

import (
	"math"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestParseReservedAndSlots(t *testing.T) {
	for _, tc := range []struct {
		name            string
		reserve         []intstr.IntOrString
		start, replicas int32
		want            []int32
		wantErr         bool
	}{
		{name: "none", replicas: 3, want: []int32{0, 1, 2}},
		{name: "the seed: 1 reserved of 4", reserve: []intstr.IntOrString{intstr.FromInt32(1)}, replicas: 4, want: []int32{0, 2, 3, 4}},
		{name: "a range", reserve: []intstr.IntOrString{intstr.FromString("3-5")}, replicas: 5, want: []int32{0, 1, 2, 6, 7}},
		{name: "numbers and ranges overlapping", reserve: []intstr.IntOrString{intstr.FromString("2-3"), intstr.FromInt32(3), intstr.FromString(" 4 - 4")},
			replicas: 3, want: []int32{0, 1, 5}},
		{name: "start 2 with 1 and 3 reserved (upstream's example)", reserve: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromInt32(3)},
			start: 2, replicas: 4, want: []int32{2, 4, 5, 6}},
		{name: "a huge range costs nothing", reserve: []intstr.IntOrString{intstr.FromString("1-2000000000")}, replicas: 3,
			want: []int32{0, 2000000001, 2000000002}},
		{name: "no ordinal left past MaxInt32", reserve: []intstr.IntOrString{intstr.FromString("0-2147483646")}, replicas: 3,
			want: []int32{math.MaxInt32}},
		{name: "zero replicas", replicas: 0, want: []int32{}},
		{name: "a bad range voids the list", reserve: []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("5-3")}, replicas: 2,
			wantErr: true, want: []int32{0, 1}},
		{name: "a negative number voids the list", reserve: []intstr.IntOrString{intstr.FromInt32(-1)}, replicas: 1, wantErr: true, want: []int32{0}},
		{name: "words void the list", reserve: []intstr.IntOrString{intstr.FromString("one")}, replicas: 1, wantErr: true, want: []int32{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseReserved(tc.reserve)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got := Slots(tc.start, tc.replicas, r); !slices.Equal(got, tc.want) {
				t.Errorf("Slots = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReservedHas(t *testing.T) {
	r, err := ParseReserved([]intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("4-6")})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int32]bool{0: false, 1: true, 2: false, 3: false, 4: true, 5: true, 6: true, 7: false} {
		if r.Has(n) != want {
			t.Errorf("Has(%d) = %v", n, !want)
		}
	}
}

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int32{
		"web-0": 0, "web-12": 12, "web-2147483647": math.MaxInt32,
		"web-01": -1, "web-": -1, "web": -1, "web-x": -1, "web-1-2": -1, "webs-1": -1, "other-1": -1, "web--1": -1,
		"web-2147483648": -1,
	} {
		if got := Ordinal("web", name); got != want {
			t.Errorf("Ordinal(web, %q) = %d, want %d", name, got, want)
		}
	}
	if got := Ordinal("web-1", "web-1-3"); got != 3 {
		t.Errorf("a set whose name ends in a number: %d", got)
	}
	if PodName("web", 7) != "web-7" {
		t.Errorf("pod name %s", PodName("web", 7))
	}
}
