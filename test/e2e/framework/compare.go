package framework

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// ComparedFields picks what a round trip must keep from an object sent to
// the server: every top-level field but metadata and status, plus the
// labels and annotations. The result shares values with obj.
func ComparedFields(obj map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	kept := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := meta[k]; ok {
			kept[k] = v
		}
	}
	if len(kept) > 0 {
		out["metadata"] = kept
	}
	return out
}

// Missing lists every value in want that got lacks or holds differently,
// one "path: problem" line each, sorted. The server may add fields and list
// items after the ones sent; a null in want means unset and is skipped.
func Missing(want, got any) []string {
	var out []string
	missing(&out, "", want, got)
	sort.Strings(out)
	return out
}

func missing(out *[]string, path string, want, got any) {
	switch w := want.(type) {
	case nil:
	case map[string]any:
		missingInMap(out, path, w, got)
	case []any:
		missingInList(out, path, w, got)
	default:
		if !sameScalar(w, got) {
			*out = append(*out, fmt.Sprintf("%s: sent %s, got %s", pathOrRoot(path), show(w), show(got)))
		}
	}
}

func missingInMap(out *[]string, path string, want map[string]any, got any) {
	g, ok := got.(map[string]any)
	if !ok {
		*out = append(*out, fmt.Sprintf("%s: sent an object, got %s", pathOrRoot(path), show(got)))
		return
	}
	for k, wv := range want {
		gv, present := g[k]
		if !present && wv != nil {
			*out = append(*out, fmt.Sprintf("%s: missing (pruned or dropped)", join(path, k)))
			continue
		}
		missing(out, join(path, k), wv, gv)
	}
}

func missingInList(out *[]string, path string, want []any, got any) {
	g, ok := got.([]any)
	if !ok {
		*out = append(*out, fmt.Sprintf("%s: sent a list, got %s", pathOrRoot(path), show(got)))
		return
	}
	if len(g) < len(want) {
		*out = append(*out, fmt.Sprintf("%s: sent %d items, got %d", pathOrRoot(path), len(want), len(g)))
		return
	}
	for i, wv := range want {
		missing(out, fmt.Sprintf("%s[%d]", path, i), wv, g[i])
	}
}

// sameScalar compares numbers by value, since decoders differ in the Go
// type they pick, and everything else exactly (so 5 and "5" differ).
func sameScalar(want, got any) bool {
	wn, wok := number(want)
	gn, gok := number(got)
	if wok || gok {
		return wok && gok && wn == gn
	}
	return reflect.DeepEqual(want, got)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func show(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%v", v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	if strings.ContainsAny(key, "./") {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	return path + "." + key
}

func pathOrRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}
