package v1alpha1

import (
	"testing"
	"time"
)

func TestScheduleStrategyDurations(t *testing.T) {
	fixed := &UnitedDeploymentScheduleStrategy{}
	if fixed.IsAdaptive() || fixed.ShouldReserveUnschedulablePods() {
		t.Fatal("empty strategy reported adaptive")
	}
	if fixed.RescheduleCriticalDuration() != 30*time.Second || fixed.UnschedulableDuration() != 300*time.Second {
		t.Fatalf("defaults: %v %v", fixed.RescheduleCriticalDuration(), fixed.UnschedulableDuration())
	}
	ten, sixty := int32(10), int32(60)
	adaptive := &UnitedDeploymentScheduleStrategy{
		Type: AdaptiveUnitedDeploymentScheduleStrategyType,
		Adaptive: &AdaptiveUnitedDeploymentStrategy{
			RescheduleCriticalSeconds: &ten, UnschedulableDuration: &sixty, ReserveUnschedulablePods: true,
		},
	}
	if !adaptive.ShouldReserveUnschedulablePods() {
		t.Fatal("reserve not reported")
	}
	if adaptive.RescheduleCriticalDuration() != 10*time.Second || adaptive.UnschedulableDuration() != time.Minute {
		t.Fatalf("configured: %v %v", adaptive.RescheduleCriticalDuration(), adaptive.UnschedulableDuration())
	}
	reserveButFixed := &UnitedDeploymentScheduleStrategy{Adaptive: adaptive.Adaptive}
	if reserveButFixed.ShouldReserveUnschedulablePods() {
		t.Fatal("reserve honoured without the Adaptive type")
	}
}

func TestGetSubsetStatusReturnsMutableEntry(t *testing.T) {
	status := &UnitedDeploymentStatus{SubsetStatuses: []UnitedDeploymentSubsetStatus{{Name: "a"}, {Name: "b"}}}
	status.GetSubsetStatus("b").Replicas = 3
	if status.SubsetStatuses[1].Replicas != 3 {
		t.Fatal("returned entry is a copy")
	}
	if status.GetSubsetStatus("c") != nil {
		t.Fatal("unknown subset found")
	}
}
