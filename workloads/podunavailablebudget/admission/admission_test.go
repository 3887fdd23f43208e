package admission

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

type pub = kruisepolicyv1alpha1.PodUnavailableBudget

// selecting is upstream's sample: the pods labelled app=web, at most one unavailable.
func selecting() *pub {
	one := intstr.FromInt32(1)
	return &pub{ObjectMeta: metav1.ObjectMeta{Name: "web-pub", Namespace: "ns"}, Spec: kruisepolicyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &one}}
}

// targeting protects CloneSet web's pods, at least 80% available.
func targeting() *pub {
	most := intstr.FromString("80%")
	return &pub{ObjectMeta: metav1.ObjectMeta{Name: "web-pub", Namespace: "ns"}, Spec: kruisepolicyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &kruisepolicyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
		MinAvailable:    &most}}
}

func TestValidateAccepts(t *testing.T) {
	withAnnotations := selecting()
	withAnnotations.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectOperationAnnotation: "DELETE,EVICT",
		kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation: "10"}
	for name, p := range map[string]*pub{"selector": selecting(), "targetRef": targeting(), "annotations": withAnnotations} {
		if errs := Validate(p, nil); len(errs) > 0 {
			t.Errorf("%s refused: %v", name, errs)
		}
		if errs := Validate(p, p.DeepCopy()); len(errs) > 0 {
			t.Errorf("%s: an update changing nothing refused: %v", name, errs)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	i, s := intstr.FromInt32, intstr.FromString
	cases := []struct {
		name   string
		base   func() *pub
		mutate func(*pub)
		want   string
	}{
		{"neither selector nor targetRef", selecting, func(p *pub) { p.Spec.Selector = nil },
			"spec.selector: Required value: one of selector and targetRef is required"},
		{"both selector and targetRef", targeting, func(p *pub) { p.Spec.Selector = selecting().Spec.Selector },
			"spec.targetRef: Forbidden: selector and targetRef are mutually exclusive"},
		{"an empty selector", selecting, func(p *pub) { p.Spec.Selector = &metav1.LabelSelector{} },
			"spec.selector: Invalid value: {}: an empty selector would protect every pod of the namespace"},
		{"a bad selector", selecting, func(p *pub) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, `spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{"a targetRef without a name", targeting, func(p *pub) { p.Spec.TargetReference.Name = "" },
			"spec.targetRef.name: Required value: the workload's name is required"},
		{"a targetRef with a bad apiVersion", targeting, func(p *pub) { p.Spec.TargetReference.APIVersion = "a/b/c" },
			`spec.targetRef.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`},
		{"neither maxUnavailable nor minAvailable", selecting, func(p *pub) { p.Spec.MaxUnavailable = nil },
			"spec.maxUnavailable: Required value: one of maxUnavailable and minAvailable is required"},
		{"both maxUnavailable and minAvailable", targeting, func(p *pub) { p.Spec.MaxUnavailable = ptr(i(1)) },
			"spec.minAvailable: Forbidden: maxUnavailable and minAvailable are mutually exclusive"},
		{"a negative maxUnavailable", selecting, func(p *pub) { p.Spec.MaxUnavailable = ptr(i(-1)) },
			"spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"},
		{"a minAvailable above 100%", targeting, func(p *pub) { p.Spec.MinAvailable = ptr(s("120%")) },
			`spec.minAvailable: Invalid value: "120%": must not be greater than 100%`},
		{"an unknown protected operation", selecting, func(p *pub) {
			p.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectOperationAnnotation: "DELETE,KILL"}
		}, `metadata.annotations[kruise.io/pub-protect-operations]: Invalid value: "DELETE,KILL": must list the operations`},
		{"unreadable total replicas", selecting, func(p *pub) {
			p.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation: "ten"}
		}, `metadata.annotations[pub.kruise.io/protect-total-replicas]: Invalid value: "ten": must be a non-negative 32-bit integer`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.base()
			tc.mutate(p)
			errs := Validate(p, nil)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func TestValidateImmutable(t *testing.T) {
	moved := selecting()
	moved.Spec.Selector.MatchLabels["app"] = "api"
	if errs := Validate(moved, selecting()); len(errs) != 1 || errs[0].Field != "spec.selector" || !strings.Contains(errs[0].Error(), "field is immutable") {
		t.Errorf("a changed selector: %v", errs)
	}
	retargeted := targeting()
	retargeted.Spec.TargetReference.Name = "api"
	if errs := Validate(retargeted, targeting()); len(errs) != 1 ||
		errs[0].Error() != `spec.targetRef: Invalid value: "apps.kruise.io/v1alpha1 CloneSet api": field is immutable` {
		t.Errorf("a changed targetRef: %v", errs)
	}
	loosened := selecting()
	loosened.Spec.MaxUnavailable = ptr(intstr.FromString("50%"))
	if errs := Validate(loosened, selecting()); len(errs) > 0 {
		t.Errorf("the budget itself may change: %v", errs)
	}
}

// A budget stored before a rule existed can still be changed; what it changes must be valid.
func TestValidateRatchets(t *testing.T) {
	stored := selecting()
	stored.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation: "ten"}
	updated := stored.DeepCopy()
	updated.Spec.MaxUnavailable = ptr(intstr.FromInt32(2))
	if errs := Validate(updated, stored); len(errs) > 0 {
		t.Errorf("an old error blocks the update: %v", errs)
	}
	updated.Spec.MaxUnavailable = ptr(intstr.FromInt32(-2))
	if errs := Validate(updated, stored); len(errs) != 1 {
		t.Errorf("a new error passes: %v", errs)
	}
}

func ptr[T any](v T) *T { return &v }
