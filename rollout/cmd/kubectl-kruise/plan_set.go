package main

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// splitPairs separates the resources of a `set` command line from the changes after them: the first
// argument that isChange starts the changes, and every argument after it must be one too.
func splitPairs(args []string, isChange func(string) bool, what string) ([]string, []string, error) {
	i := slices.IndexFunc(args, isChange)
	if i < 0 {
		return args, nil, nil
	}
	for _, a := range args[i:] {
		if !isChange(a) {
			return nil, nil, fmt.Errorf("all resources must be specified before %s changes: %s", what, a)
		}
	}
	return args[:i], args[i:], nil
}

// parseImages reads CONTAINER=IMAGE pairs; "*" names every container and then must be the only pair.
func parseImages(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, fmt.Errorf("at least one image update is required")
	}
	images := map[string]string{}
	for _, p := range pairs {
		name, image, _ := strings.Cut(p, "=")
		if name == "" || image == "" {
			return nil, fmt.Errorf("invalid image format: %q", p)
		}
		images[name] = image
	}
	if _, all := images["*"]; all && len(images) > 1 {
		return nil, fmt.Errorf("all containers are already specified by *, but saw more than one container_name=container_image pairs")
	}
	return images, nil
}

// planSetImage sets the image of the named containers (init containers included), failing for a name
// no container has.
func planSetImage(obj *unstructured.Unstructured, images map[string]string) (edit, error) {
	found := map[string]bool{}
	e, _, err := editContainers(obj, func(c map[string]any) (bool, error) {
		name, _ := c["name"].(string)
		for key, image := range images {
			if key == name || key == "*" {
				c["image"] = image
				found[key] = true
			}
		}
		return true, nil
	})
	if err != nil {
		return edit{}, err
	}
	var missing []string
	for _, key := range sortedKeys(images) {
		if !found[key] {
			missing = append(missing, fmt.Sprintf("unable to find container named %q", key))
		}
	}
	if len(missing) > 0 {
		return edit{}, errors.New(strings.Join(missing, "; "))
	}
	return e, nil
}

// envChange is what `set env` does to each selected container.
type envChange struct {
	// Containers is a shell pattern of container names ("*": all).
	Containers string
	Set        []corev1.EnvVar
	EnvFrom    []corev1.EnvFromSource
	Remove     []string
	// Overwrite allows replacing a variable that already has a different value.
	Overwrite bool
}

func isEnvChange(a string) bool {
	return strings.Contains(a, "=") || (strings.HasSuffix(a, "-") && a != "-" && !strings.Contains(a, "/"))
}

// parseEnv reads KEY=VALUE settings and KEY- removals.
func parseEnv(args []string) ([]corev1.EnvVar, []string, error) {
	var set []corev1.EnvVar
	var remove []string
	for _, a := range args {
		key, value, isSet := strings.Cut(a, "=")
		if !isSet {
			key = strings.TrimSuffix(a, "-")
		}
		if errs := validation.IsEnvVarName(key); len(errs) > 0 {
			return nil, nil, fmt.Errorf("invalid key name %q: %s", key, strings.Join(errs, "; "))
		}
		if isSet {
			set = append(set, corev1.EnvVar{Name: key, Value: value})
		} else {
			remove = append(remove, key)
		}
	}
	for _, v := range set {
		if slices.Contains(remove, v.Name) {
			return nil, nil, fmt.Errorf("can't both modify and remove environment variable %q", v.Name)
		}
	}
	return set, remove, nil
}

// planSetEnv applies an envChange to the containers it selects.
func planSetEnv(obj *unstructured.Unstructured, ch envChange) (edit, error) {
	e, matched, err := editContainers(obj, func(c map[string]any) (bool, error) {
		if !containerSelected(c, ch.Containers) {
			return false, nil
		}
		if err := checkOverwrite(c, ch); err != nil {
			return true, err
		}
		if err := setContainerEnv(c, ch.Set, ch.Remove); err != nil {
			return true, err
		}
		return true, addEnvFrom(c, ch.EnvFrom)
	})
	if err == nil && matched == 0 {
		err = fmt.Errorf("unable to find container named %s", ch.Containers)
	}
	return e, err
}

func containerSelected(c map[string]any, pattern string) bool {
	name, _ := c["name"].(string)
	ok, err := pathMatch(pattern, name)
	return err == nil && ok
}

// pathMatch matches a container name against a shell pattern, as kubectl's --containers does.
func pathMatch(pattern, name string) (bool, error) { return path.Match(pattern, name) }

