package podprober

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Key names one probe of one pod: a worker runs each.
type Key struct {
	PodUID, Probe string
}

// Target is what a worker probes: the pod, its container and the probe, as the NodePodProbe's spec holds them.
type Target struct {
	Key
	Namespace, Pod, IP, Container string
	Probe                         corev1.Probe
}

// Targets lists every probe of a NodePodProbe's spec.
func Targets(spec kruiseappsv1alpha1.NodePodProbeSpec) map[Key]Target {
	out := map[Key]Target{}
	for _, pp := range spec.PodProbes {
		for _, cp := range pp.Probes {
			k := Key{PodUID: pp.UID, Probe: cp.Name}
			out[k] = Target{Key: k, Namespace: pp.Namespace, Pod: pp.Name, IP: pp.IP, Container: cp.ContainerName, Probe: cp.Probe.Probe}
		}
	}
	return out
}

// Fingerprint tells two versions of a target apart: a worker whose target changed starts over.
func (t Target) Fingerprint() uint64 {
	raw, _ := json.Marshal(t)
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return h.Sum64()
}

// Diff says which workers to stop (gone or changed) and which to start (new or changed).
func Diff(running map[Key]uint64, want map[Key]Target) (stop []Key, start []Target) {
	for k, fp := range running {
		if t, ok := want[k]; !ok || t.Fingerprint() != fp {
			stop = append(stop, k)
		}
	}
	for k, t := range want {
		if fp, ok := running[k]; !ok || t.Fingerprint() != fp {
			start = append(start, t)
		}
	}
	slices.SortFunc(stop, compareKeys)
	slices.SortFunc(start, func(a, b Target) int { return compareKeys(a.Key, b.Key) })
	return stop, start
}

func compareKeys(a, b Key) int {
	if c := strings.Compare(a.PodUID, b.PodUID); c != 0 {
		return c
	}
	return strings.Compare(a.Probe, b.Probe)
}

// Outcome is one probe run: passed or not, and what it said.
type Outcome struct {
	Passed  bool
	Message string
}

// Tally turns outcomes into a state with the probe's thresholds: successThreshold consecutive passes make it
// Succeeded, failureThreshold consecutive failures Failed; until one is reached it has none.
type Tally struct {
	State            kruiseappsv1alpha1.ProbeState
	Message          string
	Since            time.Time
	passes, failures int32
}

// Record counts one outcome at now and reports whether the state changed. The status is written only then,
// with the message and time of the probe that changed it: a probe every few seconds writes nothing while its
// answer stays the same.
func (t *Tally) Record(o Outcome, success, failure int32, now time.Time) bool {
	if o.Passed {
		t.passes, t.failures = t.passes+1, 0
	} else {
		t.passes, t.failures = 0, t.failures+1
	}
	next := t.State
	switch {
	case o.Passed && t.passes >= max(success, 1):
		next = kruiseappsv1alpha1.ProbeSucceeded
	case !o.Passed && t.failures >= max(failure, 1):
		next = kruiseappsv1alpha1.ProbeFailed
	}
	if next == t.State {
		return false
	}
	t.State, t.Message, t.Since = next, o.Message, now
	return true
}

// Status is the NodePodProbe status the tallies make: one entry per pod of the spec, in its order, with the
// probes that have a state. Pods and probes gone from the spec are dropped with it.
func Status(spec kruiseappsv1alpha1.NodePodProbeSpec, tallies map[Key]Tally) kruiseappsv1alpha1.NodePodProbeStatus {
	var out kruiseappsv1alpha1.NodePodProbeStatus
	for _, pp := range spec.PodProbes {
		ps := kruiseappsv1alpha1.PodProbeStatus{Name: pp.Name, Namespace: pp.Namespace, UID: pp.UID}
		for _, cp := range pp.Probes {
			t, ok := tallies[Key{PodUID: pp.UID, Probe: cp.Name}]
			if !ok || t.State == "" {
				continue
			}
			ps.ProbeStates = append(ps.ProbeStates, kruiseappsv1alpha1.ContainerProbeState{
				Name: cp.Name, State: t.State, Message: t.Message,
				LastProbeTime: metav1.NewTime(t.Since), LastTransitionTime: metav1.NewTime(t.Since),
			})
		}
		if len(ps.ProbeStates) > 0 {
			out.PodProbeStatuses = append(out.PodProbeStatuses, ps)
		}
	}
	return out
}

// Schedule is when a worker probes: the first run after initialDelaySeconds, then every periodSeconds (10 s
// when unset, as the kubelet's default), each bounded by timeoutSeconds (1 s when unset).
type Schedule struct {
	InitialDelay, Period, Timeout time.Duration
	Success, Failure              int32
}

// ScheduleOf reads a probe's timing with the kubelet's defaults.
func ScheduleOf(p corev1.Probe) Schedule {
	return Schedule{
		InitialDelay: seconds(p.InitialDelaySeconds, 0),
		Period:       seconds(p.PeriodSeconds, 10),
		Timeout:      seconds(p.TimeoutSeconds, 1),
		Success:      max(p.SuccessThreshold, 1),
		Failure:      orDefault(p.FailureThreshold, 3),
	}
}

func seconds(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

func orDefault(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}
