package admission

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// FuzzValidate decodes arbitrary JSON as a new and a stored SidecarSet, defaults and validates them as on
// create and on update against each other: nothing may panic, and defaulting twice changes nothing.
func FuzzValidate(f *testing.F) {
	valid, err := json.Marshal(sidecarSet())
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(valid),
		`{"metadata":{"name":"a.b","annotations":{"apps.kruise.io/sidecarset-canary":"true"}},"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"In"}]},` +
			`"namespaceSelector":{},"containers":[{"transferEnv":[{"sourceContainerNameFrom":{}}],"upgradeStrategy":{"upgradeType":"HotUpgrade"}}],` +
			`"initContainers":[{"resourcesPolicy":{}}],"volumes":[{"name":"v","hostPath":{"path":"/"},"emptyDir":{}}],` +
			`"updateStrategy":{"partition":"x%","selector":{},"priorityStrategy":{"weightPriority":[{"weight":-1}]}},` +
			`"patchPodMetadata":[{"annotations":{"a":"{"},"patchPolicy":"MergePatchJson"}],"injectionStrategy":{"revision":{}}}}`,
	} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc string) {
		old, s := &kruiseappsv1alpha1.SidecarSet{}, &kruiseappsv1alpha1.SidecarSet{}
		_ = json.Unmarshal([]byte(oldDoc), old)
		_ = json.Unmarshal([]byte(newDoc), s)
		Default(old, nil)
		Default(s, old)
		again := s.DeepCopy()
		Default(again, nil)
		if !equality.Semantic.DeepEqual(s, again) {
			t.Fatal("a second Default changed the SidecarSet")
		}
		c := Cluster{SidecarSets: []kruiseappsv1alpha1.SidecarSet{*old}, Whitelist: `{"rules":[{"allowedAnnotationKeyExprs":[".*"]}]}`}
		_ = Validate(s, nil, c, Options{})
		_ = Validate(s, old, c, allowAll)
	})
}
