package v1alpha1

import "testing"

func TestHotUpgradeKeys(t *testing.T) {
	first, second := HotUpgradeContainerNames("envoy")
	if first != "envoy-1" || second != "envoy-2" {
		t.Fatalf("HotUpgradeContainerNames(envoy) = %q, %q; want envoy-1, envoy-2", first, second)
	}
	if got := SidecarSetVersionAnnotationKey(first); got != "version.sidecarset.kruise.io/envoy-1" {
		t.Errorf("SidecarSetVersionAnnotationKey(%q) = %q", first, got)
	}
	if got := SidecarSetVersionAltAnnotationKey(second); got != "versionalt.sidecarset.kruise.io/envoy-2" {
		t.Errorf("SidecarSetVersionAltAnnotationKey(%q) = %q", second, got)
	}
}
