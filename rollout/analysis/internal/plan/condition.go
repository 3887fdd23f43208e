package plan

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/util/validation/field"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// ResultVariable is the name conditions read the measured value by.
const ResultVariable = "result"

// evalTimeout bounds one evaluation, so that no expression can hold a worker: a comparison over thousands of
// samples takes milliseconds. (A time bound, not CEL's cost limit: its tracking makes comprehensions over long
// lists quadratic.)
const evalTimeout = time.Second

// env is the CEL environment of every condition: `result` of any type, numbers comparable across int and
// double (a JSON or Prometheus value is a double, a literal in the expression often an int), and the
// strings, math, lists and optional-value extensions.
var env = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(ResultVariable, cel.DynType),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(), ext.Math(), ext.Lists(),
	)
})

// programs caches compiled conditions by expression, since a run judges each measurement with the same few;
// past maxCached expressions it starts over.
var programs = struct {
	sync.Mutex
	m map[string]cel.Program
}{m: map[string]cel.Program{}}

const maxCached = 1024

// CompileCondition compiles a condition, or says why it cannot be one as an error naming path.
func CompileCondition(path *field.Path, expr string) (cel.Program, *field.Error) {
	programs.Lock()
	defer programs.Unlock()
	if prg, ok := programs.m[expr]; ok {
		return prg, nil
	}
	prg, err := compile(expr)
	if err != nil {
		return nil, field.Invalid(path, expr, err.Error())
	}
	if len(programs.m) >= maxCached {
		clear(programs.m)
	}
	programs.m[expr] = prg
	return prg, nil
}

func compile(expr string) (cel.Program, error) {
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("the CEL environment: %w", err)
	}
	ast, issues := e.Compile(expr)
	if issues.Err() != nil {
		return nil, issues.Err()
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("must evaluate to a bool, not %s", t)
	}
	return e.Program(ast, cel.InterruptCheckFrequency(100))
}

// evaluate runs a compiled condition on a measured value.
func evaluate(ctx context.Context, prg cel.Program, value any) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, evalTimeout)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, map[string]any{ResultVariable: celValue(value)})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("evaluated to %v (%s), not a bool", out.Value(), out.Type().TypeName())
	}
	return b, nil
}

// Judge is a measured value's verdict under a metric's conditions:
//   - failureCondition true: Failed;
//   - successCondition true: Successful;
//   - successCondition false: Failed without a failureCondition, Inconclusive with one (neither held);
//   - only a failureCondition, false: Successful;
//   - no condition: Successful (the value could be measured).
//
// An expression that does not compile or evaluate (a missing key, an index past a list's end) makes the
// measurement an Error naming the field.
func Judge(ctx context.Context, m *analysisv1alpha1.Metric, value any) (analysisv1alpha1.AnalysisPhase, string) {
	if m.FailureCondition != "" {
		failed, err := judge(ctx, "failureCondition", m.FailureCondition, value)
		if err != nil {
			return analysisv1alpha1.AnalysisPhaseError, err.Error()
		}
		if failed {
			return analysisv1alpha1.AnalysisPhaseFailed, "failureCondition holds"
		}
	}
	if m.SuccessCondition == "" {
		return analysisv1alpha1.AnalysisPhaseSuccessful, ""
	}
	ok, err := judge(ctx, "successCondition", m.SuccessCondition, value)
	switch {
	case err != nil:
		return analysisv1alpha1.AnalysisPhaseError, err.Error()
	case ok:
		return analysisv1alpha1.AnalysisPhaseSuccessful, "successCondition holds"
	case m.FailureCondition == "":
		return analysisv1alpha1.AnalysisPhaseFailed, "successCondition does not hold"
	}
	return analysisv1alpha1.AnalysisPhaseInconclusive, "neither successCondition nor failureCondition holds"
}

func judge(ctx context.Context, name, expr string, value any) (bool, error) {
	prg, ferr := CompileCondition(field.NewPath(name), expr)
	if ferr != nil {
		return false, ferr
	}
	ok, err := evaluate(ctx, prg, value)
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return ok, nil
}

// celValue converts a measured value to CEL's own values once, up front: CEL would otherwise adapt a Go list
// again at each access, which makes a comprehension over a few thousand samples take seconds.
func celValue(v any) ref.Val {
	switch t := v.(type) {
	case []any:
		elems := make([]ref.Val, len(t))
		for i := range t {
			elems[i] = celValue(t[i])
		}
		return types.NewRefValList(types.DefaultTypeAdapter, elems)
	case map[string]any:
		entries := make(map[ref.Val]ref.Val, len(t))
		for k, e := range t {
			entries[types.String(k)] = celValue(e)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, entries)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}
