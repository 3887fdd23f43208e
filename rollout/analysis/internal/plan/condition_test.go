package plan

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

func TestJudge(t *testing.T) {
	const (
		ok           = analysisv1alpha1.AnalysisPhaseSuccessful
		failed       = analysisv1alpha1.AnalysisPhaseFailed
		inconclusive = analysisv1alpha1.AnalysisPhaseInconclusive
		erred        = analysisv1alpha1.AnalysisPhaseError
	)
	cases := []struct {
		name             string
		success, failure string
		value            any
		want             analysisv1alpha1.AnalysisPhase
		message          string
	}{
		{name: "no condition", value: 1.0, want: ok},
		{name: "number below threshold", success: "result < 0.05", value: 0.01, want: ok, message: "successCondition holds"},
		{name: "number above threshold", success: "result < 0.05", value: 0.5, want: failed, message: "successCondition does not hold"},
		{name: "int literal against a double", success: "result >= 1", value: 1.0, want: ok},
		{name: "equality across int and double", success: "result == 1", value: 1.0, want: ok},
		{name: "failure wins", success: "result < 1", failure: "result > 0.5", value: 0.7, want: failed, message: "failureCondition holds"},
		{name: "neither holds", success: "result < 0.1", failure: "result > 0.5", value: 0.3, want: inconclusive},
		{name: "only failure, false", failure: "result > 0.5", value: 0.3, want: ok},
		{name: "every sample", success: "result.all(x, x < 0.05)", value: []any{0.01, 0.02}, want: ok},
		{name: "one sample over", success: "result.all(x, x < 0.05)", value: []any{0.01, 0.2}, want: failed},
		{name: "empty list", success: "size(result) > 0 && result[0] < 1", value: []any{}, want: failed},
		{name: "object field", success: `result.status == "ok" && result.count > 3`, value: map[string]any{"status": "ok", "count": 4.0}, want: ok},
		{name: "missing key", success: `result.status == "ok"`, value: map[string]any{}, want: erred, message: "successCondition: no such key: status"},
		{name: "index past the end", success: "result[0] < 1", value: []any{}, want: erred, message: "successCondition: index out of bounds: 0"},
		{name: "NaN cannot be ordered", success: "result < 0.05", value: math.NaN(), want: erred, message: "successCondition: NaN values cannot be ordered"},
		{name: "NaN checked first", success: "!math.isNaN(result) && result < 0.05", value: math.NaN(), want: failed},
		{name: "not a bool", success: "result", value: "yes", want: erred, message: "successCondition: evaluated to yes (string), not a bool"},
		{name: "compile error", success: "result <", value: 1.0, want: erred, message: "successCondition: Invalid value: \"result <\": ERROR: <input>:1:9: Syntax error"},
		{name: "string extension", success: `result.lowerAscii() == "green"`, value: "GREEN", want: ok},
		{name: "math extension", success: "math.greatest(result) < 0.5", value: []any{0.1, 0.4}, want: ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &analysisv1alpha1.Metric{SuccessCondition: c.success, FailureCondition: c.failure}
			got, msg := Judge(context.Background(), m, c.value)
			if got != c.want || !strings.HasPrefix(msg, c.message) {
				t.Errorf("Judge = %s %q, want %s %q...", got, msg, c.want, c.message)
			}
		})
	}
}

func TestCompileCondition(t *testing.T) {
	path := field.NewPath("spec", "metrics").Index(0).Child("successCondition")
	cases := []struct {
		expr, want string
	}{
		{expr: "result < 0.05"},
		{expr: "result.exists(x, x > 1)"},
		{expr: "result <", want: `spec.metrics[0].successCondition: Invalid value: "result <": ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>'`},
		{expr: "results < 1", want: `spec.metrics[0].successCondition: Invalid value: "results < 1": ERROR: <input>:1:1: undeclared reference to 'results'`},
		{expr: "1 + 2", want: `spec.metrics[0].successCondition: Invalid value: "1 + 2": must evaluate to a bool, not int`},
	}
	for _, c := range cases {
		_, err := CompileCondition(path, c.expr)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.expr, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%q: error %v, want %s...", c.expr, err, c.want)
		}
	}
}

// An expression that loops over a huge list stops at the time limit instead of holding the worker.
func TestJudgeTimeLimit(t *testing.T) {
	big := make([]any, 100_000)
	for i := range big {
		big[i] = float64(i)
	}
	m := &analysisv1alpha1.Metric{SuccessCondition: "result.all(x, result.all(y, x + y >= 0))"}
	start := time.Now()
	got, msg := Judge(context.Background(), m, big)
	if got != analysisv1alpha1.AnalysisPhaseError || !strings.Contains(msg, "operation interrupted") {
		t.Errorf("Judge = %s %q, want an Error at the time limit", got, msg)
	}
	if took := time.Since(start); took > 5*evalTimeout {
		t.Errorf("the evaluation took %v", took)
	}
}
