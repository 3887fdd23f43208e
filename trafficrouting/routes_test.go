package trafficrouting

import (
	"context"
	"errors"
	"testing"

	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestParseWeight(t *testing.T) {
	cases := map[string]int32{"5%": 5, "0%": 0, "100%": 100, "40": 40, " 7% ": 7}
	for in, want := range cases {
		got, err := ParseWeight(in)
		if err != nil || got != want {
			t.Errorf("ParseWeight(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "%", "101%", "-1%", "5.5%", "five"} {
		if _, err := ParseWeight(bad); err == nil {
			t.Errorf("ParseWeight(%q) accepted", bad)
		}
	}
}

func TestFromStrategy(t *testing.T) {
	r, err := FromStrategy(rolloutsv1beta1.TrafficRoutingStrategy{Traffic: ptr.To("20%")})
	if err != nil || r.WeightOrNone() != 20 || !r.Routing() || r.String() != "weight 20%" {
		t.Errorf("FromStrategy(20%%) = %v, %v", r, err)
	}
	r, err = FromStrategy(rolloutsv1beta1.TrafficRoutingStrategy{})
	if err != nil || r.WeightOrNone() != -1 || r.Routing() {
		t.Errorf("FromStrategy(nothing) = %v (weight %d), %v", r, r.WeightOrNone(), err)
	}
	if Stable().Routing() || Stable().WeightOrNone() != 0 {
		t.Errorf("Stable() routes traffic: %v", Stable())
	}
}

// fake is a provider that needs `calls` calls to converge.
type fake struct {
	name  string
	calls int
	err   error
}

func (f *fake) Name() string                     { return f.name }
func (f *fake) Initialize(context.Context) error { return f.err }
func (f *fake) EnsureRoutes(context.Context, Routes) (bool, error) {
	f.calls--
	return f.calls <= 0, f.err
}
func (f *fake) Finalize(ctx context.Context) (bool, error) { return f.EnsureRoutes(ctx, Routes{}) }

func TestCompositeCallsEveryProvider(t *testing.T) {
	a, b := &fake{name: "a", calls: 1}, &fake{name: "b", calls: 2}
	c := Composite{a, b}
	if done, err := c.EnsureRoutes(t.Context(), Stable()); err != nil || done {
		t.Fatalf("first call: done=%v err=%v, want not done", done, err)
	}
	if a.calls != 0 || b.calls != 1 {
		t.Fatalf("a provider was skipped: a=%d b=%d", a.calls, b.calls)
	}
	if done, err := c.EnsureRoutes(t.Context(), Stable()); err != nil || !done {
		t.Fatalf("second call: done=%v err=%v, want done", done, err)
	}
	boom := errors.New("boom")
	if _, err := (Composite{&fake{name: "bad", err: boom}}).Finalize(t.Context()); !errors.Is(err, boom) || err.Error() != "bad: boom" {
		t.Errorf("error = %v, want it named after the provider", err)
	}
}

func TestRegistryBuildsConfiguredProviders(t *testing.T) {
	r := NewRegistry()
	if !r.Empty() {
		t.Fatal("new registry not empty")
	}
	r.Register("never", func(Config) (Provider, error) { return nil, nil })
	if _, err := r.For(Config{}); !errors.Is(err, ErrNoProvider) {
		t.Errorf("For with no provider configured: %v, want ErrNoProvider", err)
	}
	r.Register("always", func(Config) (Provider, error) { return &fake{name: "x"}, nil })
	p, err := r.For(Config{})
	if err != nil || len(p.(Composite)) != 1 {
		t.Errorf("For = %v, %v; want one provider", p, err)
	}
	r.Register("broken", func(Config) (Provider, error) { return nil, errors.New("bad ref") })
	if _, err := r.For(Config{}); err == nil || err.Error() != "broken traffic routing: bad ref" {
		t.Errorf("For with a broken factory: %v", err)
	}
}

func TestReplaceMapPatch(t *testing.T) {
	got := ReplaceMapPatch(map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "3", "c": "4"})
	want := map[string]any{"a": nil, "b": "3", "c": "4"}
	if len(got) != len(want) {
		t.Fatalf("patch = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("patch[%s] = %v, want %v", k, got[k], v)
		}
	}
}
