// Package bench is Flotilla's benchmark harness (`make bench`). Each
// Scenario runs in isolation on its own local control plane, sized to the
// scenario, and fills one Result: wall time of the measured phase, the
// manager's API requests by verb and resource (read from its
// flotilla_client_requests_total counter before and after), the peak RSS
// and CPU of the manager and of the native baseline (from /proc), latency
// percentiles, and headline Metrics with their baseline, ratio and target.
// Comparisons are ratios against a baseline measured in the same run on
// the same cluster, because absolute times on a shared machine drift.
//
// Scenarios are listed in Scenarios; a module adds its scenario there.
package bench
