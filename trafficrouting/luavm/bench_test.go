package luavm

import (
	"context"
	"testing"
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
