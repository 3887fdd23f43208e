package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// newFiller configures a filler to produce objects that can exist on the wire and that exercise the
// conversion rules: rolling-style and trafficrouting annotations, odd traffic strings, rolling styles.
func newFiller(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(0.3).NumElements(0, 4).Funcs(
		fillObjectMeta,
		fillIntOrString,
		func(p **intstr.IntOrString, c randfill.Continue) {
			*p = nil
			if c.Intn(3) > 0 {
				*p = new(intstr.IntOrString)
				fillIntOrString(*p, c)
			}
		},
		fillTime,
		func(p **metav1.Time, c randfill.Continue) {
			*p = nil
			if c.Intn(3) > 0 {
				*p = new(metav1.Time)
				fillTime(*p, c)
			}
		},
		func(s *rolloutsv1beta1.TrafficRoutingStrategy, c randfill.Continue) {
			c.FillNoCustom(s)
			if c.Bool() {
				s.Traffic = pickPointer(c, "5%", "05%", "100%", "abc", "", "-3%", "7", "99999999999%", "+4%", c.String(0))
			}
		},
		func(s *rolloutsv1beta1.RollingStyleType, c randfill.Continue) {
			*s = rolloutsv1beta1.RollingStyleType(pick(c, "", "Canary", "Partition", "BlueGreen", "partition", "Foo", c.String(0)))
		},
		func(s *RollingStyleType, c randfill.Continue) {
			*s = RollingStyleType(pick(c, "", "Canary", "Partition", "BlueGreen", "canary", "Foo", c.String(0)))
		},
	)
}

func fillObjectMeta(m *metav1.ObjectMeta, c randfill.Continue) {
	m.Name = c.String(0)
	m.Namespace = c.String(0)
	m.Generation = c.Int63()
	c.Fill(&m.Labels)
	c.Fill(&m.Annotations)
	if c.Bool() {
		addAnnotation(m, RolloutStyleAnnotation, pick(c, "canary", "partition", "Partition", "PARTITION", "bluegreen", "", "foo"))
	}
	if c.Bool() {
		addAnnotation(m, TrafficRoutingAnnotation, pick(c, "", "tr-a", c.String(0)))
	}
}

func fillIntOrString(v *intstr.IntOrString, c randfill.Continue) {
	switch c.Intn(3) {
	case 0:
		*v = intstr.FromInt32(c.Int31())
	case 1:
		*v = intstr.FromString(fmt.Sprintf("%d%%", c.Intn(101)))
	default:
		*v = intstr.FromString(c.String(0))
	}
}

func fillTime(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(1<<33), c.Int63n(1e9)) }

func addAnnotation(m *metav1.ObjectMeta, key, value string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
}

func pick(c randfill.Continue, values ...string) string { return values[c.Intn(len(values))] }

func pickPointer(c randfill.Continue, values ...string) *string {
	v := pick(c, values...)
	return &v
}

// wire gives obj as it reads after a trip through the API server: JSON encoded and decoded.
func wire[T any](t testing.TB, obj *T) *T {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding %T: %v", obj, err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding %T: %v", obj, err)
	}
	return out
}

