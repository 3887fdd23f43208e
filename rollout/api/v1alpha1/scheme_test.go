package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestAddToSchemeRegistersEveryKind(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Rollout", "RolloutList", "BatchRelease", "BatchReleaseList", "TrafficRouting", "TrafficRoutingList", "RolloutHistory", "RolloutHistoryList"} {
		if !scheme.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered in %s", kind, GroupVersion)
		}
	}
}
