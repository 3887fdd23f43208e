package controller

import "github.com/flotilla-dev/flotilla/workloads/podmetrics"

// podMetrics are the controller's pod metrics (podmetrics): flotilla_cloneset_pod_operations_total and
// flotilla_cloneset_inplace_update_duration_seconds.
var podMetrics = podmetrics.New("cloneset", "CloneSet")
