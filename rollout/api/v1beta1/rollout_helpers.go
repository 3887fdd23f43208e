package v1beta1

// GetRollingStyle returns the style of the strategy: BlueGreen when blueGreen is set, otherwise Canary
// with enableExtraWorkloadForCanary and Partition without. It returns "" when neither strategy is set.
// Canary on anything but a native Deployment is executed as Partition by the BatchRelease.
func (s *RolloutStrategy) GetRollingStyle() RollingStyleType {
	switch {
	case s.BlueGreen != nil:
		return BlueGreenRollingStyle
	case s.Canary == nil:
		return ""
	case s.Canary.EnableExtraWorkloadForCanary:
		return CanaryRollingStyle
	default:
		return PartitionRollingStyle
	}
}

// GetSteps returns the steps of whichever strategy is in effect.
func (s *RolloutStrategy) GetSteps() []CanaryStep {
	switch {
	case s.BlueGreen != nil:
		return s.BlueGreen.Steps
	case s.Canary != nil:
		return s.Canary.Steps
	default:
		return nil
	}
}

// GetTrafficRoutings returns the traffic routings of whichever strategy is in effect.
func (s *RolloutStrategy) GetTrafficRoutings() []TrafficRoutingRef {
	switch {
	case s.BlueGreen != nil:
		return s.BlueGreen.TrafficRoutings
	case s.Canary != nil:
		return s.Canary.TrafficRoutings
	default:
		return nil
	}
}

// GetSubStatus returns the common part of the canary or, failing that, the blue-green status; nil when
// neither is set.
func (s *RolloutStatus) GetSubStatus() *CommonStatus {
	switch {
	case s.CanaryStatus != nil:
		return &s.CanaryStatus.CommonStatus
	case s.BlueGreenStatus != nil:
		return &s.BlueGreenStatus.CommonStatus
	default:
		return nil
	}
}