// checkOverwrite refuses, without --overwrite, to change a variable that already has another value.
func checkOverwrite(c map[string]any, ch envChange) error {
	if ch.Overwrite {
		return nil
	}
	var env []corev1.EnvVar
	if err := decodeField(c, "env", &env); err != nil {
		return err
	}
	for _, v := range ch.Set {
		i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == v.Name })
		if i >= 0 && (env[i].Value != v.Value || env[i].ValueFrom != nil) {
			return fmt.Errorf("'%s' already has a value (%s), and --overwrite is false", v.Name, env[i].Value)
		}
	}
	return nil
}

// setContainerEnv replaces variables of the same name in place, appends new ones and drops removed ones.
func setContainerEnv(c map[string]any, set []corev1.EnvVar, remove []string) error {
	var env []corev1.EnvVar
	if err := decodeField(c, "env", &env); err != nil {
		return err
	}
	return encodeField(c, "env", updateEnv(env, set, remove))
}

func updateEnv(existing, set []corev1.EnvVar, remove []string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(existing)+len(set))
	done := map[string]bool{}
	for _, r := range remove {
		done[r] = true
	}
	for _, e := range existing {
		if done[e.Name] {
			continue
		}
		if i := slices.IndexFunc(set, func(v corev1.EnvVar) bool { return v.Name == e.Name }); i >= 0 {
			e = set[i]
			done[e.Name] = true
		}
		out = append(out, e)
	}
	for _, v := range set {
		if !done[v.Name] {
			out = append(out, v)
			done[v.Name] = true
		}
	}
	return out
}

func addEnvFrom(c map[string]any, from []corev1.EnvFromSource) error {
	if len(from) == 0 {
		return nil
	}
	var existing []corev1.EnvFromSource
	if err := decodeField(c, "envFrom", &existing); err != nil {
		return err
	}
	for _, f := range from {
		if !slices.ContainsFunc(existing, func(e corev1.EnvFromSource) bool { return equalJSON(e, f) }) {
			existing = append(existing, f)
		}
	}
	return encodeField(c, "envFrom", existing)
}

var invalidEnvNameChars = regexp.MustCompile("[^A-Za-z0-9_]")

// envFromKeys turns the keys of a Secret or ConfigMap into variables that reference them, named as
// kubectl names them: PREFIX + the key upper-cased with other characters than letters, digits and _
// replaced by _. Without keys the whole object is referenced through envFrom.
func envFromKeys(kind, name, prefix string, keys, only []string) ([]corev1.EnvVar, []corev1.EnvFromSource) {
	ref := corev1.LocalObjectReference{Name: name}
	if len(only) == 0 {
		src := corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}
		if kind == "Secret" {
			src = corev1.EnvFromSource{Prefix: prefix, SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}
		}
		return nil, []corev1.EnvFromSource{src}
	}
	var env []corev1.EnvVar
	for _, key := range slices.Sorted(slices.Values(keys)) {
		if !slices.Contains(only, key) {
			continue
		}
		source := &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: key}}
		if kind == "Secret" {
			source = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref, Key: key}}
		}
		envName := prefix + strings.ToUpper(invalidEnvNameChars.ReplaceAllString(key, "_"))
		env = append(env, corev1.EnvVar{Name: envName, ValueFrom: source})
	}
	return env, nil
}

// resourceChange is what `set resources` does to each selected container.
type resourceChange struct {
	Containers       string
	Limits, Requests corev1.ResourceList
}

// parseResourceList reads "cpu=200m,memory=512Mi".
func parseResourceList(spec string) (corev1.ResourceList, error) {
	if spec == "" {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, item := range strings.Split(spec, ",") {
		name, value, ok := strings.Cut(item, "=")
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("invalid argument syntax %v, expected <resource>=<value>", item)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("invalid quantity %q for %s: %w", value, name, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// planSetResources merges limits and requests into the selected containers' resources.
func planSetResources(obj *unstructured.Unstructured, ch resourceChange) (edit, error) {
	e, matched, err := editContainers(obj, func(c map[string]any) (bool, error) {
		if !containerSelected(c, ch.Containers) {
			return false, nil
		}
		var r corev1.ResourceRequirements
		if err := decodeField(c, "resources", &r); err != nil {
			return true, err
		}
		r.Limits = mergeResources(r.Limits, ch.Limits)
		r.Requests = mergeResources(r.Requests, ch.Requests)
		return true, encodeField(c, "resources", r)
	})
	if err == nil && matched == 0 {
		err = fmt.Errorf("unable to find container named %s", ch.Containers)
	}
	return e, err
}

func mergeResources(into, from corev1.ResourceList) corev1.ResourceList {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = corev1.ResourceList{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
