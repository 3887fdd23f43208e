package bench

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// phaseName names an injection phase by its SidecarSets.
func phaseName(sets int) string { return fmt.Sprintf("%d SidecarSets", sets) }

// injectFigure is one webhook case of a phase against the pods of the baseline namespace created in turn
// with it.
type injectFigure struct {
	Phase, Case       string
	Webhook, Baseline Summary
}

// AddedP50 and AddedP99 are what the webhook adds to a pod creation, in milliseconds.
func (f injectFigure) AddedP50() float64 { return f.Webhook.P50Ms - f.Baseline.P50Ms }
func (f injectFigure) AddedP99() float64 { return f.Webhook.P99Ms - f.Baseline.P99Ms }

// injectFigures summarises each phase's samples by case: every case but the baseline against the baseline.
func injectFigures(phases []injectPhase, samples map[string]map[string][]time.Duration) ([]injectFigure, error) {
	var out []injectFigure
	var errs []error
	for _, p := range phases {
		name := phaseName(p.Sets)
		base := samples[name][caseNoWebhook]
		if len(base) == 0 {
			errs = append(errs, fmt.Errorf("%s: no pods timed without the webhook", name))
			continue
		}
		for _, c := range p.Cases {
			if c.Name == caseNoWebhook {
				continue
			}
			s := samples[name][c.Name]
			if len(s) == 0 {
				errs = append(errs, fmt.Errorf("%s: no pods timed for %q", name, c.Name))
				continue
			}
			out = append(out, injectFigure{Phase: name, Case: c.Name, Webhook: Summarize(s), Baseline: Summarize(base)})
		}
	}
	return out, errors.Join(errs...)
}

// injectWebhook is the API server's name of the pod webhook the bench's bare pods are sent to, and
// webhookDuration its histogram of how long each call to a webhook took, as the API server timed it.
const (
	injectWebhook   = "msidecarset-pod.kb.io"
	webhookDuration = "apiserver_admission_webhook_admission_duration_seconds"
)

// webhookCalls is what the API server timed of its calls to the pod webhook in one phase.
type webhookCalls struct {
	Count, Seconds float64
	// Over5ms and Over25ms count the calls beyond the histogram's first two bounds.
	Over5ms, Over25ms float64
}

// webhookCallsBetween reads the pod webhook's pod creations off two readings of the API server's metrics.
func webhookCallsBetween(before, after []Sample) (webhookCalls, error) {
	labels := map[string]string{"name": injectWebhook, "operation": "CREATE", "type": "admit"}
	rise := func(suffix string) float64 {
		spec := counterSpec{Metric: webhookDuration + suffix, Labels: labels}
		return sumCounter(after, spec) - sumCounter(before, spec)
	}
	calls := webhookCalls{Count: rise("_count"), Seconds: rise("_sum")}
	buckets, err := histogramRise(webhookDuration, labels, before, after)
	if err != nil {
		return calls, err
	}
	for _, b := range buckets {
		switch b.UpperBound {
		case 0.005:
			calls.Over5ms = calls.Count - b.Count
		case 0.025:
			calls.Over25ms = calls.Count - b.Count
		}
	}
	return calls, nil
}

// String says it for a metric's note.
func (c webhookCalls) String() string {
	if c.Count == 0 {
		return "the API server called the webhook for no pod"
	}
	return fmt.Sprintf("the API server's %.0f calls to the webhook: mean %.2f ms, %.1f%% over 5 ms, %.1f%% over 25 ms",
		c.Count, c.Seconds/c.Count*1000, c.Over5ms/c.Count*100, c.Over25ms/c.Count*100)
}

// addInjectMetrics adds each case's p50 and p99 against the baseline's, and the p99 the webhook adds, with
// the target and how long the API server's calls to the webhook took in the case's phase.
func addInjectMetrics(res *Result, phases []injectPhase, samples map[string]map[string][]time.Duration, calls map[string]webhookCalls) error {
	figures, err := injectFigures(phases, samples)
	if res.Latencies == nil {
		res.Latencies = map[string]Summary{}
	}
	for _, f := range figures {
		res.Latencies[f.Phase+": "+caseNoWebhook] = f.Baseline
		res.Latencies[f.Phase+": "+f.Case] = f.Webhook
		note := fmt.Sprintf("%d pods created one at a time, in turn with %d of the namespace no pod webhook is called for",
			f.Webhook.N, f.Baseline.N)
		res.Add(
			Metric{Name: f.Case + ": create p50", Unit: UnitMilliseconds, Value: f.Webhook.P50Ms, Note: note}.
				Compared(caseNoWebhook, f.Baseline.P50Ms),
			Metric{Name: f.Case + ": create p99", Unit: UnitMilliseconds, Value: f.Webhook.P99Ms}.
				Compared(caseNoWebhook, f.Baseline.P99Ms),
			Metric{Name: f.Case + ": p99 added by the webhook", Unit: UnitMilliseconds, Value: f.AddedP99(),
				Note: fmt.Sprintf("p50 added: %.2f ms; %s", f.AddedP50(), calls[f.Phase])}.WithTarget(ms(injectAddedTarget)),
		)
	}
	return err
}

