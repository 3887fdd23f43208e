// Package custom routes traffic through any object a Lua script knows how to change (an Istio VirtualService,
// a DestinationRule, a user's own CRD). The object's original spec, labels and annotations are kept in an
// annotation on it, every step is computed from that original, and finalizing puts it back exactly.
package custom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	luaconfiguration "github.com/flotilla-dev/flotilla/lua_configuration"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// Factory builds the provider of Rollouts whose traffic routing names custom network objects.
func Factory(c client.Client, vm *luavm.VM, overrides trafficrouting.ScriptOverrides) trafficrouting.Factory {
	return func(cfg trafficrouting.Config) (trafficrouting.Provider, error) {
		refs := cfg.Ref.CustomNetworkRefs
		if len(refs) == 0 {
			return nil, nil
		}
		for i, ref := range refs {
			if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
				return nil, fmt.Errorf("trafficRoutings[0].customNetworkRefs[%d] needs apiVersion, kind and name", i)
			}
		}
		return &provider{c: c, vm: vm, overrides: overrides, cfg: cfg, refs: refs}, nil
	}
}

type provider struct {
	c         client.Client
	vm        *luavm.VM
	overrides trafficrouting.ScriptOverrides
	cfg       trafficrouting.Config
	refs      []rolloutsv1beta1.ObjectRef
}

// Name implements trafficrouting.Provider.
func (p *provider) Name() string { return "custom" }

// Initialize implements trafficrouting.Provider: every object exists and its kind's script runs on it.
func (p *provider) Initialize(ctx context.Context) error {
	for _, ref := range p.refs {
		_, original, err := p.getOriginal(ctx, ref)
		if err != nil {
			return err
		}
		// A dry run, so a broken script is found before any pod of the release moves.
		if _, err := p.transform(ctx, ref, original, trafficrouting.Stable()); err != nil {
			return err
		}
	}
	return nil
}

// EnsureRoutes implements trafficrouting.Provider.
func (p *provider) EnsureRoutes(ctx context.Context, r trafficrouting.Routes) (bool, error) {
	return p.each(ctx, func(ctx context.Context, ref rolloutsv1beta1.ObjectRef) (bool, error) {
		return p.ensure(ctx, ref, r)
	})
}

// Finalize implements trafficrouting.Provider.
func (p *provider) Finalize(ctx context.Context) (bool, error) {
	return p.each(ctx, p.restore)
}

func (p *provider) each(ctx context.Context, do func(context.Context, rolloutsv1beta1.ObjectRef) (bool, error)) (bool, error) {
	all := true
	for _, ref := range p.refs {
		done, err := do(ctx, ref)
		if err != nil {
			return false, err
		}
		all = all && done
	}
	return all, nil
}

func (p *provider) get(ctx context.Context, ref rolloutsv1beta1.ObjectRef) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(ref.APIVersion)
	obj.SetKind(ref.Kind)
	err := p.c.Get(ctx, client.ObjectKey{Namespace: p.cfg.Namespace, Name: ref.Name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s %s/%s (trafficRoutings[0].customNetworkRefs): %w", ref.Kind, p.cfg.Namespace, ref.Name, errNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, p.cfg.Namespace, ref.Name, err)
	}
	return obj, nil
}

// script is the kind's script: the built-in one first, then the configuration ConfigMap's key.
func (p *provider) script(ctx context.Context, ref rolloutsv1beta1.ObjectRef) (string, error) {
	group := groupOf(ref.APIVersion)
	if script, ok := luaconfiguration.Custom(group, ref.Kind); ok {
		return script, nil
	}
	key := trafficrouting.CustomScriptKey(ref.Kind, group)
	script, ok, err := p.overrides.Script(ctx, key)
	if err != nil || ok {
		return script, err
	}
	return "", fmt.Errorf("no Lua script for %s.%s: none is built in and ConfigMap %s has no key %s",
		ref.Kind, group, trafficrouting.ConfigurationName, key)
}

func groupOf(apiVersion string) string {
	if group, _, found := strings.Cut(apiVersion, "/"); found {
		return group
	}
	return ""
}

// ensure rewrites one object from its original to route as asked.
func (p *provider) ensure(ctx context.Context, ref rolloutsv1beta1.ObjectRef, r trafficrouting.Routes) (bool, error) {
	done := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, original, err := p.getOriginal(ctx, ref)
		if err != nil {
			return err
		}
		want, err := p.transform(ctx, ref, original, r)
		if err != nil {
			return err
		}
		if err := setOriginal(&want, original); err != nil {
			return err
		}
		done = equalConfig(currentOf(obj), want)
		if done {
			return nil
		}
		return p.write(ctx, obj, want)
	})
	return done, err
}

// restore puts the original back, if a release changed the object.
func (p *provider) restore(ctx context.Context, ref rolloutsv1beta1.ObjectRef) (bool, error) {
	done := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, original, err := p.getOriginal(ctx, ref)
		if err != nil || obj.GetAnnotations()[rolloutsv1beta1.OriginalSpecConfigurationAnnotation] == "" {
			return err
		}
		done = false
		return p.write(ctx, obj, original)
	})
	if errors.Is(err, errNotFound) {
		// Nothing left to restore.
		return true, nil
	}
	return done, err
}

var errNotFound = errors.New("not found")

func (p *provider) write(ctx context.Context, obj *unstructured.Unstructured, c config) error {
	if c.Spec == nil {
		unstructured.RemoveNestedField(obj.Object, "spec")
	} else {
		obj.Object["spec"] = c.Spec
	}
	obj.SetLabels(c.Labels)
	obj.SetAnnotations(c.Annotations)
	if err := p.c.Update(ctx, obj); err != nil {
		return fmt.Errorf("updating %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func equalConfig(a, b config) bool {
	return equality.Semantic.DeepEqual(normalize(a), normalize(b))
}

// normalize makes empty and missing maps compare equal, as the apiserver drops empty metadata maps.
func normalize(c config) config {
	if len(c.Labels) == 0 {
		c.Labels = nil
	}
	if len(c.Annotations) == 0 {
		c.Annotations = nil
	}
	data, _ := json.Marshal(c.Spec)
	var spec any
	_ = json.Unmarshal(data, &spec)
	c.Spec, _ = spec.(map[string]any)
	return c
}

// getOriginal reads an object and the configuration it had before Flotilla changed it.
func (p *provider) getOriginal(ctx context.Context, ref rolloutsv1beta1.ObjectRef) (*unstructured.Unstructured, config, error) {
	obj, err := p.get(ctx, ref)
	if err != nil {
		return nil, config{}, err
	}
	original, err := originalOf(obj)
	return obj, original, err
}
