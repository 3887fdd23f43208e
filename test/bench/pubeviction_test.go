package bench

import (
	"testing"
	"time"
)

func TestPubFiguresCompareEachOutcomeWithTheBaselineOfItsRounds(t *testing.T) {
	var rounds []pubRound
	for i := range 10 {
		rounds = append(rounds, pubRound{Outcome: evictAdmitted, Protected: 8 * time.Millisecond, Baseline: 3 * time.Millisecond})
		if i < 5 {
			rounds = append(rounds, pubRound{Outcome: evictRefused, Protected: 5 * time.Millisecond, Baseline: 2 * time.Millisecond})
		}
	}
	figures := pubFigures(rounds)
	if len(figures) != 2 || figures[0].Outcome != evictAdmitted || figures[1].Outcome != evictRefused {
		t.Fatalf("figures %+v, want admitted then refused", figures)
	}
	for _, c := range []struct {
		f                       pubOutcomeFigure
		n                       int
		protectedMs, baselineMs float64
	}{{figures[0], 10, 8, 3}, {figures[1], 5, 5, 2}} {
		if c.f.Protected.N != c.n || c.f.Baseline.N != c.n {
			t.Errorf("%s: %d and %d samples, want %d each", c.f.Outcome, c.f.Protected.N, c.f.Baseline.N, c.n)
		}
		if c.f.Protected.P99Ms != c.protectedMs || c.f.Baseline.P99Ms != c.baselineMs {
			t.Errorf("%s: p99 %.1f against %.1f ms, want %.1f against %.1f", c.f.Outcome, c.f.Protected.P99Ms,
				c.f.Baseline.P99Ms, c.protectedMs, c.baselineMs)
		}
	}
}

func TestPubFiguresLeaveOutAnOutcomeNoRoundHad(t *testing.T) {
	figures := pubFigures([]pubRound{{Outcome: evictRefused, Protected: time.Millisecond, Baseline: time.Millisecond}})
	if len(figures) != 1 || figures[0].Outcome != evictRefused {
		t.Fatalf("figures %+v, want refused only", figures)
	}
}

func TestPubEvictionMetricsFailWhenTheBudgetAdmitsOtherThanItAllows(t *testing.T) {
	rounds := func(admitted int) []pubRound {
		out := make([]pubRound, pubProtectedPods)
		for i := range out {
			out[i] = pubRound{Outcome: evictRefused, Protected: time.Millisecond, Baseline: time.Millisecond}
			if i < admitted {
				out[i].Outcome = evictAdmitted
			}
		}
		return out
	}
	if pubAllowed() != 200 {
		t.Fatalf("the budget allows %d evictions, want 200 (40%% of %d)", pubAllowed(), pubProtectedPods)
	}
	for _, admitted := range []int{pubAllowed(), pubAllowed() + 1, pubAllowed() - 1} {
		var res Result
		err := addPubEvictionMetrics(&res, rounds(admitted), nil)
		if (err == nil) != (admitted == pubAllowed()) {
			t.Errorf("%d admitted: error %v", admitted, err)
		}
		if _, ok := res.Latencies["eviction refused (429)"]; !ok {
			t.Errorf("%d admitted: no refused latencies in %v", admitted, res.Latencies)
		}
	}
}
