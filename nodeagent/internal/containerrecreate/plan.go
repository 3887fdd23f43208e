package containerrecreate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type (
	crr            = kruiseappsv1alpha1.ContainerRecreateRequest
	crrStatus      = kruiseappsv1alpha1.ContainerRecreateRequestStatus
	containerState = kruiseappsv1alpha1.ContainerRecreateRequestContainerRecreateState
	syncStatus     = kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatus
)

const (
	phasePending    = kruiseappsv1alpha1.ContainerRecreateRequestPending
	phaseRecreating = kruiseappsv1alpha1.ContainerRecreateRequestRecreating
	phaseSucceeded  = kruiseappsv1alpha1.ContainerRecreateRequestSucceeded
	phaseFailed     = kruiseappsv1alpha1.ContainerRecreateRequestFailed
	phaseCompleted  = kruiseappsv1alpha1.ContainerRecreateRequestCompleted
)

// Pick chooses, among the requests of one pod, the one that runs now (the one already recreating, else the
// oldest) and those that must report Pending meanwhile (the ones not yet touched). Finished and deleted
// requests take no part.
func Pick(crrs []*crr) (run *crr, pending []*crr) {
	active := slices.DeleteFunc(slices.Clone(crrs), func(c *crr) bool {
		return c.DeletionTimestamp != nil || c.Status.CompletionTime != nil || c.Status.Phase == phaseCompleted
	})
	slices.SortStableFunc(active, func(a, b *crr) int {
		if d := phaseRank(a.Status.Phase) - phaseRank(b.Status.Phase); d != 0 {
			return d
		}
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i, c := range active {
		if i == 0 {
			run = c
		} else if c.Status.Phase == "" {
			pending = append(pending, c)
		}
	}
	return run, pending
}

// phaseRank orders requests so that one already recreating keeps the pod until it finishes.
func phaseRank(p kruiseappsv1alpha1.ContainerRecreateRequestPhase) int {
	switch p {
	case phaseRecreating:
		return 0
	case phasePending:
		return 1
	}
	return 2
}

// Admission says whether the picked request may act on containers now.
type Admission struct {
	// Ready is true when the containers may be looked at and stopped.
	Ready bool
	// Status, when set, is written instead (the request starts, or ends without acting).
	Status *crrStatus
	// Wait is when to look again (0: on the next change of the request).
	Wait time.Duration
	// Reason says why the request waits, for logs.
	Reason string
}

// Admit moves a request to Recreating first (so the manager starts syncing container statuses and, with
// unreadyGracePeriodSeconds, marks the pod not ready), then holds it until the pod has been not ready for
// that grace period.
func Admit(c *crr, now time.Time) Admission {
	if c.Status.Phase != phaseRecreating {
		next := *c.Status.DeepCopy()
		next.Phase = phaseRecreating
		return Admission{Status: &next, Reason: "starting"}
	}
	if c.Labels[kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey] == "" {
		return Admission{Status: completed(c.Status, now, "label "+kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey+" is missing")}
	}
	grace := strategyOf(c).UnreadyGracePeriodSeconds
	if grace == nil {
		return Admission{Ready: true}
	}
	return admitUnready(c, *grace, now)
}

func admitUnready(c *crr, graceSeconds int64, now time.Time) Admission {
	raw := c.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]
	if raw == "" {
		return Admission{Reason: "waiting for the pod to be marked not ready"}
	}
	since, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return Admission{Status: completed(c.Status, now, fmt.Sprintf("invalid annotation %s=%q: %v",
			kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey, raw, err))}
	}
	if left := time.Duration(graceSeconds)*time.Second - now.Sub(since); left > 0 {
		return Admission{Wait: left, Reason: "waiting for the unready grace period"}
	}
	return Admission{Ready: true}
}

// Input is what one planning step of a running request looks at.
type Input struct {
	CRR *crr
	// Containers is the runtime's newest container of each name of the pod (absent: none on the node).
	Containers map[string]cri.ContainerStatus
	Now        time.Time
}

// Plan is one step of a running request.
type Plan struct {
	// Status is the request's next status.
	Status crrStatus
	// Stop, when set, is the container to stop now; its outcome goes through Stopped.
	Stop *Stop
	// Wait is when to look again at the latest (0: on the next change).
	Wait time.Duration
}

// Stop names a container to stop.
type Stop struct {
	// Index is the container's position in spec.containers and status.containerRecreateStates.
	Index int
	Name  string
	// ContainerID is the runtime's id (without the "<runtime>://" prefix).
	ContainerID string
}

// PlanRecreate derives every container's state from the runtime and the manager's synced statuses, picks
// the next container to stop (at most one per step, each step's result is written before the next), and
// completes the request once every container is done.
func PlanRecreate(in Input) Plan {
	states, wait := currentStates(in)
	p := Plan{Status: *in.CRR.Status.DeepCopy(), Wait: wait}
	p.Status.ContainerRecreateStates = states
	st := strategyOf(in.CRR)
	done := 0
walk:
	for i := range states {
		switch states[i].Phase {
		case phaseSucceeded:
			done++
		case phaseFailed:
			done++
			if st.FailurePolicy != kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore {
				p.Status = *completed(p.Status, in.Now, failureMessage(states[i]))
				return p
			}
		case phaseRecreating:
			states[i].IsKilled = true
			if st.OrderedRecreate {
				break walk
			}
		default:
			if cur, ok := in.Containers[states[i].Name]; ok {
				p.Stop = &Stop{Index: i, Name: states[i].Name, ContainerID: cur.ID}
			}
			break walk
		}
	}
	if p.Stop == nil && done == len(states) {
		p.Status = *completed(p.Status, in.Now, ignoredFailures(states))
	}
	return p
}

