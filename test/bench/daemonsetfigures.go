package bench

import (
	"errors"
	"fmt"
)

// daemonSetComparison is the mean figures and summed phases of each kind's runs.
type daemonSetComparison struct {
	Figures map[string]runFigures
	Phases  map[string]Phase
	Runs    map[string]int
	// Pods is the last run's replacement of each kind.
	Pods map[string]replacement
}

func compareDaemonSets(runs []daemonSetRun) (daemonSetComparison, error) {
	c := daemonSetComparison{Figures: map[string]runFigures{}, Phases: map[string]Phase{}, Runs: map[string]int{},
		Pods: map[string]replacement{}}
	figures, phases := map[string][]runFigures{}, map[string][]Phase{}
	for _, r := range runs {
		figures[r.Kind] = append(figures[r.Kind], r.Figures)
		phases[r.Kind] = append(phases[r.Kind], r.Phase)
		c.Pods[r.Kind] = r.Pods
	}
	for kind, f := range figures {
		c.Figures[kind], c.Phases[kind], c.Runs[kind] = meanFigures(f), sumPhases(phases[kind]), len(f)
	}
	if c.Runs[kindNativeDaemonSet] == 0 || c.Runs[kindAdvancedStandard] == 0 {
		return c, fmt.Errorf("%d native and %d Advanced DaemonSet runs: need both", c.Runs[kindNativeDaemonSet], c.Runs[kindAdvancedStandard])
	}
	return c, nil
}

// checkDaemonSetPods fails runs whose pods did not change the way their strategy says: then the time
// measures something else.
func checkDaemonSetPods(c daemonSetComparison) error {
	var errs []error
	for kind, p := range c.Pods {
		want := replacement{Pods: daemonSetNodes, OnImage: daemonSetNodes}
		if kind == kindAdvancedInPlace {
			want.Kept, want.InPlace = daemonSetNodes, daemonSetNodes
		}
		if p != want {
			errs = append(errs, fmt.Errorf("%s: pods %+v, want %+v", kind, p, want))
		}
	}
	return errors.Join(errs...)
}

func addDaemonSetMetrics(res *Result, runs []daemonSetRun) error {
	c, err := compareDaemonSets(runs)
	if err != nil {
		return err
	}
	native, standard := c.Figures[kindNativeDaemonSet], c.Figures[kindAdvancedStandard]
	res.Add(
		Metric{Name: fmt.Sprintf("update of %d pods (Standard)", daemonSetNodes), Unit: UnitSeconds, Value: standard.Total.Seconds(),
			Note: fmt.Sprintf("image change sent -> status updatedNumberScheduled and numberAvailable %d at the current generation; "+
				"mean of %d runs against %d", daemonSetNodes, c.Runs[kindAdvancedStandard], c.Runs[kindNativeDaemonSet])}.
			Compared("native DaemonSet", native.Total.Seconds()).WithRatioTarget(daemonSetRatioTarget),
		Metric{Name: "all pods Ready on the new image (Standard)", Unit: UnitSeconds, Value: standard.AllFinished.Seconds(),
			Note: "change sent -> last pod seen Ready on the new image"}.Compared("native DaemonSet", native.AllFinished.Seconds()),
		daemonSetWrites(c, kindAdvancedStandard),
	)
	if c.Runs[kindGatedDaemonSet] > 0 {
		gated := c.Figures[kindGatedDaemonSet]
		res.Add(
			Metric{Name: fmt.Sprintf("update of %d gated pods", daemonSetNodes), Unit: UnitSeconds, Value: gated.Total.Seconds(),
				Note: "a native DaemonSet whose pods carry one readiness gate (as an Advanced DaemonSet's carry KruisePodReady), " +
					"set True by the harness in one status write per pod: the gate's cost alone"}.
				Compared("native DaemonSet", native.Total.Seconds()),
			Metric{Name: "Standard against the gated DaemonSet", Unit: UnitSeconds, Value: standard.Total.Seconds(),
				Note: "the Advanced DaemonSet's time over what its pods' readiness gate costs with no controller at all"}.
				Compared("gated DaemonSet", gated.Total.Seconds()),
		)
	}
	if n := c.Runs[kindAdvancedInPlace]; n > 0 {
		inPlace := c.Figures[kindAdvancedInPlace]
		res.Add(
			Metric{Name: fmt.Sprintf("in-place update of %d pods", daemonSetNodes), Unit: UnitSeconds, Value: inPlace.Total.Seconds(),
				Note: "InPlaceIfPossible: image change sent -> status shows every pod updated and available"}.
				Compared("native DaemonSet", native.Total.Seconds()),
			daemonSetWrites(c, kindAdvancedInPlace),
			Metric{Name: "pods updated in place", Unit: UnitCount, Value: float64(c.Pods[kindAdvancedInPlace].InPlace),
				Note: fmt.Sprintf("of %d pods kept their UID and restarted once on the new image", daemonSetNodes)},
		)
	}
	return checkDaemonSetPods(c)
}

func daemonSetWrites(c daemonSetComparison, kind string) Metric {
	p := c.Phases[kind]
	pods := daemonSetNodes * c.Runs[kind]
	return Metric{Name: "manager writes per pod (" + kind + ")", Unit: UnitPerPod,
		Value: float64(writes(p.Requests)) / float64(pods), Note: perPodWrites(p.Requests, pods)}
}
