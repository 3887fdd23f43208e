package controller

import "github.com/flotilla-dev/flotilla/workloads/podmetrics"

// podMetrics count the controller's pod operations (podmetrics): flotilla_sidecarset_pod_operations_total.
var podMetrics = podmetrics.NewOperations("sidecarset", "SidecarSet")
