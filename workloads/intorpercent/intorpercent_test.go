package intorpercent

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidate(t *testing.T) {
	p := field.NewPath("spec", "partition")
	for _, tt := range []struct {
		v    intstr.IntOrString
		want string
	}{
		{intstr.FromInt32(0), ""},
		{intstr.FromInt32(7), ""},
		{intstr.FromString("0%"), ""},
		{intstr.FromString("100%"), ""},
		{intstr.FromInt32(-1), "spec.partition: Invalid value: -1: must be greater than or equal to 0"},
		{intstr.FromString("101%"), `spec.partition: Invalid value: "101%": must not be greater than 100%`},
		{intstr.FromString("5"), `spec.partition: Invalid value: "5": a valid percent string must be`},
		{intstr.FromString("x%"), `spec.partition: Invalid value: "x%"`},
	} {
		agg := Validate(tt.v, p).ToAggregate()
		switch {
		case tt.want == "" && agg != nil:
			t.Errorf("%s: %v", tt.v.String(), agg)
		case tt.want != "" && (agg == nil || !strings.Contains(agg.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.v.String(), agg, tt.want)
		}
	}
}

func TestPercent(t *testing.T) {
	for s, want := range map[string]int{"0%": 0, "25%": 25, "99999999999999999999%": math.MaxInt} {
		if n, ok := Percent(s); !ok || n != want {
			t.Errorf("Percent(%q) = %d, %v; want %d", s, n, ok, want)
		}
	}
	for _, s := range []string{"25", "", "%", "-1%"} {
		if _, ok := Percent(s); ok {
			t.Errorf("Percent(%q) read as valid", s)
		}
	}
}
