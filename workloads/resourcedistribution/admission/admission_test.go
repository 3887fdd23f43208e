package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const gameDemo = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"game-demo"},"data":{"player_initial_lives":"3"}}`

// distribution is the seed's sample: its ConfigMap and its targets.
func distribution(raw string) *kruiseappsv1alpha1.ResourceDistribution {
	rd := &kruiseappsv1alpha1.ResourceDistribution{ObjectMeta: metav1.ObjectMeta{Name: "sample"}}
	rd.Spec.Resource.Raw = []byte(raw)
	rd.Spec.Targets = kruiseappsv1alpha1.ResourceDistributionTargets{
		IncludedNamespaces:     kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-1", "ns-4")},
		NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"group": "test"}},
		ExcludedNamespaces:     kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-3")},
	}
	return rd
}

func names(list ...string) []kruiseappsv1alpha1.ResourceDistributionNamespace {
	out := make([]kruiseappsv1alpha1.ResourceDistributionNamespace, len(list))
	for i, n := range list {
		out[i].Name = n
	}
	return out
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kruiseappsv1alpha1.ResourceDistribution)
		want   string
	}{
		{"no resource", func(rd *kruiseappsv1alpha1.ResourceDistribution) { rd.Spec.Resource.Raw = nil },
			"spec.resource: Invalid value: empty resource is not allowed"},
		{"a Deployment", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`)
		}, "spec.resource: Invalid value: unknown or unsupported resource GroupKind, only support [Secret ConfigMap]"},
		{"a resource that is not an object", func(rd *kruiseappsv1alpha1.ResourceDistribution) { rd.Spec.Resource.Raw = []byte(`"x"`) },
			"spec.resource: Invalid value: failed to deserialize resource"},
		{"no resource name", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"generateName":"s-"}}`)
		}, "spec.resource.metadata.name: Required value: the resource needs a name"},
		{"a bad resource name", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Game_Demo"}}`)
		}, `spec.resource.metadata.name: Invalid value: "Game_Demo": a lowercase RFC 1123 subdomain`},
		{"a bad resource label", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a b":"c"}}}`)
		}, `spec.resource.metadata.labels: Invalid value: "a b"`},
		{"a bad ConfigMap key", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a/b":"c"}}`)
		}, `spec.resource.data: Invalid value: "a/b": a valid config key must consist of alphanumeric characters`},
		{"a key in data and binaryData", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"},"binaryData":{"k":"dg=="}}`)
		}, `spec.resource.binaryData: Invalid value: "k": duplicate of key present in data`},
		{"a bad Secret key", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"..":"v"}}`)
		}, `spec.resource.stringData: Invalid value: ".."`},
		{"a bad included namespace", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets.IncludedNamespaces.List = names("ns-1", "NS.2")
		}, `spec.targets.includedNamespaces.list[1].name: Invalid value: "NS.2": a lowercase RFC 1123 label`},
		{"a bad excluded namespace", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets.ExcludedNamespaces.List = names("")
		}, `spec.targets.excludedNamespaces.list[0].name: Invalid value: ""`},
		{"a namespace both included and excluded", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets.ExcludedNamespaces.List = names("ns-4", "ns-3", "ns-1")
		}, `spec.targets: Invalid value: ["ns-1","ns-4"]: ambiguous targets because namespace [ns-1 ns-4] is in both IncludedNamespaces.List and ExcludedNamespaces.List`},
		{"a bad selector operator", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets.NamespaceLabelSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "g", Operator: "Near"}}
		}, `spec.targets.namespaceLabelSelector.matchExpressions[0].operator: Invalid value: "Near"`},
		{"a bad selector label", func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets.NamespaceLabelSelector.MatchLabels = map[string]string{"group": "a b"}
		}, `spec.targets.namespaceLabelSelector.matchLabels: Invalid value: "a b"`},
		{"a bad name", func(rd *kruiseappsv1alpha1.ResourceDistribution) { rd.Name = "Sample" },
			`metadata.name: Invalid value: "Sample"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := distribution(gameDemo)
			tt.mutate(rd)
			if agg := Validate(rd, nil).ToAggregate(); agg == nil || !strings.Contains(agg.Error(), tt.want) {
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for name, mutate := range map[string]func(*kruiseappsv1alpha1.ResourceDistribution){
		"the seed's sample": func(*kruiseappsv1alpha1.ResourceDistribution) {},
		"a Secret": func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"pull"},"type":"kubernetes.io/dockerconfigjson",` +
				`"data":{".dockerconfigjson":"e30="}}`)
		},
		"a namespace in the resource": func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"elsewhere"}}`)
		},
		"all namespaces": func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets = kruiseappsv1alpha1.ResourceDistributionTargets{AllNamespaces: true}
		},
		"no targets": func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets = kruiseappsv1alpha1.ResourceDistributionTargets{}
		},
		"excluded system namespaces": func(rd *kruiseappsv1alpha1.ResourceDistribution) {
			rd.Spec.Targets.ExcludedNamespaces.List = names("kube-system", "kube-public")
		},
	} {
		rd := distribution(gameDemo)
		mutate(rd)
		if errs := Validate(rd, nil); len(errs) > 0 {
			t.Errorf("%s: rejected: %v", name, errs)
		}
	}
	if errs := Validate(nil, nil); len(errs) != 1 {
		t.Errorf("nil distribution: %v", errs)
	}
}

