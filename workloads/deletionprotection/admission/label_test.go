package admission

import "testing"

func TestValidateLabel(t *testing.T) {
	tests := []struct {
		name        string
		group, kind string
		cur, old    map[string]string
		want        string // "" accepts
	}{
		{name: "no label", kind: "Namespace", cur: map[string]string{"app": "web"}},
		{name: "Always namespace", kind: "Namespace", cur: labelled("Always")},
		{name: "Cascading Deployment", group: "apps", kind: "Deployment", cur: labelled("Cascading")},
		{name: "Cascading CRD", group: "apiextensions.k8s.io", kind: "CustomResourceDefinition", cur: labelled("Cascading")},
		{name: "Always Service", kind: "Service", cur: labelled("Always")},
		{name: "a typo", group: "apps", kind: "Deployment", cur: labelled("always"),
			want: `metadata.labels[policy.kruise.io/delete-protection]: Unsupported value: "always": supported values: "Always", "Cascading"`},
		{name: "empty value", group: "apps.kruise.io", kind: "CloneSet", cur: labelled(""),
			want: `metadata.labels[policy.kruise.io/delete-protection]: Unsupported value: "": supported values: "Always", "Cascading"`},
		{name: "Cascading Service", kind: "Service", cur: labelled("Cascading"),
			want: `metadata.labels[policy.kruise.io/delete-protection]: Unsupported value: "Cascading": supported values: "Always"`},
		{name: "Cascading Ingress", group: "networking.k8s.io", kind: "Ingress", cur: labelled("Cascading"),
			want: `metadata.labels[policy.kruise.io/delete-protection]: Unsupported value: "Cascading": supported values: "Always"`},
		{name: "changed to a bad value", kind: "Namespace", cur: labelled("true"), old: labelled("Always"),
			want: `metadata.labels[policy.kruise.io/delete-protection]: Unsupported value: "true": supported values: "Always", "Cascading"`},
		{name: "a bad value kept by an update", kind: "Namespace", cur: labelled("true"), old: labelled("true")},
		{name: "a bad value removed", kind: "Namespace", cur: map[string]string{}, old: labelled("true")},
		{name: "a kind it does not protect", kind: "ConfigMap", cur: labelled("whatever")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateLabel(tc.group, tc.kind, tc.cur, tc.old)
			got := ""
			if len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
