package custom

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
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
	var out config
	if err := p.vm.Eval(ctx, script, in, &out); err != nil {
		return config{}, fmt.Errorf("the Lua script of %s.%s: %w", ref.Kind, groupOf(ref.APIVersion), err)
	}
	return out, nil
}