// sidecarReplacement says how a run's pods came to run the new image of one container.
type sidecarReplacement struct {
	Pods int
	// Kept pods existed before the change; InPlace of them run the new image after exactly one restart of
	// that container and none of the others.
	Kept, InPlace int
	// OnImage pods, kept or not, report the new image for the container.
	OnImage int
}

// countSidecarReplacement counts the pods whose container runs the in-place scenarios' new image, and how
// they got it.
func countSidecarReplacement(pods []corev1.Pod, before map[types.UID]bool, container string) sidecarReplacement {
	r := sidecarReplacement{Pods: len(pods)}
	for i := range pods {
		p := &pods[i]
		cs := containerStatus(p, container)
		on := cs != nil && cs.Image == inPlaceImage
		if on {
			r.OnImage++
		}
		if !before[p.UID] {
			continue
		}
		r.Kept++
		if on && cs.RestartCount == 1 && othersNotRestarted(p, container) {
			r.InPlace++
		}
	}
	return r
}

func othersNotRestarted(p *corev1.Pod, container string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != container && cs.RestartCount != 0 {
			return false
		}
	}
	return true
}

// checkUpgrade fails runs whose pods did not change as their kind says: every pod kept and its sidecar
// alone restarted for the SidecarSet, every pod new for the Deployment. Otherwise the times measure
// something else.
func checkUpgrade(sidecar, native upgradeRun) error {
	var errs []error
	if want := (sidecarReplacement{Pods: upgradePods, Kept: upgradePods, InPlace: upgradePods, OnImage: upgradePods}); sidecar.Pods != want {
		errs = append(errs, fmt.Errorf("%s: pods %+v, want %+v", sidecar.Kind, sidecar.Pods, want))
	}
	if want := (sidecarReplacement{Pods: upgradePods, OnImage: upgradePods}); native.Pods != want {
		errs = append(errs, fmt.Errorf("%s: pods %+v, want %+v", native.Kind, native.Pods, want))
	}
	return errors.Join(errs...)
}

// addUpgradeMetrics adds the SidecarSet's times against the Deployment's, the manager's writes per pod, its
// RSS and CPU against kube-controller-manager's in the Deployment's run.
func addUpgradeMetrics(res *Result, sidecar, native upgradeRun) {
	sc, nd := sidecar.Figures, native.Figures
	const baseline = "Deployment recreating its pods"
	res.Add(
		Metric{Name: fmt.Sprintf("sidecar update of %d pods in place", upgradePods), Unit: UnitSeconds, Value: sc.Total.Seconds(),
			Note: fmt.Sprintf("SidecarSet patch sent -> status updatedReadyPods %d at the current generation; the Deployment: "+
				"image change sent -> rolled out, %d updated and available", upgradePods, upgradePods)}.
			Compared(baseline, nd.Total.Seconds()),
		Metric{Name: "all pods on the new image (spec)", Unit: UnitSeconds, Value: sc.AllStarted.Seconds(),
			Note: "change sent -> last pod seen asking for the new image: patched in place, or created (Deployment)"}.
			Compared(baseline, nd.AllStarted.Seconds()),
		Metric{Name: "all pods Ready on the new image", Unit: UnitSeconds, Value: sc.AllFinished.Seconds(),
			Note: "change sent -> last pod seen Ready, the changed container reporting the new image"}.
			Compared(baseline, nd.AllFinished.Seconds()),
		Metric{Name: "status lag", Unit: UnitSeconds, Value: sc.StatusLag.Seconds(), Note: "last pod Ready -> the status showing it"}.
			Compared(baseline, nd.StatusLag.Seconds()),
	)
	m, k := sidecar.Phase.Usage[ManagerName], native.Phase.Usage[ControllerManagerName]
	p := sidecar.Pods
	res.Add(
		Metric{Name: "manager writes per pod", Unit: UnitPerPod, Value: float64(writes(sidecar.Phase.Requests)) / upgradePods,
			Note: perPodWrites(sidecar.Phase.Requests, upgradePods)},
		Metric{Name: "manager peak RSS (SidecarSet run)", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)}.
			Compared(ControllerManagerName+" in the Deployment run", float64(k.PeakRSSBytes)),
		Metric{Name: "manager CPU (SidecarSet run)", Unit: UnitSeconds, Value: m.CPUSeconds,
			Note: usageNote(ManagerName, m) + "; " + usageNote(ControllerManagerName, k) + " (Deployment run)"}.
			Compared(ControllerManagerName+" in the Deployment run", k.CPUSeconds),
		Metric{Name: "pods updated in place", Unit: UnitCount, Value: float64(p.InPlace),
			Note: fmt.Sprintf("of %d pods after the change: %d kept their UID, %d report the new sidecar image", p.Pods, p.Kept, p.OnImage)},
		Metric{Name: "setup: injected pods Ready", Unit: UnitSeconds, Value: sidecar.Setup.Seconds(),
			Note: fmt.Sprintf("Deployment of %d created (its pods injected) -> the SidecarSet counting them all ready", upgradePods)},
	)
	res.Add(counterMetrics(upgradeCounters, sidecar.Counters, "", "the SidecarSet run")...)
}
