package bench

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ClientRequestsMetric is the manager's request counter (see
// rollout/internal/metrics).
const ClientRequestsMetric = "flotilla_client_requests_total"

// Sample is one series of the Prometheus text exposition format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseText reads the samples of a Prometheus text exposition, skipping
// comments; a line it cannot read is an error.
func ParseText(r io.Reader) ([]Sample, error) {
	var out []Sample
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		out = append(out, s)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

// parseSample reads `name{label="value",...} value [timestamp]`.
func parseSample(line string) (Sample, error) {
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return Sample{}, fmt.Errorf("no value in %q", line)
	}
	s := Sample{Name: line[:end], Labels: map[string]string{}}
	rest := line[end:]
	if rest[0] == '{' {
		var err error
		if rest, err = parseLabels(rest[1:], s.Labels); err != nil {
			return Sample{}, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return Sample{}, fmt.Errorf("%s: no value", s.Name)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: value: %w", s.Name, err)
	}
	s.Value = v
	return s, nil
}

// parseLabels reads label pairs up to the closing brace and returns what
// follows it.
func parseLabels(s string, into map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return "", errors.New("unterminated labels")
		}
		if s[0] == '}' {
			return s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return "", fmt.Errorf("bad label in %q", s)
		}
		value, rest, err := unquoteLabel(s[eq+2:])
		if err != nil {
			return "", err
		}
		into[strings.TrimSpace(s[:eq])] = value
		s = rest
	}
}

// unquoteLabel reads a label value up to its closing quote, undoing the
// format's three escapes (\\, \" and \n).
func unquoteLabel(s string) (value, rest string, err error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), s[i+1:], nil
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(unescape(s[i]))
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("unterminated label value")
}

func unescape(c byte) byte {
	if c == 'n' {
		return '\n'
	}
	return c
}

// RequestKey identifies one series of the request counter.
type RequestKey struct{ Verb, Resource string }

// ClientRequests extracts the request counter from samples.
func ClientRequests(samples []Sample) map[RequestKey]float64 {
	out := map[RequestKey]float64{}
	for _, s := range samples {
		if s.Name == ClientRequestsMetric {
			out[RequestKey{s.Labels["verb"], s.Labels["resource"]}] += s.Value
		}
	}
	return out
}

// DiffRequests is what was sent between two readings, most frequent
// first; series that did not move are left out.
func DiffRequests(before, after map[RequestKey]float64) []RequestCount {
	var out []RequestCount
	for key, v := range after {
		if n := int64(v - before[key]); n > 0 {
			out = append(out, RequestCount{Verb: key.Verb, Resource: key.Resource, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b RequestCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
	return out
}

// bucket is one cumulative bucket of a histogram: the observations of at most UpperBound.
type bucket struct {
	UpperBound float64
	Count      float64
}

// histogramRise is how much each bucket of a histogram (its name without the _bucket suffix) rose between two
// readings, summed over the series whose labels include labels, in ascending order of bound.
func histogramRise(metric string, labels map[string]string, before, after []Sample) ([]bucket, error) {
	was, err := histogramBuckets(metric, labels, before)
	if err != nil {
		return nil, err
	}
	is, err := histogramBuckets(metric, labels, after)
	if err != nil {
		return nil, err
	}
	out := make([]bucket, 0, len(is))
	for le, n := range is {
		out = append(out, bucket{UpperBound: le, Count: n - was[le]})
	}
	slices.SortFunc(out, func(a, b bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
	return out, nil
}

// histogramBuckets sums the selected series' buckets by bound (the le label).
func histogramBuckets(metric string, labels map[string]string, samples []Sample) (map[float64]float64, error) {
	out := map[float64]float64{}
	for _, s := range samples {
		if s.Name != metric+"_bucket" || !labelsInclude(s.Labels, labels) {
			continue
		}
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bucket bound %q: %w", s.Name, s.Labels["le"], err)
		}
		out[le] += s.Value
	}
	return out, nil
}

// bucketQuantile is the q-quantile (0 < q < 1) of cumulative buckets as Prometheus's histogram_quantile
// computes it: interpolated linearly within the bucket that holds the rank (the first bucket starting at 0),
// and the highest finite bound when the rank falls in the +Inf bucket. It is NaN without observations or
// without a +Inf bucket. It is only as fine as the buckets: a figure inside a bucket is an interpolation.
func bucketQuantile(q float64, buckets []bucket) float64 {
	last := len(buckets) - 1
	if last < 1 || !math.IsInf(buckets[last].UpperBound, 1) || buckets[last].Count <= 0 {
		return math.NaN()
	}
	rank := q * buckets[last].Count
	i := sort.Search(last, func(i int) bool { return buckets[i].Count >= rank })
	if i == last {
		return buckets[last-1].UpperBound
	}
	upper := buckets[i].UpperBound
	if i == 0 && upper <= 0 {
		return upper
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = buckets[i-1].UpperBound, buckets[i-1].Count
	}
	return lower + (upper-lower)*(rank-below)/(buckets[i].Count-below)
}
