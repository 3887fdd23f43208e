package main

import (
	"fmt"
	"slices"
	"strings"
)

// rolloutTypes are the spellings kubectl accepts for rollouts.rollouts.kruise.io: singular or plural,
// bare or qualified by group and optionally version.
var rolloutTypes = map[string]bool{
	"rollout": true, "rollouts": true,
	"rollout.rollouts.kruise.io": true, "rollouts.rollouts.kruise.io": true,
	"rollout.v1beta1.rollouts.kruise.io": true, "rollouts.v1beta1.rollouts.kruise.io": true,
	"rollout.v1alpha1.rollouts.kruise.io": true, "rollouts.v1alpha1.rollouts.kruise.io": true,
}

// parseTargets reads Rollout names from kubectl-style arguments: "TYPE/NAME ..." or "TYPE NAME ...".
func parseTargets(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("required resource not specified")
	}
	var names []string
	var err error
	if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "/") }) {
		names, err = parseSlashed(args)
	} else {
		names, err = parseTypeThenNames(args)
	}
	if err != nil {
		return nil, err
	}
	return dedupe(names), nil
}

func parseSlashed(args []string) ([]string, error) {
	names := make([]string, 0, len(args))
	for _, a := range args {
		typ, name, ok := strings.Cut(a, "/")
		if !ok {
			return nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl-kruise rollout approve rollout/NAME' instead of 'kubectl-kruise rollout approve rollout rollout/NAME')")
		}
		if err := checkType(typ); err != nil {
			return nil, err
		}
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("arguments in resource/name form must have a single resource and name: %q", a)
		}
		names = append(names, name)
	}
	return names, nil
}

func parseTypeThenNames(args []string) ([]string, error) {
	if err := checkType(args[0]); err != nil {
		return nil, err
	}
	if len(args) == 1 {
		return nil, fmt.Errorf("no Rollout name given: use rollout/NAME or rollout NAME")
	}
	for _, n := range args[1:] {
		if n == "" {
			return nil, fmt.Errorf("a Rollout name must not be empty")
		}
	}
	return args[1:], nil
}

// checkType accepts only Rollouts: the workload kinds upstream also handles belong to other commands.
func checkType(typ string) error {
	if rolloutTypes[strings.ToLower(typ)] {
		return nil
	}
	return fmt.Errorf("resource type %q is not supported here: only rollouts.rollouts.kruise.io is (for Deployments use kubectl rollout)", typ)
}

func dedupe(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
