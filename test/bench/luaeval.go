package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	luaconfiguration "github.com/flotilla-dev/flotilla/lua_configuration"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

const (
	// luaIterations is how many warm evaluations each case is timed over.
	luaIterations = 5000
	// luaWarmup evaluations follow the first (cold) one before timing.
	luaWarmup = 50
	// luaTarget is the bound on one warm evaluation.
	luaTarget = 200 * time.Microsecond
)

// luaEval times the built-in traffic scripts through luavm.Eval, as the
// ingress and custom providers call it, on inputs shaped like theirs.
func luaEval() Scenario {
	return Scenario{
		Name: "lua-eval",
		Description: fmt.Sprintf("luavm.Eval of the built-in nginx Ingress and Istio VirtualService scripts on realistic inputs, "+
			"warm, %d timed evaluations per case; no cluster", luaIterations),
		NoCluster: true,
		Timeout:   5 * time.Minute,
		Run:       runLuaEval,
	}
}

// luaCase is one script with one input; eval decodes the result into what
// the case's provider decodes it into, and check validates it so that an
// error path is never what gets timed.
type luaCase struct {
	name   string
	script string
	input  any
	eval   func(ctx context.Context, vm *luavm.VM, script string, input any) (any, error)
	check  func(out any) error
}

// evalAnnotations decodes as the ingress provider does: into annotations.
func evalAnnotations(ctx context.Context, vm *luavm.VM, script string, input any) (any, error) {
	out := map[string]string{}
	err := vm.Eval(ctx, script, input, &out)
	return out, err
}

// evalObject decodes as the custom provider does: into a generic object,
// whose spec, labels and annotations it then reads.
func evalObject(ctx context.Context, vm *luavm.VM, script string, input any) (any, error) {
	var out map[string]any
	err := vm.Eval(ctx, script, input, &out)
	return out, err
}

// luaFigures is what one case measured.
type luaFigures struct {
	cold    time.Duration
	samples []time.Duration
	allocs  float64
	bytes   float64
}