// requireSameJSON fails unless want and got serialise identically, the identity that matters on the wire.
func requireSameJSON(t testing.TB, want, got any) {
	t.Helper()
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("encoding want: %v", err)
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("encoding got: %v", err)
	}
	if string(wantJSON) != string(gotJSON) {
		t.Fatalf("round trip changed the object (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// hubRolloutRoundTrip checks v1beta1 -> v1alpha1 -> v1beta1 identity, with the v1alpha1 form passing
// through JSON like a client's read-and-write-back.
func hubRolloutRoundTrip(t testing.TB, in *rolloutsv1beta1.Rollout) {
	t.Helper()
	in.TypeMeta = metav1.TypeMeta{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "Rollout"}
	hub := wire(t, in)
	var spoke Rollout
	if err := ConvertRolloutFromV1beta1(hub, &spoke); err != nil {
		t.Fatalf("ConvertRolloutFromV1beta1: %v", err)
	}
	var back rolloutsv1beta1.Rollout
	if err := ConvertRolloutToV1beta1(wire(t, &spoke), &back); err != nil {
		t.Fatalf("ConvertRolloutToV1beta1: %v", err)
	}
	requireSameJSON(t, hub, &back)
}

// spokeRolloutRoundTrip checks v1alpha1 -> v1beta1 -> v1alpha1 identity up to the documented defaults.
func spokeRolloutRoundTrip(t testing.TB, in *Rollout) {
	t.Helper()
	in.TypeMeta = metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "Rollout"}
	spoke := wire(t, in)
	var hub rolloutsv1beta1.Rollout
	if err := ConvertRolloutToV1beta1(spoke, &hub); err != nil {
		t.Fatalf("ConvertRolloutToV1beta1: %v", err)
	}
	var back Rollout
	if err := ConvertRolloutFromV1beta1(wire(t, &hub), &back); err != nil {
		t.Fatalf("ConvertRolloutFromV1beta1: %v", err)
	}
	requireSameJSON(t, normalizedSpokeRollout(spoke), &back)
}

// normalizedSpokeRollout applies the v1alpha1 defaults the conversion makes explicit: a missing
// workloadRef is empty, replicas default to the weight, and the rolling style is spelt out in lower case.
func normalizedSpokeRollout(in *Rollout) *Rollout {
	out := in.DeepCopy()
	if out.Spec.ObjectRef.WorkloadRef == nil {
		out.Spec.ObjectRef.WorkloadRef = &WorkloadRef{}
	}
	canary := out.Spec.Strategy.Canary
	if canary == nil {
		return out
	}
	for i := range canary.Steps {
		step := &canary.Steps[i]
		if step.Replicas == nil && step.Weight != nil {
			replicas := intstr.FromString(fmt.Sprintf("%d%%", *step.Weight))
			step.Replicas = &replicas
		}
	}
	style := canaryStyleValue
	if strings.EqualFold(out.Annotations[RolloutStyleAnnotation], partitionStyleValue) {
		style = partitionStyleValue
	}
	addAnnotation(&out.ObjectMeta, RolloutStyleAnnotation, style)
	return out
}

func hubBatchReleaseRoundTrip(t testing.TB, in *rolloutsv1beta1.BatchRelease) {
	t.Helper()
	in.TypeMeta = metav1.TypeMeta{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "BatchRelease"}
	hub := wire(t, in)
	var spoke BatchRelease
	if err := ConvertBatchReleaseFromV1beta1(hub, &spoke); err != nil {
		t.Fatalf("ConvertBatchReleaseFromV1beta1: %v", err)
	}
	var back rolloutsv1beta1.BatchRelease
	if err := ConvertBatchReleaseToV1beta1(wire(t, &spoke), &back); err != nil {
		t.Fatalf("ConvertBatchReleaseToV1beta1: %v", err)
	}
	requireSameJSON(t, hub, &back)
}

func spokeBatchReleaseRoundTrip(t testing.TB, in *BatchRelease) {
	t.Helper()
	in.TypeMeta = metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "BatchRelease"}
	spoke := wire(t, in)
	var hub rolloutsv1beta1.BatchRelease
	if err := ConvertBatchReleaseToV1beta1(spoke, &hub); err != nil {
		t.Fatalf("ConvertBatchReleaseToV1beta1: %v", err)
	}
	var back BatchRelease
	if err := ConvertBatchReleaseFromV1beta1(wire(t, &hub), &back); err != nil {
		t.Fatalf("ConvertBatchReleaseFromV1beta1: %v", err)
	}
	requireSameJSON(t, normalizedSpokeBatchRelease(spoke), &back)
}

// normalizedSpokeBatchRelease applies the documented v1alpha1 defaults: a missing workloadRef is empty,
// a rolling-style annotation naming a style overrides the field, and a style is spelt out in the
// annotation in lower case.
func normalizedSpokeBatchRelease(in *BatchRelease) *BatchRelease {
	out := in.DeepCopy()
	if out.Spec.TargetRef.WorkloadRef == nil {
		out.Spec.TargetRef.WorkloadRef = &WorkloadRef{}
	}
	plan := &out.Spec.ReleasePlan
	plan.RollingStyle = RollingStyleType(batchStyleToV1beta1(plan.RollingStyle, out.Annotations[RolloutStyleAnnotation]))
	if plan.RollingStyle != "" {
		addAnnotation(&out.ObjectMeta, RolloutStyleAnnotation, strings.ToLower(string(plan.RollingStyle)))
	}
	return out
}
