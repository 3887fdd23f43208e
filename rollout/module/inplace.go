package module

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// InPlaceUpdateCheck decides whether a workload controller may update pod in place now. Allowing it may
// record the pod as going unavailable (a PodUnavailableBudget counts it), so a controller asks only right
// before it starts the update, and starts it when allowed.
type InPlaceUpdateCheck func(ctx context.Context, pod *corev1.Pod) (bool, error)

// InPlaceUpdateChecks gathers, at wiring time, what the modules that budget pod disruptions want asked before
// a workload module updates a pod in place. The pod validating webhook cannot answer for it: the controller's
// first write marks the pod not ready, and a pod that is not ready counts against no budget. The zero value
// allows every update; a nil *InPlaceUpdateChecks too.
type InPlaceUpdateChecks struct {
	checks []InPlaceUpdateCheck
}

// Add appends check. Call it from a module's setup, before the manager starts.
func (c *InPlaceUpdateChecks) Add(check InPlaceUpdateCheck) {
	c.checks = append(c.checks, check)
}

// Allow asks every check in the order they were added and stops at the first that does not allow the update.
func (c *InPlaceUpdateChecks) Allow(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if c == nil {
		return true, nil
	}
	for _, check := range c.checks {
		if ok, err := check(ctx, pod); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}
