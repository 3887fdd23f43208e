package ingress

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// newCanary builds the canary Ingress: the stable Ingress's class, TLS, labels and annotations, and only the
// paths served by the stable Service, now served by the canary Service.
func newCanary(stable *networkingv1.Ingress, name string, cfg trafficrouting.Config) (*networkingv1.Ingress, error) {
	canary := &networkingv1.Ingress{}
	canary.Name, canary.Namespace = name, stable.Namespace
	canary.Labels, canary.Annotations = maps.Clone(stable.Labels), maps.Clone(stable.Annotations)
	canary.OwnerReferences = append(canary.OwnerReferences, cfg.Owner)
	canary.Spec.IngressClassName = stable.Spec.IngressClassName
	canary.Spec.TLS = stable.Spec.TLS
	canary.Spec.Rules = canaryRules(stable.Spec.Rules, cfg.StableService, cfg.CanaryService)
	if len(canary.Spec.Rules) == 0 {
		return nil, fmt.Errorf("no path of Ingress %s/%s is served by Service %s", stable.Namespace, stable.Name, cfg.StableService)
	}
	return canary, nil
}

// canaryRules keeps the rules and paths whose backend is the stable Service, renamed to the canary one.
func canaryRules(rules []networkingv1.IngressRule, stable, canary string) []networkingv1.IngressRule {
	var out []networkingv1.IngressRule
	for _, rule := range rules {
		if rule.HTTP == nil {
			continue
		}
		var paths []networkingv1.HTTPIngressPath
		for _, path := range rule.HTTP.Paths {
			if svc := path.Backend.Service; svc != nil && svc.Name == stable {
				path = *path.DeepCopy()
				path.Backend.Service.Name = canary
				paths = append(paths, path)
			}
		}
		if len(paths) > 0 {
			out = append(out, networkingv1.IngressRule{Host: rule.Host, IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths},
			}})
		}
	}
	return out
}

// scriptInput is the global `obj` of an ingress script, as upstream's scripts read it: weight is a string and
// "-1" means no weight.
type scriptInput struct {
	Annotations           map[string]string                `json:"annotations"`
	Weight                string                           `json:"weight"`
	Matches               []rolloutsv1beta1.HttpRouteMatch `json:"matches"`
	CanaryService         string                           `json:"canaryService"`
	RequestHeaderModifier *gatewayv1.HTTPHeaderFilter      `json:"requestHeaderModifier,omitempty"`
}

// annotations runs the class's script over the current annotations and the routes.
func (p *provider) annotations(ctx context.Context, current map[string]string, r trafficrouting.Routes) (map[string]string, error) {
	script, err := p.script(ctx)
	if err != nil {
		return nil, err
	}
	in := scriptInput{
		Annotations: current, Weight: fmt.Sprint(r.WeightOrNone()), Matches: r.Matches,
		CanaryService: p.cfg.CanaryService, RequestHeaderModifier: r.RequestHeaderModifier,
	}
	if in.Annotations == nil {
		in.Annotations = map[string]string{}
	}
	out := map[string]string{}
	if err := p.vm.Eval(ctx, script, in, &out); err != nil {
		return nil, fmt.Errorf("the Lua script of ingress class %q: %w", p.class, err)
	}
	return out, nil
}

// patchAnnotations replaces the canary Ingress's annotations with want.
func (p *provider) patchAnnotations(ctx context.Context, ing *networkingv1.Ingress, want map[string]string) error {
	patch := trafficrouting.ReplaceMapPatch(ing.Annotations, want)
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return err
	}
	if err := p.c.Patch(ctx, ing, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching Ingress %s/%s: %w", ing.Namespace, ing.Name, err)
	}
	return nil
}