// Stopped folds the outcome of the planned stop into the plan: the container is recreating, or failed, which
// under failurePolicy Fail ends the request at once.
func (p *Plan) Stopped(c *crr, stopErr error, now time.Time) {
	if p.Stop == nil {
		return
	}
	s := &p.Status.ContainerRecreateStates[p.Stop.Index]
	if stopErr == nil {
		*s = containerState{Name: s.Name, Phase: phaseRecreating, IsKilled: true}
		return
	}
	*s = containerState{Name: s.Name, Phase: phaseFailed, Message: "stopping the container failed: " + stopErr.Error()}
	if strategyOf(c).FailurePolicy != kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore {
		p.Status = *completed(p.Status, now, failureMessage(*s))
	} else if allDone(p.Status.ContainerRecreateStates) {
		p.Status = *completed(p.Status, now, ignoredFailures(p.Status.ContainerRecreateStates))
	}
}

// currentStates derives each container's state and how long until a recreated one has run minStartedSeconds.
func currentStates(in Input) ([]containerState, time.Duration) {
	synced := syncedStatuses(in.CRR)
	minStarted := time.Duration(strategyOf(in.CRR).MinStartedSeconds) * time.Second
	states := make([]containerState, 0, len(in.CRR.Spec.Containers))
	var wait time.Duration
	for i := range in.CRR.Spec.Containers {
		spec := &in.CRR.Spec.Containers[i]
		prev := previousState(in.CRR, spec.Name)
		cur, found := in.Containers[spec.Name]
		var curp *cri.ContainerStatus
		if found {
			curp = &cur
		}
		s, w := stateOf(in.CRR, spec, prev, synced[spec.Name], curp, in.Now, minStarted)
		states = append(states, s)
		wait = shorter(wait, w)
	}
	return states, wait
}

// stateOf is one container's state. A finished state stays; an exited container is being restarted by the
// kubelet; a container that changed since the request was created (another id, more restarts, started
// later) was recreated, and succeeds once the pod reports it ready for minStartedSeconds; any other one is
// still to be stopped (forceRecreate: even a recreated one, until the agent stopped it once).
func stateOf(c *crr, spec *kruiseappsv1alpha1.ContainerRecreateRequestContainer, prev containerState, synced *syncStatus,
	cur *cri.ContainerStatus, now time.Time, minStarted time.Duration) (containerState, time.Duration) {
	if prev.Phase == phaseSucceeded || prev.Phase == phaseFailed {
		return prev, 0
	}
	s := containerState{Name: spec.Name, Phase: phasePending, IsKilled: prev.IsKilled}
	switch {
	case cur == nil:
		s.Message = "container not found on the node"
	case cur.State == cri.StateExited:
		s.Phase = phaseRecreating
	case strategyOf(c).ForceRecreate && !prev.IsKilled:
		// Stopped whatever it did since the request was created.
	case recreated(spec.StatusContext, cur, c.CreationTimestamp.Time):
		s.Phase = phaseRecreating
		if synced != nil && bareID(synced.ContainerID) == cur.ID && synced.Ready {
			if ran := now.Sub(cur.StartedAt); ran >= minStarted {
				s.Phase = phaseSucceeded
			} else {
				return s, minStarted - ran
			}
		}
	}
	return s, 0
}

// recreated reports whether cur is not the container the request was made for. Creation timestamps have
// whole seconds: a container counts as started after the request only from the next second on, so the
// container that ran when the request was created is never mistaken for a new one.
func recreated(ctx *kruiseappsv1alpha1.ContainerRecreateRequestContainerContext, cur *cri.ContainerStatus, created time.Time) bool {
	if ctx != nil && (bareID(ctx.ContainerID) != cur.ID || cur.RestartCount() > ctx.RestartCount) {
		return true
	}
	return cur.StartedAt.Truncate(time.Second).After(created)
}

// bareID strips the "<runtime>://" prefix of a container id as pods and requests carry it.
func bareID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// syncedStatuses reads the manager's copy of the pod's container statuses; an unreadable one counts as
// none (the manager rewrites it on the next pod change).
func syncedStatuses(c *crr) map[string]*syncStatus {
	raw := c.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]
	var list []syncStatus
	if raw == "" || json.Unmarshal([]byte(raw), &list) != nil {
		return nil
	}
	out := make(map[string]*syncStatus, len(list))
	for i := range list {
		out[list[i].Name] = &list[i]
	}
	return out
}

func previousState(c *crr, name string) containerState {
	for _, s := range c.Status.ContainerRecreateStates {
		if s.Name == name {
			return s
		}
	}
	return containerState{}
}

func strategyOf(c *crr) kruiseappsv1alpha1.ContainerRecreateRequestStrategy {
	if c.Spec.Strategy == nil {
		return kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}
	}
	return *c.Spec.Strategy
}

func completed(s crrStatus, now time.Time, message string) *crrStatus {
	next := *s.DeepCopy()
	t := metav1.NewTime(now)
	next.Phase, next.CompletionTime, next.Message = phaseCompleted, &t, message
	return &next
}

func allDone(states []containerState) bool {
	return !slices.ContainsFunc(states, func(s containerState) bool {
		return s.Phase != phaseSucceeded && s.Phase != phaseFailed
	})
}

func failureMessage(s containerState) string {
	return fmt.Sprintf("container %s failed: %s", s.Name, s.Message)
}

// ignoredFailures names the containers that failed under failurePolicy Ignore ("" when none did).
func ignoredFailures(states []containerState) string {
	var names []string
	for _, s := range states {
		if s.Phase == phaseFailed {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "failed containers (ignored): " + strings.Join(names, ", ")
}

// shorter is the sooner of two waits, where 0 means none.
func shorter(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