func runLuaEval(ctx context.Context, env *Env, res *Result) error {
	cases, err := luaCases()
	if err != nil {
		return err
	}
	held, err := holdLiveHeap(env)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(held)
	vm := luavm.New(luavm.Options{})
	begin := time.Now()
	for _, c := range cases {
		fig, err := measureLuaCase(ctx, vm, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		addLuaMetrics(res, c.name, fig)
		s := Summarize(fig.samples)
		env.Logf("%s: cold %v, warm p50 %.1f µs, p99 %.1f µs, %.0f allocs and %s per evaluation", c.name,
			fig.cold.Round(time.Microsecond), s.P50Ms*1000, s.P99Ms*1000, fig.allocs, formatBytes(fig.bytes))
	}
	res.WallSeconds = time.Since(begin).Seconds()
	return nil
}

// heapObject is one of the small objects holdLiveHeap keeps live: a name and a map, as a cached object has.
type heapObject struct {
	name   string
	labels map[string]string
}

// holdLiveHeap allocates FLOTILLA_BENCH_LUA_LIVE_MB megabytes of small objects (none when unset) and keeps them
// live: how often the collector runs, which decides the tail, follows the live heap, and the manager's is its cache
// (57 MB at manager-idle, collected at --gc-percent=50, which GOGC=50 gives this process).
func holdLiveHeap(env *Env) ([]heapObject, error) {
	v := os.Getenv("FLOTILLA_BENCH_LUA_LIVE_MB")
	if v == "" {
		return nil, nil
	}
	mb, err := strconv.Atoi(v)
	if err != nil || mb < 0 {
		return nil, fmt.Errorf("FLOTILLA_BENCH_LUA_LIVE_MB=%q: want a whole number of megabytes", v)
	}
	// About 400 bytes each with its map and name.
	held := make([]heapObject, mb<<20/400)
	for i := range held {
		held[i] = heapObject{name: "pod-" + strconv.Itoa(i), labels: map[string]string{"app": "bench"}}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	percent := debug.SetGCPercent(-1) // reads the setting; restored at once
	debug.SetGCPercent(percent)
	env.Logf("holding a live heap of %s, GC percent %d", formatBytes(float64(ms.HeapAlloc)), percent)
	return held, nil
}

// measureLuaCase evaluates once cold (compiling the script into the VM's
// cache), warms up, times each of luaIterations evaluations, then counts
// the allocations of as many more.
func measureLuaCase(ctx context.Context, vm *luavm.VM, c luaCase) (luaFigures, error) {
	var fig luaFigures
	begin := time.Now()
	if err := evalChecked(ctx, vm, c); err != nil {
		return fig, err
	}
	fig.cold = time.Since(begin)
	for range luaWarmup {
		if err := evalChecked(ctx, vm, c); err != nil {
			return fig, err
		}
	}
	runtime.GC()
	var err error
	if fig.samples, err = timeEvals(ctx, vm, c, luaIterations); err != nil {
		return fig, err
	}
	fig.allocs, fig.bytes, err = countAllocs(luaIterations, func() error { return eval(ctx, vm, c) })
	return fig, err
}

func timeEvals(ctx context.Context, vm *luavm.VM, c luaCase, n int) ([]time.Duration, error) {
	samples := make([]time.Duration, 0, n)
	for range n {
		begin := time.Now()
		if err := eval(ctx, vm, c); err != nil {
			return nil, err
		}
		samples = append(samples, time.Since(begin))
	}
	return samples, nil
}

func eval(ctx context.Context, vm *luavm.VM, c luaCase) error {
	_, err := c.eval(ctx, vm, c.script, c.input)
	return err
}

func evalChecked(ctx context.Context, vm *luavm.VM, c luaCase) error {
	out, err := c.eval(ctx, vm, c.script, c.input)
	if err != nil {
		return err
	}
	return c.check(out)
}

// countAllocs runs fn n times and returns the heap allocations and bytes
// per run, from the runtime's counters: the whole process counts, but the
// harness runs nothing else meanwhile.
func countAllocs(n int, fn func() error) (allocs, bytes float64, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if err := fn(); err != nil {
			return 0, 0, err
		}
	}
	runtime.ReadMemStats(&after)
	allocs, bytes = perRun(before, after, n)
	return allocs, bytes, nil
}

// perRun divides the allocation counters' growth by n runs.
func perRun(before, after runtime.MemStats, n int) (allocs, bytes float64) {
	if n <= 0 {
		return 0, 0
	}
	return float64(after.Mallocs-before.Mallocs) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}

// addLuaMetrics adds a case's warm median and p99, both held to the
// target, and its allocations.
func addLuaMetrics(res *Result, name string, fig luaFigures) {
	s := Summarize(fig.samples)
	if res.Latencies == nil {
		res.Latencies = map[string]Summary{}
	}
	res.Latencies[name] = s
	target := float64(luaTarget.Nanoseconds())
	res.Add(
		Metric{Name: name + " p50", Unit: UnitNsPerOp, Value: s.P50Ms * 1e6,
			Note: fmt.Sprintf("warm, %d evaluations; the first (cold, compiling) took %v", s.N, fig.cold.Round(time.Microsecond))}.WithTarget(target),
		Metric{Name: name + " p99", Unit: UnitNsPerOp, Value: s.P99Ms * 1e6,
			Note: fmt.Sprintf("max %.0f µs", s.MaxMs*1000)}.WithTarget(target),
		Metric{Name: name + " allocations", Unit: UnitCount, Value: fig.allocs,
			Note: fmt.Sprintf("%s per evaluation (runtime.MemStats over %d evaluations)", formatBytes(fig.bytes), luaIterations)},
	)
}

// luaCases are the scripts on the inputs their providers build.
func luaCases() ([]luaCase, error) {
	nginx, ok := luaconfiguration.Ingress("nginx")
	if !ok {
		return nil, fmt.Errorf("no built-in nginx script")
	}
	istio, ok := luaconfiguration.Custom("networking.istio.io", "VirtualService")
	if !ok {
		return nil, fmt.Errorf("no built-in VirtualService script")
	}
	return []luaCase{
		{name: "nginx Ingress, weight + header", script: nginx, input: nginxInput(), eval: evalAnnotations, check: checkNginx},
		{name: "Istio VirtualService, weight", script: istio, input: virtualServiceInput(nil), eval: evalObject,
			check: checkRoutes(3, 1)},
		{name: "Istio VirtualService, weight + matches", script: istio, input: virtualServiceInput(benchMatches()), eval: evalObject,
			check: checkRoutes(5, 0)},
	}, nil
}

// ingressScriptInput mirrors the ingress provider's script input: the
// canary Ingress's current annotations, the weight as a string.
type ingressScriptInput struct {
	Annotations   map[string]string                `json:"annotations"`
	Weight        string                           `json:"weight"`
	Matches       []rolloutsv1beta1.HttpRouteMatch `json:"matches"`
	CanaryService string                           `json:"canaryService"`
}

// nginxInput is the second step of a release: the canary Ingress carries
// the stable Ingress's annotations and the first step's canary keys.
func nginxInput() ingressScriptInput {
	return ingressScriptInput{
		Annotations: map[string]string{
			"kubernetes.io/tls-acme":                             "true",
			"cert-manager.io/cluster-issuer":                     "letsencrypt",
			"nginx.ingress.kubernetes.io/proxy-body-size":        "8m",
			"nginx.ingress.kubernetes.io/proxy-read-timeout":     "60",
			"nginx.ingress.kubernetes.io/ssl-redirect":           "true",
			"nginx.ingress.kubernetes.io/configuration-snippet":  "more_set_headers \"X-Frame-Options: DENY\";",
			"nginx.ingress.kubernetes.io/canary":                 "true",
			"nginx.ingress.kubernetes.io/canary-weight":          "10",
			"nginx.ingress.kubernetes.io/canary-by-header":       "x-canary",
			"nginx.ingress.kubernetes.io/canary-by-header-value": "always",
		},
		Weight:        "30",
		Matches:       []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-canary", Value: "always"}}}},
		CanaryService: "web-canary",
	}
}

func checkNginx(result any) error {
	out, _ := result.(map[string]string)
	if out["nginx.ingress.kubernetes.io/canary-weight"] != "30" || out["nginx.ingress.kubernetes.io/canary-by-header"] != "x-canary" {
		return fmt.Errorf("unexpected annotations %v", out)
	}
	return nil
}

// customScriptInput mirrors the custom provider's script input.
type customScriptInput struct {
	Data          customData                       `json:"data"`
	CanaryWeight  int32                            `json:"canaryWeight"`
	StableWeight  int32                            `json:"stableWeight"`
	Matches       []rolloutsv1beta1.HttpRouteMatch `json:"matches"`
	CanaryService string                           `json:"canaryService"`
	StableService string                           `json:"stableService"`
}

type customData struct {
	Spec        map[string]any    `json:"spec"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// virtualServiceInput is a VirtualService of three http routes: two with
// match conditions and a default splitting between two destinations; the
// step sends 30% to the canary.
func virtualServiceInput(matches []rolloutsv1beta1.HttpRouteMatch) customScriptInput {
	return customScriptInput{
		Data: customData{
			Spec: map[string]any{
				"hosts":    []any{"reviews.example.com", "reviews"},
				"gateways": []any{"istio-system/public", "mesh"},
				"http": []any{
					httpRoute("admin", map[string]any{"uri": map[string]any{"prefix": "/admin"}}, dest("reviews-admin", 100)),
					httpRoute("beta", map[string]any{"headers": map[string]any{"x-beta": map[string]any{"exact": "1"}}},
						dest("reviews.bench.svc.cluster.local", 100)),
					httpRoute("default", nil, dest("reviews", 90), dest("reviews-fallback", 10)),
				},
			},
			Labels:      map[string]string{"app": "reviews", "team": "bookinfo"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "reviews"},
		},
		CanaryWeight: 30, StableWeight: 70, Matches: matches,
		CanaryService: "reviews-canary", StableService: "reviews",
	}
}

func httpRoute(name string, match map[string]any, routes ...any) map[string]any {
	r := map[string]any{
		"name": name, "route": routes, "timeout": "10s",
		"retries": map[string]any{"attempts": 3, "perTryTimeout": "2s", "retryOn": "5xx,reset"},
	}
	if match != nil {
		r["match"] = []any{match}
	}
	return r
}

func dest(host string, weight int) map[string]any {
	return map[string]any{"destination": map[string]any{"host": host, "port": map[string]any{"number": 9080}}, "weight": weight}
}

// benchMatches are a header match and a path with a query parameter.
func benchMatches() []rolloutsv1beta1.HttpRouteMatch {
	prefix, path := gatewayv1.PathMatchPathPrefix, "/api/v2"
	regex := gatewayv1.HeaderMatchRegularExpression
	return []rolloutsv1beta1.HttpRouteMatch{
		{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-canary", Value: "always"}, {Type: &regex, Name: "x-user", Value: "qa-.*"}}},
		{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}, QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "canary", Value: "1"}}},
	}
}

// checkRoutes wants the VirtualService to come back with n http routes,
// split of them sending a share to the canary by weight.
func checkRoutes(n, split int) func(any) error {
	return func(result any) error {
		out, _ := result.(map[string]any)
		spec, _ := out["spec"].(map[string]any)
		routes, _ := spec["http"].([]any)
		if len(routes) != n || weightedCanaries(routes) != split {
			return fmt.Errorf("want %d http routes, %d weighted to the canary; got %v", n, split, spec)
		}
		return nil
	}
}

// weightedCanaries counts the routes holding a canary destination with a
// weight (a match route's canary destination carries none).
func weightedCanaries(routes []any) int {
	n := 0
	for _, r := range routes {
		rm, _ := r.(map[string]any)
		dests, _ := rm["route"].([]any)
		for _, d := range dests {
			dm, _ := d.(map[string]any)
			host, _ := dm["destination"].(map[string]any)
			if _, weighted := dm["weight"]; weighted && host["host"] == "reviews-canary" {
				n++
			}
		}
	}
	return n
}
