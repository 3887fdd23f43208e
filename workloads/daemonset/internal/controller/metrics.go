package controller

import "github.com/flotilla-dev/flotilla/workloads/podmetrics"

// podMetrics are the controller's pod metrics (podmetrics): flotilla_daemonset_pod_operations_total and
// flotilla_daemonset_inplace_update_duration_seconds.
var podMetrics = podmetrics.New("daemonset", "Advanced DaemonSet")
