// Package chart tests the Helm chart in charts/flotilla: lint, the rendering of every documented switch, a
// server-side dry run of each rendering against the local control plane, and the manager running with
// nothing but the chart's RBAC. It has only tests; `go test ./test/chart/... -update` rewrites the golden
// rendering of the default values.
package chart
