package bench

import (
	"testing"
	"time"
)

func TestCompareDaemonSets(t *testing.T) {
	run := func(kind string, total time.Duration, p replacement) daemonSetRun {
		return daemonSetRun{Kind: kind, Figures: runFigures{Total: total}, Pods: p}
	}
	recreated := replacement{Pods: daemonSetNodes, OnImage: daemonSetNodes}
	inPlace := replacement{Pods: daemonSetNodes, OnImage: daemonSetNodes, Kept: daemonSetNodes, InPlace: daemonSetNodes}
	c, err := compareDaemonSets([]daemonSetRun{
		run(kindNativeDaemonSet, 10*time.Second, recreated), run(kindAdvancedStandard, 11*time.Second, recreated),
		run(kindNativeDaemonSet, 12*time.Second, recreated), run(kindAdvancedStandard, 13*time.Second, recreated),
		run(kindAdvancedInPlace, 5*time.Second, inPlace),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Figures[kindNativeDaemonSet].Total; got != 11*time.Second {
		t.Errorf("native mean %v, want 11s", got)
	}
	if got := c.Figures[kindAdvancedStandard].Total; got != 12*time.Second {
		t.Errorf("Standard mean %v, want 12s", got)
	}
	if c.Runs[kindAdvancedStandard] != 2 || c.Runs[kindAdvancedInPlace] != 1 {
		t.Errorf("runs %v", c.Runs)
	}
	if err := checkDaemonSetPods(c); err != nil {
		t.Errorf("check: %v", err)
	}
	c.Pods[kindAdvancedInPlace] = recreated
	if err := checkDaemonSetPods(c); err == nil {
		t.Errorf("an in-place run that recreated its pods passed the check")
	}
}

func TestCompareDaemonSetsNeedsBothKinds(t *testing.T) {
	_, err := compareDaemonSets([]daemonSetRun{{Kind: kindAdvancedStandard}})
	if err == nil {
		t.Fatal("no native run, no error")
	}
}
