package trafficrouting

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfigurationName is the ConfigMap, in the manager's namespace, whose keys override or add Lua scripts
// (lua.traffic.routing.ingress.<class>, lua.traffic.routing.<Kind>.<group>).
const ConfigurationName = "kruise-rollout-configuration"

// ScriptOverrides reads Lua scripts users supply in the configuration ConfigMap.
type ScriptOverrides interface {
	// Script returns the script under key, and whether there is one.
	Script(ctx context.Context, key string) (string, bool, error)
}

// ConfigMapScripts reads script overrides from the configuration ConfigMap in Namespace.
type ConfigMapScripts struct {
	Reader    client.Reader
	Namespace string
}

// Script implements ScriptOverrides.
func (s ConfigMapScripts) Script(ctx context.Context, key string) (string, bool, error) {
	cm := &corev1.ConfigMap{}
	err := s.Reader.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: ConfigurationName}, cm)
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, ConfigurationName, err)
	}
	script, ok := cm.Data[key]
	return script, ok, nil
}

// IngressScriptKey is the override key of an ingress class's script.
func IngressScriptKey(class string) string { return "lua.traffic.routing.ingress." + class }

// CustomScriptKey is the override key of the script for a custom network kind.
func CustomScriptKey(kind, group string) string { return "lua.traffic.routing." + kind + "." + group }
