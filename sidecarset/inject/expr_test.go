package inject

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEvaluateResource(t *testing.T) {
	cases := []struct {
		expr, aggregate, want string
		wantErr               bool
	}{
		{expr: "max(cpu*50%, 50m)", aggregate: "200m", want: "100m"},
		{expr: "max(cpu*50%, 50m)", aggregate: "60m", want: "50m"},
		{expr: "max(memory*50%, 100Mi)", aggregate: "512Mi", want: "256Mi"},
		{expr: "min(memory, 1Gi)", aggregate: "2Gi", want: "1Gi"},
		{expr: "cpu + 100m", aggregate: "1", want: "1100m"},
		{expr: "cpu - 100m", aggregate: "1", want: "900m"},
		{expr: "(cpu + 100m) * 2", aggregate: "400m", want: "1"},
		{expr: "cpu / 4", aggregate: "1", want: "250m"},
		{expr: "2 * cpu", aggregate: "300m", want: "600m"},
		{expr: "0.5", aggregate: "1", want: "500m"},               // a number is cores for cpu
		{expr: "memory * 0 + 1000", aggregate: "1Gi", want: "1k"}, // a number added to a quantity counts as units
		{expr: "2 + 3 * 4", aggregate: "0", want: "14"},
		{expr: "2e-1", aggregate: "0", want: "200m"},
		{expr: "-(-cpu)", aggregate: "100m", want: "100m"},
		{expr: "cpu * 2m", aggregate: "1", wantErr: true},
		{expr: "cpu / 0", aggregate: "1", wantErr: true},
		{expr: "10 / cpu", aggregate: "1", wantErr: true},
		{expr: "cpu - 2", aggregate: "1", wantErr: true},
		{expr: "memory", aggregate: "1", want: "1"},
		{expr: "cpu + memory", aggregate: "1", wantErr: true}, // only one variable is bound
		{expr: "avg(cpu, 1)", aggregate: "1", wantErr: true},
		{expr: "max(cpu)", aggregate: "1", wantErr: true},
		{expr: "max(cpu, 1, 2)", aggregate: "1", wantErr: true},
		{expr: "5x", aggregate: "1", wantErr: true},
		{expr: "(cpu", aggregate: "1", wantErr: true},
		{expr: "cpu)", aggregate: "1", wantErr: true},
		{expr: "", aggregate: "1", wantErr: true},
		{expr: "cpu $", aggregate: "1", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := evaluateResource(tc.expr, resource.MustParse(tc.aggregate))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("got %s, want %s", got.String(), tc.want)
			}
		})
	}
}

// FuzzEvaluate: no expression makes the evaluator panic or loop.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"max(cpu*50%, 50m)", "(1+2)*3/4", "-memory - 1Gi", "min(1e3, 2E-1)%"} {
		f.Add(s)
	}
	f.Fuzz(func(_ *testing.T, expr string) {
		q := resource.MustParse("100m")
		_, _ = evaluate(expr, map[string]value{"cpu": {quantity: &q}})
	})
}
