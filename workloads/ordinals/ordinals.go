// Package ordinals is the arithmetic of a StatefulSet's ordinals, native or Advanced: spec.reserveOrdinals (numbers and
// ranges), the ordinals its replicas take from spec.ordinals.start, and the ordinal a pod's name carries. The
// statefulset module places pods by it; the persistentpodstate module drops the records of pods scaled away.
package ordinals

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// span is an inclusive range of ordinals.
type span struct{ from, to int64 }

// Reserved holds the ordinals spec.reserveOrdinals takes out of the set, as merged ranges: a range such as
// "0-2000000000" costs two numbers, not two billion set entries.
type Reserved struct{ spans []span }

// ParseReserved reads spec.reserveOrdinals: numbers and ranges "a-b" (a <= b). Like upstream, an invalid
// entry voids the whole list (the webhook rejects it; a set stored without the webhook reserves nothing).
func ParseReserved(list []intstr.IntOrString) (Reserved, error) {
	spans := make([]span, 0, len(list))
	for i, item := range list {
		s, err := parseItem(item)
		if err != nil {
			return Reserved{}, fmt.Errorf("reserveOrdinals[%d]: %w", i, err)
		}
		spans = append(spans, s)
	}
	return Reserved{spans: merge(spans)}, nil
}

func parseItem(item intstr.IntOrString) (span, error) {
	if item.Type == intstr.Int {
		if item.IntVal < 0 {
			return span{}, fmt.Errorf("%d is negative", item.IntVal)
		}
		return span{int64(item.IntVal), int64(item.IntVal)}, nil
	}
	from, to, err := ParseRange(item.StrVal)
	return span{from, to}, err
}

// ParseRange reads a range "a-b" of non-negative ordinals with a <= b (spaces around the numbers allowed).
func ParseRange(s string) (from, to int64, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not a range like \"3-5\"", s)
	}
	if from, err = strconv.ParseInt(strings.TrimSpace(a), 10, 32); err != nil || from < 0 {
		return 0, 0, fmt.Errorf("%q is not a range of non-negative numbers", s)
	}
	if to, err = strconv.ParseInt(strings.TrimSpace(b), 10, 32); err != nil || to < from {
		return 0, 0, fmt.Errorf("%q is not a range whose end is a number no less than its start", s)
	}
	return from, to, nil
}

func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return int(a.from - b.from) })
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && s.from <= out[n-1].to+1 {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Has reports whether ordinal n is reserved.
func (r Reserved) Has(n int32) bool {
	_, ok := r.spanOf(int64(n))
	return ok
}

func (r Reserved) spanOf(n int64) (span, bool) {
	for _, s := range r.spans {
		if n >= s.from && n <= s.to {
			return s, true
		}
	}
	return span{}, false
}

// Slots are the ordinals of the set's replicas, ascending: replicas ordinals from start on, skipping the
// reserved ones. Ordinals past MaxInt32 cannot name a pod; the list then ends early.
func Slots(start, replicas int32, reserved Reserved) []int32 {
	out := make([]int32, 0, max(replicas, 0))
	for n := int64(start); int32(len(out)) < replicas && n <= math.MaxInt32; n++ { //nolint:gosec // replicas bounds len
		if s, ok := reserved.spanOf(n); ok {
			n = s.to
			continue
		}
		out = append(out, int32(n))
	}
	return out
}

// Ordinal is the ordinal of pod name in the set: N of "<set>-N", written without leading zeros; -1 when the
// name is not one the set gives its pods.
func Ordinal(set, pod string) int32 {
	suffix, ok := strings.CutPrefix(pod, set+"-")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(suffix, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != suffix {
		return -1
	}
	return int32(n)
}

// PodName is the name of the set's pod with ordinal n.
func PodName(set string, n int32) string { return set + "-" + strconv.Itoa(int(n)) }
