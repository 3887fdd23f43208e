package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestEffectiveRevisionChange(t *testing.T) {
	id := func(v string) map[string]string {
		if v == "" {
			return nil
		}
		return map[string]string{rolloutsv1beta1.RolloutIDLabel: v}
	}
	cases := []struct {
		name            string
		oldID, newID    string
		templateChanged bool
		want            bool
	}{
		{name: "template change", templateChanged: true, want: true},
		{name: "nothing"},
		{name: "new id", oldID: "a", newID: "b", want: true},
		{name: "first id", newID: "a", want: true},
		{name: "same id, new template", oldID: "a", newID: "a", templateChanged: true},
		{name: "id removed, same template", oldID: "a"},
		{name: "id removed, new template", oldID: "a", templateChanged: true, want: true},
	}
	for _, tc := range cases {
		if got := EffectiveRevisionChange(id(tc.oldID), id(tc.newID), tc.templateChanged); got != tc.want {
			t.Errorf("%s: EffectiveRevisionChange = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTemplateChanged(t *testing.T) {
	base := podTemplate("echo:v1")
	hashed := podTemplate("echo:v1")
	hashed.Labels[rolloutsv1beta1.PodTemplateHashLabelKey] = "abc"
	relabelled := podTemplate("echo:v1")
	relabelled.Labels["tier"] = "web"
	noLabels := podTemplate("echo:v1")
	noLabels.Labels = nil
	onlyHash := podTemplate("echo:v1")
	onlyHash.Labels = map[string]string{rolloutsv1beta1.PodTemplateHashLabelKey: "abc"}
	newImage := podTemplate("echo:v2")
	cases := []struct {
		name     string
		old, cur *corev1.PodTemplateSpec
		want     bool
	}{
		{"same", &base, &base, false},
		{"hash label only", &base, &hashed, false},
		{"only a hash label against none", &noLabels, &onlyHash, false},
		{"other label", &base, &relabelled, true},
		{"image", &base, &newImage, true},
		{"nil and value", nil, &base, true},
		{"both nil", nil, nil, false},
	}
	for _, tc := range cases {
		if got := TemplateChanged(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: TemplateChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUnstructuredTemplateChanged(t *testing.T) {
	tpl := func(labels map[string]any, image string) map[string]any {
		out := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": image}}}}
		if labels != nil {
			out["metadata"] = map[string]any{"labels": labels}
		}
		return out
	}
	hashed := tpl(map[string]any{"app": "db", "pod-template-hash": "x"}, "v1")
	cases := []struct {
		name     string
		old, cur map[string]any
		want     bool
	}{
		{"hash label only", tpl(map[string]any{"app": "db"}, "v1"), hashed, false},
		{"hash label against none", tpl(nil, "v1"), tpl(map[string]any{"pod-template-hash": "x"}, "v1"), false},
		{"image", tpl(nil, "v1"), tpl(nil, "v2"), true},
		{"label", tpl(map[string]any{"app": "db"}, "v1"), tpl(map[string]any{"app": "web"}, "v1"), true},
		{"malformed metadata", map[string]any{"metadata": "x"}, map[string]any{"metadata": "x"}, false},
	}
	for _, tc := range cases {
		if got := unstructuredTemplateChanged(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: unstructuredTemplateChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, ok := hashed["metadata"].(map[string]any)["labels"].(map[string]any)["pod-template-hash"]; !ok {
		t.Error("the input template was modified")
	}
}
