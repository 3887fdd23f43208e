package binding

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

func TestRunName(t *testing.T) {
	if got := RunName("checkout", "5f7d", 2, 3); got != "checkout-5f7d-2-3" {
		t.Errorf("step run %q", got)
	}
	if got := RunName("checkout", "5f7d", 0, 0); got != "checkout-5f7d-0-bg" {
		t.Errorf("background run %q", got)
	}
	long := strings.Repeat("a", 200) + "." + strings.Repeat("b", 51)
	a, b := RunName(long, "rev1", 0, 1), RunName(long, "rev2", 0, 1)
	for _, name := range []string{a, b} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || !strings.HasSuffix(name, "-0-1") {
			t.Errorf("%q: %v", name, errs)
		}
	}
	if a == b || a != RunName(long, "rev1", 0, 1) {
		t.Errorf("shortened names must stay distinct and deterministic: %q %q", a, b)
	}
}

func TestRunArgs(t *testing.T) {
	in := Input{Analysis: analysis(), Rollout: rollout("r1", 2, analysing)}
	rel := releaseOf(in.Rollout)
	bg := newRun(in, rel, 0, 0, in.Analysis.Spec.Background.Templates, in.Analysis.Spec.Background.Args)
	var got []string
	for _, a := range bg.Spec.Args {
		got = append(got, a.Name+"="+ptr.Deref(a.Value, "<nil>"))
	}
	// Built-ins first and never overridden (rollout, step-index), then the binding's, then the background's.
	check(t, "args", got, []string{"namespace=shop", "rollout=checkout", "workload-kind=Deployment", "workload-name=web",
		"stable-revision=stable1", "canary-revision=r1", "step-index=2", "service=checkout", "window=5m", "quantile=0.99"})
	step := newRun(in, rel, 1, 1, in.Analysis.Spec.Steps[0].Templates, in.Analysis.Spec.Steps[0].Args)
	check(t, "step 1's window", ptr.Deref(step.Spec.Args[8].Value, ""), "1m")
	check(t, "labels", step.Labels, map[string]string{analysisv1alpha1.RolloutAnalysisLabel: "checkout", analysisv1alpha1.StepLabel: "1"})
	check(t, "name", step.Name, "checkout-r1-1-1")
	if ref := step.OwnerReferences; len(ref) != 1 || ref[0].UID != "ra-uid" || ref[0].Kind != "RolloutAnalysis" || !ptr.Deref(ref[0].Controller, false) {
		t.Errorf("owner %+v", ref)
	}
}

func TestWinner(t *testing.T) {
	at := func(name string, sec int, deleting bool) analysisv1alpha1.RolloutAnalysis {
		ra := analysisv1alpha1.RolloutAnalysis{}
		ra.Name = name
		ra.CreationTimestamp.Time = now.Add(time.Duration(sec) * time.Second)
		if deleting {
			ra.DeletionTimestamp = &now
		}
		return ra
	}
	for _, tc := range []struct {
		name string
		in   []analysisv1alpha1.RolloutAnalysis
		want string
	}{
		{"none", nil, ""},
		{"the oldest", []analysisv1alpha1.RolloutAnalysis{at("b", 2, false), at("a", 3, false), at("c", 1, false)}, "c"},
		{"same age: by name", []analysisv1alpha1.RolloutAnalysis{at("b", 1, false), at("a", 1, false)}, "a"},
		{"one being deleted does not count", []analysisv1alpha1.RolloutAnalysis{at("a", 1, true), at("b", 2, false)}, "b"},
	} {
		if got := Winner(tc.in); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
