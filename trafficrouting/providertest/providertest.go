// Package providertest is the conformance suite every traffic routing provider passes against a real apiserver:
// routes set are read back, a repeated call changes nothing, and finalizing restores the original objects byte
// for byte.
package providertest

import (
	"bytes"
	"context"
	"testing"

	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// maxCalls bounds the calls a provider may need to converge; each call that changes something is followed by
// a grace period in production, so a provider needing more would slow every step.
const maxCalls = 3

// Harness adapts one provider to the suite.
type Harness struct {
	// Setup creates fresh fixture objects (a namespace of their own) and returns the provider for them.
	Setup func(t *testing.T) trafficrouting.Provider
	// Snapshot serializes every object the provider may create or change in the fixture, in a stable order;
	// objects the provider creates must appear only while they exist.
	Snapshot func(t *testing.T) []byte
	// Verify fails the test unless the objects route as r asks.
	Verify func(t *testing.T, r trafficrouting.Routes)
	// Cases are the routes to try; nil means DefaultCases.
	Cases []Case
}

// Case is one set of routes tried from a fresh fixture.
type Case struct {
	Name   string
	Routes trafficrouting.Routes
}

// DefaultCases covers a weight, a header match, a header match with a weight, and all traffic to the canary.
func DefaultCases() []Case {
	w := func(v int32) *int32 { return &v }
	header := HeaderMatch("user-agent", "pc")
	return []Case{
		{Name: "weight", Routes: trafficrouting.Routes{Weight: w(20)}},
		{Name: "header", Routes: trafficrouting.Routes{Matches: header}},
		{Name: "header-and-weight", Routes: trafficrouting.Routes{Weight: w(50), Matches: header}},
		{Name: "all", Routes: trafficrouting.Routes{Weight: w(100)}},
	}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	cases := h.Cases
	if cases == nil {
		cases = DefaultCases()
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runCase(t, h, c.Routes) })
	}
	t.Run("finalize-untouched", func(t *testing.T) { finalizeUntouched(t, h) })
	t.Run("change-routes", func(t *testing.T) { changeRoutes(t, h, cases) })
}

func runCase(t *testing.T, h Harness, r trafficrouting.Routes) {
	p := h.Setup(t)
	original := h.Snapshot(t)
	initialize(t, p)
	converge(t, "EnsureRoutes", func(ctx context.Context) (bool, error) { return p.EnsureRoutes(ctx, r) })
	h.Verify(t, r)
	assertSteady(t, h, "EnsureRoutes", func(ctx context.Context) (bool, error) { return p.EnsureRoutes(ctx, r) })
	converge(t, "Finalize", p.Finalize)
	if got := h.Snapshot(t); !bytes.Equal(got, original) {
		t.Errorf("after Finalize the objects differ from the originals:\n got: %s\nwant: %s", got, original)
	}
	assertSteady(t, h, "Finalize", p.Finalize)
}

// finalizeUntouched: finalizing objects no release changed is done at once and changes nothing.
func finalizeUntouched(t *testing.T, h Harness) {
	p := h.Setup(t)
	original := h.Snapshot(t)
	initialize(t, p)
	assertSteady(t, h, "Finalize", p.Finalize)
	if got := h.Snapshot(t); !bytes.Equal(got, original) {
		t.Errorf("Finalize of untouched objects changed them:\n got: %s\nwant: %s", got, original)
	}
}

// changeRoutes moves through every case in turn on the same objects, as a release's steps do.
func changeRoutes(t *testing.T, h Harness, cases []Case) {
	p := h.Setup(t)
	original := h.Snapshot(t)
	initialize(t, p)
	for _, c := range cases {
		converge(t, "EnsureRoutes "+c.Name, func(ctx context.Context) (bool, error) { return p.EnsureRoutes(ctx, c.Routes) })
		h.Verify(t, c.Routes)
	}
	converge(t, "Finalize", p.Finalize)
	if got := h.Snapshot(t); !bytes.Equal(got, original) {
		t.Errorf("after several steps and Finalize the objects differ from the originals:\n got: %s\nwant: %s", got, original)
	}
}

func initialize(t *testing.T, p trafficrouting.Provider) {
	t.Helper()
	if err := p.Initialize(t.Context()); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
}

// converge calls until done, failing when the provider needs more than maxCalls.
func converge(t *testing.T, what string, call func(context.Context) (bool, error)) {
	t.Helper()
	for range maxCalls {
		done, err := call(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if done {
			return
		}
	}
	t.Fatalf("%s not done after %d calls", what, maxCalls)
}

// assertSteady: once converged, another call reports done and changes nothing.
func assertSteady(t *testing.T, h Harness, what string, call func(context.Context) (bool, error)) {
	t.Helper()
	before := h.Snapshot(t)
	done, err := call(t.Context())
	if err != nil || !done {
		t.Fatalf("%s again: done=%v err=%v, want done", what, done, err)
	}
	if after := h.Snapshot(t); !bytes.Equal(before, after) {
		t.Errorf("%s again changed the objects:\n got: %s\nwant: %s", what, after, before)
	}
}
