package v1beta1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestAddToSchemeRegistersEveryKind(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Rollout", "RolloutList", "BatchRelease", "BatchReleaseList"} {
		if !scheme.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered in %s", kind, GroupVersion)
		}
	}
	if scheme.Recognizes(GroupVersion.WithKind("TrafficRouting")) {
		t.Errorf("TrafficRouting exists only in v1alpha1")
	}
}
