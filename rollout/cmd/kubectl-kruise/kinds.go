package main

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// restartStyle is how `rollout restart` makes a workload replace its pods; zero: it cannot.
type restartStyle int

const (
	// restartAnnotation sets the kubectl.kubernetes.io/restartedAt template annotation, as kubectl does.
	restartAnnotation restartStyle = iota + 1
	// restartEnv sets a RESTARTED_AT variable in every container, as upstream kubectl-kruise does for the
	// kruise kinds: an annotation alone would be updated in place and restart nothing.
	restartEnv
)

// historySource is where a kind keeps its old pod templates.
type historySource int

const (
	historyNone historySource = iota
	historyControllerRevisions
	historyReplicaSets
)

// workloadKind is one resource the commands accept, with what each command can do with it.
type workloadKind struct {
	Resource schema.GroupVersionResource
	Kind     string
	// ShortNames are the extra spellings kubectl users type (sts, asts, cs, ...).
	ShortNames []string
	// PausePath is the boolean field that stops an update; nil when the kind has none.
	PausePath []string
	Restart   restartStyle
	History   historySource
	// Scalable: the kind serves the scale subresource.
	Scalable bool
}

var (
	kindDeployment = &workloadKind{
		Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", ShortNames: []string{"deploy"},
		PausePath: []string{"spec", "paused"}, Restart: restartAnnotation, History: historyReplicaSets, Scalable: true,
	}
	kindStatefulSet = &workloadKind{
		Resource: appsv1.SchemeGroupVersion.WithResource("statefulsets"), Kind: "StatefulSet", ShortNames: []string{"sts"},
		Restart: restartAnnotation, History: historyControllerRevisions, Scalable: true,
	}
	kindDaemonSet = &workloadKind{
		Resource: appsv1.SchemeGroupVersion.WithResource("daemonsets"), Kind: "DaemonSet", ShortNames: []string{"ds"},
		Restart: restartAnnotation, History: historyControllerRevisions,
	}
	kindCloneSet = &workloadKind{
		Resource: kruiseappsv1alpha1.GroupVersion.WithResource("clonesets"), Kind: "CloneSet", ShortNames: []string{"clone", "cs"},
		PausePath: []string{"spec", "updateStrategy", "paused"}, Restart: restartEnv, History: historyControllerRevisions, Scalable: true,
	}
	kindAdvancedStatefulSet = &workloadKind{
		Resource: kruiseappsv1beta1.GroupVersion.WithResource("statefulsets"), Kind: "StatefulSet", ShortNames: []string{"asts"},
		PausePath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"}, Restart: restartEnv,
		History: historyControllerRevisions, Scalable: true,
	}
	kindAdvancedDaemonSet = &workloadKind{
		Resource: kruiseappsv1alpha1.GroupVersion.WithResource("daemonsets"), Kind: "DaemonSet", ShortNames: []string{"ads", "daemon"},
		PausePath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"}, Restart: restartEnv, History: historyControllerRevisions,
	}
	kindRollout = &workloadKind{Resource: rolloutsGVR, Kind: "Rollout", ShortNames: []string{"ro"}}

	// allKinds is in the order kubectl resolves ambiguous names: the built-in apps group first, so "sts"
	// and "statefulset" mean apps/v1 and the Advanced StatefulSet is "asts" or statefulsets.apps.kruise.io.
	allKinds = []*workloadKind{
		kindDeployment, kindStatefulSet, kindDaemonSet, kindCloneSet, kindAdvancedStatefulSet, kindAdvancedDaemonSet, kindRollout,
	}
	kindAliases = buildAliases(allKinds)
)