// The resource's kind and name never change; its content and the targets may.
func TestValidateUpdate(t *testing.T) {
	old := distribution(gameDemo)
	for name, tc := range map[string]struct {
		raw  string
		want string
	}{
		"new data":    {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"game-demo"},"data":{"lives":"5"}}`, ""},
		"a new name":  {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`, "spec.resource: Invalid value: \"v1 ConfigMap other\": resource apiVersion, kind, and name are immutable"},
		"a new kind":  {`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"game-demo"}}`, "resource apiVersion, kind, and name are immutable"},
		"unsupported": {`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"game-demo"}}`, "only support [Secret ConfigMap]"},
	} {
		rd := distribution(tc.raw)
		rd.Spec.Targets.AllNamespaces = true
		agg := Validate(rd, old).ToAggregate()
		if (tc.want == "") != (agg == nil) || (agg != nil && !strings.Contains(agg.Error(), tc.want)) {
			t.Errorf("%s: errors %v, want %q", name, agg, tc.want)
		}
	}
}

// An update keeps what the stored distribution got away with, and refuses what it adds.
func TestValidateUpdateRatchets(t *testing.T) {
	old := distribution(gameDemo)
	old.Spec.Targets.ExcludedNamespaces.List = names("ns-1")
	cur := old.DeepCopy()
	cur.Spec.Targets.AllNamespaces = true
	if errs := Validate(cur, old); len(errs) > 0 {
		t.Errorf("an update of a distribution stored with ambiguous targets: %v", errs)
	}
	cur.Spec.Targets.IncludedNamespaces.List = names("ns-1", "Bad")
	if errs := Validate(cur, old); len(errs) != 1 {
		t.Errorf("a new bad namespace: %v, want one error", errs)
	}
}

// The seed's fragments, joined: its resource with its targets, is accepted.
func TestSeedSampleIsAccepted(t *testing.T) {
	var parts [2]kruiseappsv1alpha1.ResourceDistribution
	for i, file := range []string{"040-resourcedistribution-sample.yaml", "041-resourcedistribution-sample.yaml"} {
		raw, err := os.ReadFile(filepath.Join("../../../test/e2e/testdata/seed", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(raw, &parts[i]); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	rd := parts[0]
	rd.Spec.Targets = parts[1].Spec.Targets
	if errs := Validate(&rd, nil); len(errs) > 0 {
		t.Errorf("the seed's sample rejected: %v", errs)
	}
}
