// Package metrics holds flotilla-manager's own Prometheus metrics. Every
// name starts with flotilla_ and every label has a bounded set of values.
package metrics
