package v1beta1

import "testing"

func TestRolloutStrategyAccessors(t *testing.T) {
	canarySteps := []CanaryStep{{}}
	blueGreenSteps := []CanaryStep{{}, {}}
	canaryRoutes := []TrafficRoutingRef{{Service: "canary"}}
	blueGreenRoutes := []TrafficRoutingRef{{Service: "blue-green"}}
	tests := []struct {
		name       string
		strategy   RolloutStrategy
		wantStyle  RollingStyleType
		wantSteps  int
		wantRoutes string
	}{
		{name: "empty", wantStyle: ""},
		{name: "partition", strategy: RolloutStrategy{Canary: &CanaryStrategy{Steps: canarySteps, TrafficRoutings: canaryRoutes}}, wantStyle: PartitionRollingStyle, wantSteps: 1, wantRoutes: "canary"},
		{name: "canary", strategy: RolloutStrategy{Canary: &CanaryStrategy{EnableExtraWorkloadForCanary: true}}, wantStyle: CanaryRollingStyle},
		{name: "blue-green", strategy: RolloutStrategy{BlueGreen: &BlueGreenStrategy{Steps: blueGreenSteps, TrafficRoutings: blueGreenRoutes}}, wantStyle: BlueGreenRollingStyle, wantSteps: 2, wantRoutes: "blue-green"},
		{
			name:       "blue-green wins over canary",
			strategy:   RolloutStrategy{Canary: &CanaryStrategy{Steps: canarySteps}, BlueGreen: &BlueGreenStrategy{Steps: blueGreenSteps, TrafficRoutings: blueGreenRoutes}},
			wantStyle:  BlueGreenRollingStyle,
			wantSteps:  2,
			wantRoutes: "blue-green",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.strategy.GetRollingStyle(); got != tt.wantStyle {
				t.Errorf("GetRollingStyle() = %q, want %q", got, tt.wantStyle)
			}
			if got := len(tt.strategy.GetSteps()); got != tt.wantSteps {
				t.Errorf("len(GetSteps()) = %d, want %d", got, tt.wantSteps)
			}
			routes := tt.strategy.GetTrafficRoutings()
			if (len(routes) == 0) != (tt.wantRoutes == "") || (len(routes) > 0 && routes[0].Service != tt.wantRoutes) {
				t.Errorf("GetTrafficRoutings() = %v, want service %q", routes, tt.wantRoutes)
			}
		})
	}
}

func TestGetSubStatus(t *testing.T) {
	canary := &CanaryStatus{CommonStatus: CommonStatus{CurrentStepIndex: 1}}
	blueGreen := &BlueGreenStatus{CommonStatus: CommonStatus{CurrentStepIndex: 2}}
	tests := []struct {
		name   string
		status RolloutStatus
		want   *CommonStatus
	}{
		{name: "none"},
		{name: "canary", status: RolloutStatus{CanaryStatus: canary}, want: &canary.CommonStatus},
		{name: "blue-green", status: RolloutStatus{BlueGreenStatus: blueGreen}, want: &blueGreen.CommonStatus},
		{name: "canary first", status: RolloutStatus{CanaryStatus: canary, BlueGreenStatus: blueGreen}, want: &canary.CommonStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.status.GetSubStatus(); got != tt.want {
				t.Errorf("GetSubStatus() = %p, want %p", got, tt.want)
			}
		})
	}
}

func TestProgressingRolloutFinalizer(t *testing.T) {
	if got := ProgressingRolloutFinalizer("web"); got != "progressing.rollouts.kruise.io/web" {
		t.Errorf("ProgressingRolloutFinalizer = %q", got)
	}
}
