package bench

import (
	"context"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

func TestPerRun(t *testing.T) {
	before := runtime.MemStats{Mallocs: 100, TotalAlloc: 4096}
	after := runtime.MemStats{Mallocs: 1100, TotalAlloc: 4096 + 51200}
	for _, tc := range []struct {
		n             int
		allocs, bytes float64
	}{
		{n: 10, allocs: 100, bytes: 5120},
		{n: 4000, allocs: 0.25, bytes: 12.8},
		{n: 0},
		{n: -1},
	} {
		allocs, bytes := perRun(before, after, tc.n)
		if allocs != tc.allocs || bytes != tc.bytes {
			t.Errorf("perRun(n=%d) = %v allocs, %v bytes; want %v, %v", tc.n, allocs, bytes, tc.allocs, tc.bytes)
		}
	}
}

func TestCountAllocsStopsAtError(t *testing.T) {
	calls := 0
	boom := errors.New("boom")
	_, _, err := countAllocs(5, func() error {
		calls++
		if calls == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls != 2 {
		t.Errorf("err = %v after %d calls", err, calls)
	}
}

// Every case's input makes its script return what the case expects, so
// the scenario times the path it names, not an error.
func TestLuaCases(t *testing.T) {
	cases, err := luaCases()
	if err != nil {
		t.Fatal(err)
	}
	vm := luavm.New(luavm.Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := evalChecked(context.Background(), vm, c); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCheckRoutes(t *testing.T) {
	weighted := map[string]any{"route": []any{
		map[string]any{"destination": map[string]any{"host": "reviews"}, "weight": 70},
		map[string]any{"destination": map[string]any{"host": "reviews-canary"}, "weight": 30},
	}}
	matched := map[string]any{"route": []any{map[string]any{"destination": map[string]any{"host": "reviews-canary"}}}}
	out := map[string]any{"spec": map[string]any{"http": []any{matched, weighted}}}
	if err := checkRoutes(2, 1)(out); err != nil {
		t.Error(err)
	}
	if err := checkRoutes(2, 2)(out); err == nil {
		t.Error("a match route's canary destination counted as weighted")
	}
	if err := checkRoutes(3, 1)(out); err == nil {
		t.Error("wrong route count accepted")
	}
	if err := checkRoutes(0, 0)(map[string]any{"spec": "nonsense"}); err != nil {
		t.Errorf("a spec without routes has 0 routes: %v", err)
	}
}

func TestCheckNginx(t *testing.T) {
	if err := checkNginx(map[string]any{"nginx.ingress.kubernetes.io/canary-weight": "30"}); err == nil {
		t.Error("missing header annotation accepted")
	}
}

func TestHoldLiveHeap(t *testing.T) {
	env := &Env{log: io.Discard}
	for _, tc := range []struct {
		value   string
		objects int
		wantErr bool
	}{
		{value: "", objects: 0},
		{value: "2", objects: 2 << 20 / 400},
		{value: "-1", wantErr: true},
		{value: "57MB", wantErr: true},
	} {
		t.Setenv("FLOTILLA_BENCH_LUA_LIVE_MB", tc.value)
		held, err := holdLiveHeap(env)
		if (err != nil) != tc.wantErr || len(held) != tc.objects {
			t.Errorf("FLOTILLA_BENCH_LUA_LIVE_MB=%q: %d objects, error %v; want %d, error %v", tc.value, len(held), err, tc.objects, tc.wantErr)
		}
	}
}
