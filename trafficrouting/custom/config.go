package custom

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// config is the part of an object a script sees and returns, in upstream's JSON form.
type config struct {
	Spec        map[string]any    `json:"spec,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// currentOf is the object's config as it is now.
func currentOf(obj *unstructured.Unstructured) config {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	return config{Spec: spec, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
}

// originalOf is the config saved before the release's first change, or the current one when none is saved.
func originalOf(obj *unstructured.Unstructured) (config, error) {
	saved := obj.GetAnnotations()[rolloutsv1beta1.OriginalSpecConfigurationAnnotation]
	if saved == "" {
		return currentOf(obj), nil
	}
	var c config
	if err := json.Unmarshal([]byte(saved), &c); err != nil {
		return config{}, fmt.Errorf("%s %s/%s: annotation %s is not valid JSON: %w", obj.GetKind(), obj.GetNamespace(),
			obj.GetName(), rolloutsv1beta1.OriginalSpecConfigurationAnnotation, err)
	}
	return c, nil
}

// setOriginal records the original in the config about to be written.
func setOriginal(c *config, original config) error {
	data, err := json.Marshal(original)
	if err != nil {
		return fmt.Errorf("encoding the original configuration: %w", err)
	}
	c.Annotations = maps.Clone(c.Annotations)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[rolloutsv1beta1.OriginalSpecConfigurationAnnotation] = string(data)
	return nil
}

// scriptInput is the global `obj` of a custom script, as upstream's scripts read it: canaryWeight is a number
// and -1 means no weight.
type scriptInput struct {
	Data                  config                           `json:"data"`
	CanaryWeight          int32                            `json:"canaryWeight"`
	StableWeight          int32                            `json:"stableWeight"`
	Matches               []rolloutsv1beta1.HttpRouteMatch `json:"matches"`
	CanaryService         string                           `json:"canaryService"`
	StableService         string                           `json:"stableService"`
	RequestHeaderModifier *gatewayv1.HTTPHeaderFilter      `json:"requestHeaderModifier,omitempty"`
}

// transform runs the kind's script over the original config.
func (p *provider) transform(ctx context.Context, ref rolloutsv1beta1.ObjectRef, original config, r trafficrouting.Routes) (config, error) {
	script, err := p.script(ctx, ref)
	if err != nil {
		return config{}, err
	}
	in := scriptInput{
		Data: original, CanaryWeight: r.WeightOrNone(), StableWeight: 100 - max(r.WeightOrNone(), 0),
		Matches: r.Matches, CanaryService: p.cfg.CanaryService, StableService: p.cfg.StableService,
		RequestHeaderModifier: r.RequestHeaderModifier,
	}
	// Decoded as a map first: the VM stores a map directly, where a struct would cost a JSON round trip.
	var result map[string]any
	err = p.vm.Eval(ctx, script, in, &result)
	if err == nil {
		var out config
		if out, err = configOf(result); err == nil {
			return out, nil
		}
	}
	return config{}, fmt.Errorf("the Lua script of %s.%s: %w", ref.Kind, groupOf(ref.APIVersion), err)
}

// configOf reads a script's result as json.Unmarshal reads its JSON into a config. The usual result (spec an
// object, labels and annotations objects of strings, keys spelled as upstream spells them) is read directly;
// anything else takes the JSON round trip, which also names what does not fit.
func configOf(result map[string]any) (config, error) {
	if c, ok := configDirect(result); ok {
		return c, nil
	}
	var c config
	data, err := json.Marshal(result)
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil {
		return config{}, fmt.Errorf("%w: decoding the return value: %w", luavm.ErrScript, err)
	}
	return c, nil
}

// configDirect is configOf without JSON; false when result holds anything it would have to convert or reject.
func configDirect(result map[string]any) (config, bool) {
	var c config
	for k, v := range result {
		var ok bool
		switch k {
		case "spec":
			c.Spec, ok = objectOrNull(v)
		case "labels":
			c.Labels, ok = stringsOrNull(v)
		case "annotations":
			c.Annotations, ok = stringsOrNull(v)
		default:
			// Unmarshal matches field names regardless of case.
			ok = !strings.EqualFold(k, "spec") && !strings.EqualFold(k, "labels") && !strings.EqualFold(k, "annotations")
		}
		if !ok {
			return config{}, false
		}
	}
	return c, true
}

func objectOrNull(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok || v == nil
}

// stringsOrNull is what Unmarshal makes of a map[string]string: null members become "", other kinds do not fit.
func stringsOrNull(v any) (map[string]string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, v == nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		switch e := e.(type) {
		case string:
			out[k] = e
		case nil:
			out[k] = ""
		default:
			return nil, false
		}
	}
	return out, true
}
