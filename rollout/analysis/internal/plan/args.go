package plan

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// argRef is a reference to an argument in a metric's strings: {{args.<name>}}, spaces allowed inside the braces.
var argRef = regexp.MustCompile(`\{\{\s*args\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}`)

// ArgRefs lists, sorted and once each, the arguments a provider's strings refer to.
func ArgRefs(p analysisv1alpha1.MetricProvider) []string {
	var names []string
	_, _ = mapStrings(p, func(s string) (string, error) {
		for _, m := range argRef.FindAllStringSubmatch(s, -1) {
			names = append(names, m[1])
		}
		return s, nil
	})
	slices.Sort(names)
	return slices.Compact(names)
}

// RefersToArgs reports whether s refers to an argument.
func RefersToArgs(s string) bool { return argRef.MatchString(s) }

// Substitute returns the provider with every {{args.<name>}} in its strings replaced by values[name]; a
// reference to an argument without a value is an error naming it.
func Substitute(p analysisv1alpha1.MetricProvider, values map[string]string) (analysisv1alpha1.MetricProvider, error) {
	return mapStrings(p, func(s string) (string, error) {
		var missing string
		out := argRef.ReplaceAllStringFunc(s, func(ref string) string {
			name := argRef.FindStringSubmatch(ref)[1]
			v, ok := values[name]
			if !ok && missing == "" {
				missing = name
			}
			return v
		})
		if missing != "" {
			return "", fmt.Errorf("argument %q has no value", missing)
		}
		return out, nil
	})
}

// mapStrings applies f to every string of the provider, whichever field (a query, a header, a container's
// args): the provider goes through its JSON form, so every provider and every field is covered alike.
func mapStrings(p analysisv1alpha1.MetricProvider, f func(string) (string, error)) (analysisv1alpha1.MetricProvider, error) {
	var out analysisv1alpha1.MetricProvider
	raw, err := json.Marshal(p)
	if err != nil {
		return out, err
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return out, err
	}
	if doc, err = walkStrings(doc, f); err != nil {
		return out, err
	}
	if raw, err = json.Marshal(doc); err != nil {
		return out, err
	}
	return out, json.Unmarshal(raw, &out)
}

func walkStrings(v any, f func(string) (string, error)) (any, error) {
	var err error
	switch t := v.(type) {
	case string:
		return f(t)
	case []any:
		for i := range t {
			if t[i], err = walkStrings(t[i], f); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k := range t {
			if t[k], err = walkStrings(t[k], f); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// Template is a template a run names, with its spec.
type Template struct {
	Ref  analysisv1alpha1.TemplateRef
	Spec analysisv1alpha1.AnalysisTemplateSpec
}

// String names the template for messages: its kind and name.
func (t Template) String() string {
	if t.Ref.ClusterScope {
		return "ClusterAnalysisTemplate " + t.Ref.Name
	}
	return "AnalysisTemplate " + t.Ref.Name
}

// Resolved is what a run measures: its templates' metrics, then its own, and the arguments they read.
type Resolved struct {
	Metrics []analysisv1alpha1.Metric
	// Args each have a value or valueFrom: the run's where it gives one, else the templates' default.
	Args []analysisv1alpha1.Argument
}

// Resolve merges a run's templates (in the order it names them) with its own metrics and arguments. A metric
// name defined twice, a template's argument nobody gives a value, or templates disagreeing on an argument's
// default the run does not override, make the run unresolvable: the error says which.
func Resolve(spec *analysisv1alpha1.AnalysisRunSpec, templates []Template) (Resolved, error) {
	var out Resolved
	from := map[string]string{}
	add := func(m analysisv1alpha1.Metric, source string) error {
		if prev, ok := from[m.Name]; ok {
			return fmt.Errorf("metric %q is defined by %s and by %s", m.Name, prev, source)
		}
		from[m.Name] = source
		out.Metrics = append(out.Metrics, m)
		return nil
	}
	for _, t := range templates {
		for _, m := range t.Spec.Metrics {
			if err := add(m, t.String()); err != nil {
				return Resolved{}, err
			}
		}
	}
	for _, m := range spec.Metrics {
		if err := add(m, "the run"); err != nil {
			return Resolved{}, err
		}
	}
	args, err := resolveArgs(spec.Args, templates)
	out.Args = args
	return out, err
}

// resolveArgs gives each argument its value: the run's, else the one default the templates declare.
func resolveArgs(run []analysisv1alpha1.Argument, templates []Template) ([]analysisv1alpha1.Argument, error) {
	out := slices.Clone(run)
	given := map[string]bool{}
	for _, a := range run {
		given[a.Name] = true
	}
	declared := map[string]analysisv1alpha1.Argument{}
	source := map[string]string{}
	for _, t := range templates {
		for _, a := range t.Spec.Args {
			if given[a.Name] {
				continue
			}
			if !hasValue(a) {
				return nil, fmt.Errorf("argument %q of %s has no value: the run must give one", a.Name, t)
			}
			if prev, ok := declared[a.Name]; ok && !sameValue(prev, a) {
				return nil, fmt.Errorf("argument %q has different defaults in %s and %s: the run must give it", a.Name, source[a.Name], t)
			}
			if _, ok := declared[a.Name]; !ok {
				declared[a.Name], source[a.Name] = a, t.String()
				out = append(out, a)
			}
		}
	}
	return out, nil
}

func hasValue(a analysisv1alpha1.Argument) bool {
	return a.Value != nil || (a.ValueFrom != nil && a.ValueFrom.SecretKeyRef != nil)
}

func sameValue(a, b analysisv1alpha1.Argument) bool {
	ra, _ := json.Marshal(struct{ V, F any }{a.Value, a.ValueFrom})
	rb, _ := json.Marshal(struct{ V, F any }{b.Value, b.ValueFrom})
	return string(ra) == string(rb)
}
