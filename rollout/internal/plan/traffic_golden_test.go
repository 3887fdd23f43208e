package plan

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// simNet is a network that makes one change per call, as providers do: the canary Service, the stable pin and
// the routes each take a call (and a grace period) of their own.
type simNet struct {
	canaryService bool
	pinned        string
	routes        string
	fail          string
	lastChange    time.Time
}

func (n *simNet) String() string {
	return fmt.Sprintf("canarySvc=%v pin=%q routes=%q", n.canaryService, n.pinned, n.routes)
}

func (n *simNet) run(t *testing.T, now time.Time, st rolloutsv1beta1.RolloutStatus, spec rolloutsv1beta1.RolloutSpec) *TrafficObs {
	task, ok, err := PlanTraffic(st, spec)
	if err != nil {
		t.Fatalf("PlanTraffic: %v", err)
	}
	if !ok {
		return nil
	}
	if n.fail != "" {
		return &TrafficObs{Task: task, Failure: n.fail}
	}
	done := n.apply(task)
	if !done {
		n.lastChange = now
	}
	return &TrafficObs{Task: task, Done: done, LastChange: n.lastChange}
}

// apply makes the first change the task needs and reports whether none was needed.
func (n *simNet) apply(t TrafficTask) bool {
	want := *n
	switch t.Kind {
	case TrafficPrepare:
		want.canaryService, want.pinned = true, t.StableRevision
	case TrafficRoute:
		want.canaryService, want.pinned, want.routes = true, t.StableRevision, describeRoutes(t.Routes)
	case TrafficClear:
		want = simNet{}
	case TrafficRestoreService:
		want.pinned = ""
	case TrafficToStable:
		want.routes = ""
	case TrafficRemoveCanary:
		want.routes, want.canaryService = "", false
	case TrafficToNew:
		want.routes = describeRoutes(t.Routes)
	}
	switch {
	case n.canaryService != want.canaryService:
		n.canaryService = want.canaryService
	case n.pinned != want.pinned:
		n.pinned = want.pinned
	case n.routes != want.routes:
		n.routes = want.routes
	default:
		return true
	}
	return false
}

func describeRoutes(r trafficrouting.Routes) string {
	out := ""
	if r.Weight != nil {
		out = fmt.Sprintf("weight=%d", *r.Weight)
	}
	for _, m := range r.Matches {
		for _, h := range m.Headers {
			out += fmt.Sprintf(" %s=%s", h.Name, h.Value)
		}
	}
	return out
}

func newTrafficSim(t *testing.T, steps ...rolloutsv1beta1.CanaryStep) *sim {
	s := newSim(t, steps...)
	s.spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{{
		Service: "echoserver", GracePeriodSeconds: 3,
		Ingress: &rolloutsv1beta1.IngressTrafficRouting{ClassType: "nginx", Name: "echoserver"},
	}}
	s.net = &simNet{}
	return s
}

func traffic(weight string, r string) rolloutsv1beta1.CanaryStep {
	step := replicas(r)
	step.Traffic = ptr.To(weight)
	return step
}

// later lets a grace period pass before the next reconcile.
func (s *sim) later(note string) RolloutDecision {
	s.now = s.now.Add(3 * time.Second)
	return s.reconcile(note)
}

// finish reconciles, a grace period apart, until the release is over and the network is as it was.
func (s *sim) finish() {
	for i := range 16 {
		d := s.later(fmt.Sprintf("finalising %d", i+1))
		if d.Finished != "" {
			break
		}
	}
	if s.status.Phase != rolloutsv1beta1.RolloutPhaseHealthy {
		s.t.Fatalf("release not finished: %s", s.status.Phase)
	}
	if *s.net != (simNet{lastChange: s.net.lastChange}) {
		s.t.Errorf("network after the release: %s, want it as before", s.net)
	}
}

