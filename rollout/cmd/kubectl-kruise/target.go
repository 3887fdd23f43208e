package main

import (
	"fmt"
)

// parseTargets reads Rollout names from kubectl-style arguments: "TYPE/NAME ..." or "TYPE NAME ...",
// for the commands that act on Rollouts only (approve, status).
func parseTargets(args []string) ([]string, error) {
	targets, err := parseResources(args)
	if err != nil {
		return nil, err
	}
	return rolloutNames(targets)
}

// rolloutNames are the names of targets that must all be Rollouts.
func rolloutNames(targets []target) ([]string, error) {
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		if t.Kind != kindRollout {
			return nil, fmt.Errorf("%s is not supported here: only rollouts.rollouts.kruise.io is", t.Kind.GroupResource())
		}
		names = append(names, t.Name)
	}
	return names, nil
}
