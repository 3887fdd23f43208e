package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// parseCollections is parseResources that also takes a resource type alone, as upstream's rollout commands
// (kubectl's resource builder) do: `kubectl kruise rollout approve rollout` approves every Rollout of the
// namespace. Such a type comes back as a target without a name; expand lists its objects.
func parseCollections(args []string) ([]target, error) {
	if len(args) == 1 && !strings.Contains(args[0], "/") {
		k, err := lookupKind(args[0])
		if err != nil {
			return nil, err
		}
		return []target{{Kind: k}}, nil
	}
	return parseResources(args)
}

// expand replaces each target without a name by every object of its kind in the namespace, in name order.
func (a *app) expand(ctx context.Context, targets []target) ([]target, error) {
	var out []target
	for _, t := range targets {
		if t.Name != "" {
			out = append(out, t)
			continue
		}
		names, err := a.namesOf(ctx, t.Kind)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, target{Kind: t.Kind, Name: n})
		}
	}
	return out, nil
}

// namesOf lists the names of a kind's objects in the namespace; none is an error, as kubectl reports it.
func (a *app) namesOf(ctx context.Context, k *workloadKind) ([]string, error) {
	api, err := a.workloads()
	if err != nil {
		return nil, err
	}
	items, err := api.List(ctx, k.Resource, "")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for _, item := range items {
		names = append(names, item.GetName())
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no %s found in namespace %q", k.GroupResource(), api.Namespace())
	}
	slices.Sort(names)
	return names, nil
}

// collection parses arguments that may name a whole kind and expands them.
func (a *app) collection(ctx context.Context, args []string) ([]target, error) {
	targets, err := parseCollections(args)
	if err != nil {
		return nil, err
	}
	return a.expand(ctx, targets)
}

// rolloutCollection is collection for the commands that act on Rollouts only (approve, rollback).
func (a *app) rolloutCollection(ctx context.Context, args []string) ([]string, error) {
	targets, err := a.collection(ctx, args)
	if err != nil {
		return nil, err
	}
	return rolloutNames(targets)
}