// The seed document's nginx canary, shortened: 5% of traffic to one pod, approved; 40%; then everything.
func TestGoldenNginxCanary(t *testing.T) {
	s := newTrafficSim(t, traffic("5%", "1"), withPause(traffic("40%", "40%"), 0), traffic("100%", "100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("canary service")
	s.later("stable pinned")
	s.later("services settled")
	s.reconcile("batch 1 ready")
	s.later("weight 5 set")
	s.later("grace passed")
	s.approve()
	s.reconcile("approved")
	s.reconcile("step 2 prepared")
	s.reconcile("batch 2 ready")
	s.later("weight 40 set")
	s.later("grace passed")
	s.reconcile("step 3 prepared")
	s.reconcile("batch 3 ready")
	s.later("weight 100 set")
	s.finish()
	s.golden("nginx-canary")
}

// The seed document's A/B test: requests with user-agent: pc go to one new pod; the next steps route nothing
// and the header route goes before their batches grow.
func TestGoldenABTestThenBatches(t *testing.T) {
	ab := replicas("3")
	ab.Matches = []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayHeader{header("user-agent", "pc")}}}
	s := newTrafficSim(t, ab, replicas("50%"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("canary service")
	s.later("stable pinned")
	s.later("services settled")
	s.reconcile("batch 1 ready")
	s.later("header route set")
	s.later("grace passed")
	s.approve()
	s.reconcile("approved")
	s.reconcile("route removed")
	s.later("stable unpinned")
	s.later("canary service removed")
	s.later("cleared")
	s.reconcile("batch 2 ready")
	s.approve()
	s.reconcile("approved")
	s.reconcile("step 3 cleared")
	// The network is restored already: the finalising steps that restore it find nothing to do, and the one
	// reconcile that ends the last step reaches the workload's release.
	if d := s.later("last step ends"); d.Status.CanaryStatus.FinalisingStep != rolloutsv1beta1.FinalisingStepResumeWorkload || d.Plan == nil {
		t.Fatalf("finalising step %q with plan %v, want %s with the finalizing plan", d.Status.CanaryStatus.FinalisingStep, d.Plan,
			rolloutsv1beta1.FinalisingStepResumeWorkload)
	}
	s.finish()
	s.golden("ab-test")
}

// A rollback during a canary step takes traffic back before the workload is released.
func TestGoldenRollbackMidCanary(t *testing.T) {
	s := newTrafficSim(t, traffic("20%", "1"), traffic("100%", "100%"))
	s.spec.Strategy.Canary.TrafficRoutings[0].GracePeriodSeconds = 0
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("canary service")
	s.reconcile("stable pinned")
	s.reconcile("services settled")
	s.reconcile("batch 1 ready")
	s.reconcile("weight 20 set")
	s.reconcile("no grace to wait")
	s.release("v1")
	s.reconcile("rolled back to v1")
	s.finish()
	s.golden("rollback-mid-canary")
}

// A network failure stalls the release before any pod is upgraded and says why.
func TestTrafficFailureHoldsFirstBatch(t *testing.T) {
	s := newTrafficSim(t, traffic("5%", "1"), traffic("100%", "100%"))
	s.reconcile("created")
	s.release("v2")
	s.net.fail = "stable Service default/echoserver (trafficRoutings[0].service) not found"
	s.reconcile("v2 applied")
	d := s.reconcile("service missing")
	if s.plan != nil {
		t.Errorf("a BatchRelease is wanted while the Services cannot be prepared: %+v", s.plan)
	}
	if c := GetCondition(d.Status.Conditions, ConditionStalled); c == nil || c.Reason != ReasonTrafficFailed {
		t.Errorf("Stalled condition = %+v, want reason %s", c, ReasonTrafficFailed)
	}
	if d.RequeueAfter != trafficFailureRecheck {
		t.Errorf("RequeueAfter = %v, want %v", d.RequeueAfter, trafficFailureRecheck)
	}
	s.net.fail = ""
	s.reconcile("service created")
	s.later("pinned")
	s.later("settled")
	if s.plan == nil || *s.plan.BatchPartition != 0 {
		t.Errorf("plan after the Services are ready = %+v, want batch 1", s.plan)
	}
}

type gatewayHeader = gatewayv1.HTTPHeaderMatch

func header(name, value string) gatewayv1.HTTPHeaderMatch {
	return gatewayv1.HTTPHeaderMatch{Name: gatewayv1.HTTPHeaderName(name), Value: value}
}

// Disabling a Rollout mid-canary restores the network before the workload is released, as a success does.
func TestGoldenDisableMidCanary(t *testing.T) {
	s := newTrafficSim(t, traffic("20%", "1"), replicas("100%"))
	s.spec.Strategy.Canary.TrafficRoutings[0].GracePeriodSeconds = 0
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("canary service")
	s.reconcile("stable pinned")
	s.reconcile("services settled")
	s.reconcile("batch 1 ready")
	s.reconcile("weight 20 set")
	s.reconcile("no grace to wait")
	s.spec.Disabled = true
	for i := range 12 {
		s.reconcile(fmt.Sprintf("disabling %d", i+1))
		if s.status.Phase == rolloutsv1beta1.RolloutPhaseDisabled {
			break
		}
	}
	if s.status.Phase != rolloutsv1beta1.RolloutPhaseDisabled {
		t.Fatalf("phase %s, want Disabled", s.status.Phase)
	}
	if *s.net != (simNet{lastChange: s.net.lastChange}) {
		t.Errorf("network after disabling: %s, want it as before", s.net)
	}
	s.golden("disable-mid-canary")
}
