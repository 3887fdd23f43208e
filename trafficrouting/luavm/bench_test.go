package luavm

import (
	"context"
	"testing"

	luaconfiguration "github.com/flotilla-dev/flotilla/lua_configuration"
)

// benchScript has the shape of the nginx ingress script: copy the annotations, drop and recompute the
// canary keys from the weight and the first header of each match.
const benchScript = `local prefix = "nginx.ingress.kubernetes.io/"
local annotations = {}
for key, value in pairs(obj.annotations or {}) do
  annotations[key] = value
end
for _, key in ipairs({"canary-by-cookie", "canary-by-header", "canary-by-header-value", "canary-weight"}) do
  annotations[prefix .. key] = nil
end
annotations[prefix .. "canary"] = "true"
if obj.weight ~= nil and obj.weight ~= "-1" then
  annotations[prefix .. "canary-weight"] = obj.weight
end
for _, match in ipairs(obj.matches or {}) do
  local header = match.headers and match.headers[1]
  if header then
    annotations[prefix .. "canary-by-header"] = header.name
    annotations[prefix .. "canary-by-header-value"] = header.value
  end
end
return annotations`

type benchHeader struct {
	Type  *string `json:"type,omitempty"`
	Name  string  `json:"name"`
	Value string  `json:"value"`
}

type benchMatch struct {
	Headers []benchHeader `json:"headers,omitempty"`
}

type benchInput struct {
	Annotations   map[string]string `json:"annotations"`
	Weight        string            `json:"weight"`
	Matches       []benchMatch      `json:"matches"`
	CanaryService string            `json:"canaryService"`
}

func nginxBenchInput() benchInput {
	return benchInput{
		Annotations: map[string]string{
			"kubernetes.io/tls-acme":                             "true",
			"cert-manager.io/cluster-issuer":                     "letsencrypt",
			"nginx.ingress.kubernetes.io/proxy-body-size":        "8m",
			"nginx.ingress.kubernetes.io/proxy-read-timeout":     "60",
			"nginx.ingress.kubernetes.io/ssl-redirect":           "true",
			"nginx.ingress.kubernetes.io/configuration-snippet":  `more_set_headers "X-Frame-Options: DENY";`,
			"nginx.ingress.kubernetes.io/canary":                 "true",
			"nginx.ingress.kubernetes.io/canary-weight":          "10",
			"nginx.ingress.kubernetes.io/canary-by-header":       "x-canary",
			"nginx.ingress.kubernetes.io/canary-by-header-value": "always",
		},
		Weight:        "30",
		Matches:       []benchMatch{{Headers: []benchHeader{{Name: "x-canary", Value: "always"}}}},
		CanaryService: "web-canary",
	}
}

// BenchmarkEval times a warm evaluation of an nginx-like script, decoding into the two map types the
// providers use.
func BenchmarkEval(b *testing.B) {
	vm := New(Options{})
	in := nginxBenchInput()
	b.Run("map[string]string", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := map[string]string{}
			if err := vm.Eval(context.Background(), benchScript, in, &out); err != nil || out["nginx.ingress.kubernetes.io/canary-weight"] != "30" {
				b.Fatal(err, out)
			}
		}
	})
	b.Run("map[string]any", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := map[string]any{}
			if err := vm.Eval(context.Background(), benchScript, in, &out); err != nil || out["nginx.ingress.kubernetes.io/canary-weight"] != "30" {
				b.Fatal(err, out)
			}
		}
	})
}

// virtualServiceBenchInput has the shape of the custom provider's input for a VirtualService of three http
// routes, two of them with match conditions.
func virtualServiceBenchInput(matches []any) map[string]any {
	dest := func(host string, weight int) map[string]any {
		return map[string]any{"destination": map[string]any{"host": host, "port": map[string]any{"number": 9080}},
			"weight": weight}
	}
	route := func(name string, match any, routes ...any) map[string]any {
		r := map[string]any{"name": name, "route": routes, "timeout": "10s",
			"retries": map[string]any{"attempts": 3, "perTryTimeout": "2s", "retryOn": "5xx,reset"}}
		if match != nil {
			r["match"] = []any{match}
		}
		return r
	}
	return map[string]any{
		"data": map[string]any{
			"spec": map[string]any{
				"hosts":    []any{"reviews.example.com", "reviews"},
				"gateways": []any{"istio-system/public", "mesh"},
				"http": []any{
					route("admin", map[string]any{"uri": map[string]any{"prefix": "/admin"}}, dest("reviews-admin", 100)),
					route("beta", map[string]any{"headers": map[string]any{"x-beta": map[string]any{"exact": "1"}}},
						dest("reviews.bench.svc.cluster.local", 100)),
					route("default", nil, dest("reviews", 90), dest("reviews-fallback", 10)),
				},
			},
			"labels":      map[string]any{"app": "reviews", "team": "bookinfo"},
			"annotations": map[string]any{"meta.helm.sh/release-name": "reviews"},
		},
		"canaryWeight": 30, "stableWeight": 70, "matches": matches,
		"canaryService": "reviews-canary", "stableService": "reviews",
	}
}

// BenchmarkEvalVirtualService times a warm evaluation of the built-in VirtualService script, with a weight
// and with two matches.
func BenchmarkEvalVirtualService(b *testing.B) {
	script, ok := luaconfiguration.Custom("networking.istio.io", "VirtualService")
	if !ok {
		b.Fatal("no VirtualService script")
	}
	vm := New(Options{})
	matches := []any{
		map[string]any{"headers": []any{map[string]any{"name": "x-canary", "value": "always"},
			map[string]any{"type": "RegularExpression", "name": "x-user", "value": "qa-.*"}}},
		map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/api/v2"},
			"queryParams": []any{map[string]any{"name": "canary", "value": "1"}}},
	}
	for _, c := range []struct {
		name   string
		input  map[string]any
		routes int
	}{{"weight", virtualServiceBenchInput(nil), 3}, {"matches", virtualServiceBenchInput(matches), 5}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := map[string]any{}
				if err := vm.Eval(context.Background(), script, c.input, &out); err != nil {
					b.Fatal(err)
				}
				if routes := out["spec"].(map[string]any)["http"].([]any); len(routes) != c.routes {
					b.Fatal(out)
				}
			}
		})
	}
}