// buildAliases lists every spelling of every kind: singular or plural, bare, group-qualified or
// version-and-group-qualified, and the short names. An earlier kind keeps a spelling two kinds share.
func buildAliases(kinds []*workloadKind) map[string]*workloadKind {
	out := map[string]*workloadKind{}
	add := func(alias string, k *workloadKind) {
		if _, taken := out[alias]; !taken {
			out[alias] = k
		}
	}
	for _, k := range kinds {
		for _, name := range []string{strings.ToLower(k.Kind), k.Resource.Resource} {
			add(name, k)
			add(name+"."+k.Resource.Group, k)
			add(name+"."+k.Resource.Version+"."+k.Resource.Group, k)
		}
		for _, s := range k.ShortNames {
			add(s, k)
		}
	}
	// The kruise StatefulSet and Rollout are also served as v1alpha1; the CLI always talks to the storage version.
	add("statefulset.v1alpha1.apps.kruise.io", kindAdvancedStatefulSet)
	add("statefulsets.v1alpha1.apps.kruise.io", kindAdvancedStatefulSet)
	add("rollout.v1alpha1.rollouts.kruise.io", kindRollout)
	add("rollouts.v1alpha1.rollouts.kruise.io", kindRollout)
	return out
}

// kindFor looks up a resource type as typed on the command line.
func kindFor(typ string) (*workloadKind, bool) {
	k, ok := kindAliases[strings.ToLower(typ)]
	return k, ok
}

// kindForRef finds the kind of a Rollout's workloadRef by its apiVersion and kind.
func kindForRef(ref rolloutsv1beta1.ObjectRef) (*workloadKind, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("workloadRef apiVersion %q: %w", ref.APIVersion, err)
	}
	for _, k := range allKinds {
		if k.Resource.Group == gv.Group && k.Kind == ref.Kind && k != kindRollout {
			return k, nil
		}
	}
	return nil, fmt.Errorf("workloadRef %s %s is not a supported workload", ref.APIVersion, ref.Kind)
}

// GroupResource is how errors name the resource, as kubectl does: "clonesets.apps.kruise.io".
func (k *workloadKind) GroupResource() string {
	return k.Resource.GroupResource().String()
}

// supportedTypesText names the accepted resource types, for errors and help.
const supportedTypesText = "deployments, statefulsets, daemonsets, clonesets, statefulsets.apps.kruise.io (asts), " +
	"daemonsets.apps.kruise.io (ads) and rollouts.rollouts.kruise.io"

// target is one object named on the command line.
type target struct {
	Kind *workloadKind
	Name string
}

// String names the target the way errors do: clonesets.apps.kruise.io "web".
func (t target) String() string { return fmt.Sprintf("%s %q", t.Kind.GroupResource(), t.Name) }

// parseResources reads kubectl-style arguments, "TYPE/NAME ..." or "TYPE NAME ...", into targets.
func parseResources(args []string) ([]target, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("required resource not specified")
	}
	var out []target
	var err error
	if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "/") }) {
		out, err = parseSlashedResources(args)
	} else {
		out, err = parseTypeThenNameResources(args)
	}
	if err != nil {
		return nil, err
	}
	return dedupeTargets(out), nil
}

func parseSlashedResources(args []string) ([]target, error) {
	out := make([]target, 0, len(args))
	for _, a := range args {
		typ, name, ok := strings.Cut(a, "/")
		if !ok {
			return nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl-kruise rollout undo cloneset/NAME' instead of 'kubectl-kruise rollout undo cloneset cloneset/NAME')")
		}
		k, err := lookupKind(typ)
		if err != nil {
			return nil, err
		}
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("arguments in resource/name form must have a single resource and name: %q", a)
		}
		out = append(out, target{Kind: k, Name: name})
	}
	return out, nil
}

func parseTypeThenNameResources(args []string) ([]target, error) {
	k, err := lookupKind(args[0])
	if err != nil {
		return nil, err
	}
	if len(args) == 1 {
		return nil, fmt.Errorf("no %s name given: use %s/NAME or %s NAME", k.Kind, args[0], args[0])
	}
	out := make([]target, 0, len(args)-1)
	for _, n := range args[1:] {
		if n == "" {
			return nil, fmt.Errorf("a resource name must not be empty")
		}
		out = append(out, target{Kind: k, Name: n})
	}
	return out, nil
}

func lookupKind(typ string) (*workloadKind, error) {
	if k, ok := kindFor(typ); ok {
		return k, nil
	}
	return nil, fmt.Errorf("resource type %q is not supported: use %s", typ, supportedTypesText)
}

func dedupeTargets(ts []target) []target {
	out := make([]target, 0, len(ts))
	for _, t := range ts {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
