package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ErrUnsetTotal means spec.replicas is unset while some subset has no fixed count: there is nothing to
// share out.
var ErrUnsetTotal = errors.New("all subsets must set replicas when spec.replicas is unset")

// SubsetReplicas reads a subset's replicas, minReplicas or maxReplicas: an integer, or a percentage of total
// rounded half up, as upstream. A percentage needs a total (total < 0 means spec.replicas is unset).
func SubsetReplicas(total int32, v intstr.IntOrString) (int32, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%d must not be negative", v.IntVal)
		}
		return v.IntVal, nil
	}
	if total < 0 {
		return 0, fmt.Errorf("%q: a percentage needs spec.replicas", v.StrVal)
	}
	pct, err := strconv.ParseInt(strings.TrimSuffix(v.StrVal, "%"), 10, 32)
	if !strings.HasSuffix(v.StrVal, "%") || err != nil || pct < 0 || pct > 100 {
		return 0, fmt.Errorf("%q must be an integer or a percentage between 0%% and 100%%", v.StrVal)
	}
	return int32(math.Floor(float64(total)*float64(pct)/100 + 0.5)), nil
}

// Capacity is what the adaptive strategy knows of a subset: whether new pods there would stay pending, and
// how many of its pods run (are not stuck pending).
type Capacity struct {
	Unschedulable bool
	Running       int32
}

// Allocate gives each subset of ud its replica count. With minReplicas/maxReplicas on any subset it fills
// the minimums then the maximums in list order (upstream's elastic allocator, the only one the adaptive
// strategy acts on, through capacity); otherwise fixed counts first and the rest shared evenly (upstream's
// specific allocator, which needs current, the subsets' current counts, to place the remainder).
func Allocate(ud *kruiseappsv1alpha1.UnitedDeployment, current map[string]int32, capacity map[string]Capacity) (map[string]int32, error) {
	for _, s := range ud.Spec.Topology.Subsets {
		if s.MinReplicas != nil || s.MaxReplicas != nil {
			return elastic(ud, capacity)
		}
	}
	return specific(ud, current)
}

// specific gives the fixed counts, then shares the rest evenly over the other subsets; the remainder goes to
// those that have the most replicas now (then the later name), so that scaling moves as few pods as possible.
func specific(ud *kruiseappsv1alpha1.UnitedDeployment, current map[string]int32) (map[string]int32, error) {
	total := int32(-1)
	if ud.Spec.Replicas != nil {
		total = *ud.Spec.Replicas
	}
	out, fixed, err := fixedCounts(ud.Spec.Topology.Subsets, total)
	if err != nil {
		return nil, err
	}
	free := freeSubsets(ud.Spec.Topology.Subsets, out, current)
	switch {
	case total < 0 && len(free) > 0:
		return nil, ErrUnsetTotal
	case total >= 0 && fixed > total:
		return nil, fmt.Errorf("the subsets' fixed replicas (%d) exceed spec.replicas (%d)", fixed, total)
	case total >= 0 && fixed < total && len(free) == 0:
		return nil, fmt.Errorf("every subset fixes its replicas and they sum to %d, not spec.replicas (%d)", fixed, total)
	}
	share(out, free, total-fixed)
	return out, nil
}

func fixedCounts(subsets []kruiseappsv1alpha1.Subset, total int32) (map[string]int32, int32, error) {
	out := make(map[string]int32, len(subsets))
	var sum int32
	for _, s := range subsets {
		if s.Replicas == nil {
			continue
		}
		n, err := SubsetReplicas(total, *s.Replicas)
		if err != nil {
			return nil, 0, fmt.Errorf("subset %s replicas: %w", s.Name, err)
		}
		out[s.Name] = n
		sum += n
	}
	return out, sum, nil
}

// freeSubsets are the subsets without a fixed count, fewest current replicas first, then by name.
func freeSubsets(subsets []kruiseappsv1alpha1.Subset, fixed, current map[string]int32) []string {
	var free []string
	for _, s := range subsets {
		if _, ok := fixed[s.Name]; !ok {
			free = append(free, s.Name)
		}
	}
	slices.SortFunc(free, func(a, b string) int {
		if current[a] != current[b] {
			return int(current[a] - current[b])
		}
		return strings.Compare(a, b)
	})
	return free
}

func share(out map[string]int32, free []string, rest int32) {
	if len(free) == 0 {
		return
	}
	n := int32(len(free))
	for i, name := range free {
		out[name] = rest / n
		if int32(len(free)-i) <= rest%n {
			out[name]++
		}
	}
}

// elastic fills each subset's minimum in list order, then up to each maximum in list order. Under the
// adaptive strategy an unschedulable subset keeps at most its running pods, and a schedulable one keeps the
// pods it runs (up to its maximum), so that moving pods never deletes healthy ones first.
func elastic(ud *kruiseappsv1alpha1.UnitedDeployment, capacity map[string]Capacity) (map[string]int32, error) {
	total := int32(1)
	if ud.Spec.Replicas != nil {
		total = *ud.Spec.Replicas
	}
	adaptive := ud.Spec.Topology.ScheduleStrategy.IsAdaptive()
	lo, hi := make(map[string]int32), make(map[string]int32)
	for _, s := range ud.Spec.Topology.Subsets {
		mn, mx, err := bounds(s, total)
		if err != nil {
			return nil, err
		}
		if c, ok := capacity[s.Name]; adaptive && ok {
			mn, mx = adapt(mn, mx, c)
		}
		if mn > mx {
			return nil, fmt.Errorf("subset %s: minReplicas (%d) exceeds maxReplicas (%d)", s.Name, mn, mx)
		}
		lo[s.Name], hi[s.Name] = mn, mx
	}
	return fill(ud.Spec.Topology.Subsets, total, lo, hi), nil
}

func bounds(s kruiseappsv1alpha1.Subset, total int32) (mn, mx int32, err error) {
	mx = math.MaxInt32
	if s.MinReplicas != nil {
		if mn, err = SubsetReplicas(total, *s.MinReplicas); err != nil {
			return 0, 0, fmt.Errorf("subset %s minReplicas: %w", s.Name, err)
		}
	}
	if s.MaxReplicas != nil {
		if mx, err = SubsetReplicas(total, *s.MaxReplicas); err != nil {
			return 0, 0, fmt.Errorf("subset %s maxReplicas: %w", s.Name, err)
		}
	}
	return mn, mx, nil
}

func adapt(mn, mx int32, c Capacity) (int32, int32) {
	if c.Unschedulable {
		return min(mn, c.Running), min(mx, c.Running)
	}
	if c.Running > mn {
		mn = min(c.Running, mx)
	}
	return mn, mx
}

func fill(subsets []kruiseappsv1alpha1.Subset, total int32, lo, hi map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(subsets))
	left := total
	for _, s := range subsets {
		n := max(min(lo[s.Name], left), 0)
		out[s.Name], left = n, left-n
	}
	for _, s := range subsets {
		n := max(min(hi[s.Name]-lo[s.Name], left), 0)
		out[s.Name], left = out[s.Name]+n, left-n
	}
	return out
}
