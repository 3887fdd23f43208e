package admission

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func named(name string, mutate ...mutation) *kruiseappsv1alpha1.SidecarSet {
	s := sidecarSet()
	s.Name = name
	for _, m := range mutate {
		m(s)
	}
	return s
}

func selecting(labels map[string]string) mutation {
	return func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels} }
}

func canaryOf(base string) mutation {
	return func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Annotations[kruiseappsv1alpha1.SidecarSetCanaryAnnotation] = "true"
		s.Annotations[kruiseappsv1alpha1.SidecarSetBaseAnnotation] = base
		s.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType
	}
}

func cluster(sets ...*kruiseappsv1alpha1.SidecarSet) Cluster {
	c := Cluster{NamespaceLabels: map[string]map[string]string{"prod": {"env": "prod"}, "dev": {"env": "dev"}}}
	for _, s := range sets {
		c.SidecarSets = append(c.SidecarSets, *s)
	}
	return c
}

func TestValidateConflicts(t *testing.T) {
	other := named("other", selecting(map[string]string{"app": "nginx", "tier": "web"}))
	tests := []struct {
		name   string
		set    *kruiseappsv1alpha1.SidecarSet
		others []*kruiseappsv1alpha1.SidecarSet
		want   string // "" accepts
	}{
		{"a container of the same name for the same pods", named("scs"), []*kruiseappsv1alpha1.SidecarSet{other},
			`spec.containers[0].name: Invalid value: "scs": container scs already exist in other`},
		{"an init container of the same name", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) { initContainer(s) }),
			[]*kruiseappsv1alpha1.SidecarSet{named("other", func(s *kruiseappsv1alpha1.SidecarSet) {
				initContainer(s)
				container(s).Name = "x"
			})},
			`spec.initContainers[0].name: Invalid value: "init": container init already exist in other`},
		{"disjoint selectors", named("scs"), []*kruiseappsv1alpha1.SidecarSet{named("other", selecting(map[string]string{"app": "redis"}))}, ""},
		{"the stored version of itself", named("scs"), []*kruiseappsv1alpha1.SidecarSet{named("scs")}, ""},
		{"different namespaces", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "a" }),
			[]*kruiseappsv1alpha1.SidecarSet{named("other", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "b" })}, ""},
		{"a namespace its selector selects", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "prod" }),
			[]*kruiseappsv1alpha1.SidecarSet{named("other", func(s *kruiseappsv1alpha1.SidecarSet) {
				s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
			})}, "container scs already exist in other"},
		{"a namespace its selector does not select", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}), []*kruiseappsv1alpha1.SidecarSet{named("other", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "dev" })}, ""},
		{"a namespace that does not exist", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}), []*kruiseappsv1alpha1.SidecarSet{named("other", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "gone" })}, ""},
		{"disjoint namespace selectors", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}), []*kruiseappsv1alpha1.SidecarSet{named("other", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
		})}, ""},
		{"its base", named("canary", canaryOf("other")), []*kruiseappsv1alpha1.SidecarSet{other}, ""},
		{"its canary", named("scs"), []*kruiseappsv1alpha1.SidecarSet{named("other", canaryOf("scs"))}, ""},
		{"a different volume of the same name", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Name = "x" }),
			[]*kruiseappsv1alpha1.SidecarSet{named("other", func(s *kruiseappsv1alpha1.SidecarSet) {
				s.Spec.Volumes[0].EmptyDir, s.Spec.Volumes[0].HostPath = nil, &corev1.HostPathVolumeSource{Path: "/var/log"}
			})},
			`spec.volumes[0].name: Invalid value: "log": volume log is in conflict with sidecarset other`},
		{"the same volume", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Name = "x" }), []*kruiseappsv1alpha1.SidecarSet{other}, ""},
		{"an annotation both overwrite", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).Name = "x"
			patch(kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy, map[string]string{"a": "1"})(s)
		}), []*kruiseappsv1alpha1.SidecarSet{named("other", patch(kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, map[string]string{"a": "{}"}))},
			`spec.patchPodMetadata[0].annotations[a]: Invalid value: "1": annotation a is in conflict with sidecarset other`},
		{"an annotation both merge", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).Name = "x"
			patch(kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, map[string]string{"a": "{}"})(s)
		}), []*kruiseappsv1alpha1.SidecarSet{named("other", patch(kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, map[string]string{"a": "{}"}))}, ""},
		{"an annotation one retains", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).Name = "x"
			patch(kruiseappsv1alpha1.SidecarSetRetainPatchPolicy, map[string]string{"a": "1"})(s)
		}), []*kruiseappsv1alpha1.SidecarSet{named("other", patch(kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy, map[string]string{"a": "2"}))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agg := Validate(tt.set, nil, cluster(tt.others...), allowAll).ToAggregate()
			switch {
			case tt.want == "" && agg != nil:
				t.Fatalf("rejected: %v", agg)
			case tt.want != "" && (agg == nil || !strings.Contains(agg.Error(), tt.want)):
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

func TestSelectorsOverlap(t *testing.T) {
	sel := func(labels map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
	}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	for _, tt := range []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		{"different keys", sel(map[string]string{"a": "b"}), sel(map[string]string{"c": "d"}), true},
		{"different values", sel(map[string]string{"a": "b"}), sel(map[string]string{"a": "c"}), false},
		{"a value among In's", sel(map[string]string{"a": "b"}), sel(nil, req("a", metav1.LabelSelectorOpIn, "b", "c")), true},
		{"In sets apart", sel(nil, req("a", metav1.LabelSelectorOpIn, "x")), sel(nil, req("a", metav1.LabelSelectorOpIn, "b", "c")), false},
		{"a value NotIn excludes", sel(map[string]string{"a": "b"}), sel(nil, req("a", metav1.LabelSelectorOpNotIn, "b")), false},
		{"NotIn of other values", sel(map[string]string{"a": "b"}), sel(nil, req("a", metav1.LabelSelectorOpNotIn, "c")), true},
		{"Exists and DoesNotExist", sel(nil, req("a", metav1.LabelSelectorOpExists)), sel(nil, req("a", metav1.LabelSelectorOpDoesNotExist)), false},
		{"a value and DoesNotExist", sel(map[string]string{"a": "b"}), sel(nil, req("a", metav1.LabelSelectorOpDoesNotExist)), false},
		{"Exists of another key", sel(map[string]string{"a": "b"}), sel(map[string]string{"a": "b"}, req("c", metav1.LabelSelectorOpExists)), true},
		{"a missing selector", nil, sel(map[string]string{"a": "b"}), false},
	} {
		if got := selectorsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: overlap %v, want %v", tt.name, got, tt.want)
		}
		if got := selectorsOverlap(tt.b, tt.a); got != tt.want {
			t.Errorf("%s, swapped: overlap %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestValidateCanary(t *testing.T) {
	base := named("base", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Name = "x" })
	tests := []struct {
		name   string
		set    *kruiseappsv1alpha1.SidecarSet
		others []*kruiseappsv1alpha1.SidecarSet
		want   string
	}{
		{"an existing base", named("scs", canaryOf("base")), []*kruiseappsv1alpha1.SidecarSet{base}, ""},
		{"no base", named("scs", canaryOf("")), nil,
			"metadata.annotations[apps.kruise.io/sidecarset-base]: Required value: a canary sidecarSet names its base sidecarSet"},
		{"itself", named("scs", canaryOf("scs")), []*kruiseappsv1alpha1.SidecarSet{named("scs")},
			`metadata.annotations[apps.kruise.io/sidecarset-base]: Invalid value: "scs": base sidecarSet cannot be itself`},
		{"a missing base", named("scs", canaryOf("gone")), []*kruiseappsv1alpha1.SidecarSet{base},
			`metadata.annotations[apps.kruise.io/sidecarset-base]: Not found: "gone"`},
		{"a canary base", named("scs", canaryOf("base")), []*kruiseappsv1alpha1.SidecarSet{named("base", canaryOf("root"))},
			`metadata.annotations[apps.kruise.io/sidecarset-base]: Invalid value: "base": base sidecarSet cannot be canary`},
		{"a rolling canary", named("scs", canaryOf("base"), func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType
		}), []*kruiseappsv1alpha1.SidecarSet{base}, "spec.updateStrategy.type: Forbidden: RollingUpdate is not supported for canary sidecarSet"},
		{"a base without canary mark", named("scs", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Annotations[kruiseappsv1alpha1.SidecarSetBaseAnnotation] = "gone"
		}), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agg := Validate(tt.set, nil, cluster(tt.others...), allowAll).ToAggregate()
			switch {
			case tt.want == "" && agg != nil:
				t.Fatalf("rejected: %v", agg)
			case tt.want != "" && (agg == nil || !strings.Contains(agg.Error(), tt.want)):
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

func TestValidateWhitelist(t *testing.T) {
	patched := named("scs", patch(kruiseappsv1alpha1.SidecarSetRetainPatchPolicy, map[string]string{"mesh.io/config": "x"}),
		func(s *kruiseappsv1alpha1.SidecarSet) { s.Labels = map[string]string{"team": "mesh"} })
	rule := func(selector, expr string) string {
		return `{"rules":[{` + selector + `"allowedAnnotationKeyExprs":["` + expr + `"]}]}`
	}
	tests := []struct {
		name      string
		whitelist string
		opts      Options
		want      string
	}{
		{"no whitelist", "", Options{}, "spec.patchPodMetadata: Forbidden: SidecarSet patch metadata whitelist not found"},
		{"no whitelist, defaults allowed", "", allowAll, ""},
		{"an allowed key", rule("", `^mesh\\.io/`), Options{}, ""},
		{"a key no rule allows", rule("", `^other\\.io/`), Options{}, "sidecarSet patch metadata annotation(mesh.io/config) is not allowed"},
		{"a rule for other SidecarSets", rule(`"selector":{"matchLabels":{"team":"db"}},`, `.*`), Options{},
			"spec.patchPodMetadata: Forbidden: sidecarSet patch metadata annotation is not allowed"},
		{"a rule for other SidecarSets, defaults allowed", rule(`"selector":{"matchLabels":{"team":"db"}},`, `.*`), allowAll, ""},
		{"a rule for this SidecarSet", rule(`"selector":{"matchLabels":{"team":"mesh"}},`, `.*`), Options{}, ""},
		{"a whitelist that is no JSON", "{", Options{}, "reading the patch metadata whitelist"},
		{"a bad expression", rule("", `(`), Options{}, "reading the patch metadata whitelist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agg := Validate(patched, nil, Cluster{Whitelist: tt.whitelist}, tt.opts).ToAggregate()
			switch {
			case tt.want == "" && agg != nil:
				t.Fatalf("rejected: %v", agg)
			case tt.want != "" && (agg == nil || !strings.Contains(agg.Error(), tt.want)):
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := named("scs", canaryOf("base"))
	c := cluster(named("base", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Name = "x" }))
	tests := []struct {
		name   string
		mutate mutation
		want   string
	}{
		{"a new image", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Image = "busybox:1.36.0" }, ""},
		{"an added container", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Containers = append(s.Spec.Containers, kruiseappsv1alpha1.SidecarContainer{Container: corev1.Container{Name: "new", Image: "busybox"}})
			Default(s, nil)
		}, "spec.containers[1].name: Forbidden: container new is not found in the stored SidecarSet: sidecar containers cannot be added or renamed"},
		{"a renamed container", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Name = "renamed" },
			"spec.containers[0].name: Forbidden: container renamed is not found"},
		{"a removed container, an init container kept", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Containers = nil
			initContainer(s)
		}, ""},
		{"a changed upgradeType", hotUpgrade,
			`spec.containers[0].upgradeStrategy.upgradeType: Invalid value: "HotUpgrade": container scs upgradeType is immutable`},
		{"a changed base", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Annotations[kruiseappsv1alpha1.SidecarSetBaseAnnotation] = "other"
		},
			`metadata.annotations[apps.kruise.io/sidecarset-base]: Invalid value: "other": annotations[apps.kruise.io/sidecarset-base] is immutable`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := old.DeepCopy()
			tt.mutate(s)
			agg := Validate(s, old, c, allowAll).ToAggregate()
			switch {
			case tt.want == "" && agg != nil:
				t.Fatalf("rejected: %v", agg)
			case tt.want != "" && (agg == nil || !strings.Contains(agg.Error(), tt.want)):
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

// An update keeps what the stored SidecarSet got away with (a rule added since, a SidecarSet created since
// that conflicts with it), and refuses what it adds.
func TestValidateUpdateRatchets(t *testing.T) {
	old := named("scs")
	old.Spec.Selector = &metav1.LabelSelector{}
	c := cluster(named("newer"))
	cur := old.DeepCopy()
	container(cur).Image = "busybox:1.36.0"
	if errs := Validate(cur, old, c, allowAll); len(errs) > 0 {
		t.Errorf("an update of a SidecarSet stored with faults: %v", errs)
	}
	container(cur).PodInjectPolicy = "Middle"
	if errs := Validate(cur, old, c, allowAll); len(errs) != 1 {
		t.Errorf("a new fault: %v, want one error", errs)
	}
}
