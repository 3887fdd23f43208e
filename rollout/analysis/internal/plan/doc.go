// Package plan is the AnalysisRun's pure planning: which templates and arguments make up a run, when each
// metric is measured next, how a measured value is judged (CEL conditions over `result`), how the counts and
// limits turn measurements into a metric's phase and the metrics' phases into the run's. Values in, values
// out: no client, no clock.
package plan
