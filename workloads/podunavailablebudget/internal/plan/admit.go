package plan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// MaxRecordedPods bounds the disruptions a budget records and its controller has not confirmed yet
// (disruptedPods and unavailablePods together), upstream's 2000: past it, disruptions are refused.
const MaxRecordedPods = 2000

// Verdict is what a budget says of one pod disruption.
type Verdict int

const (
	// Exempt: the budget does not count this disruption; it goes ahead and nothing is recorded.
	Exempt Verdict = iota
	// Admit: the budget allows it; Decision.Status records it and must be written before it goes ahead.
	Admit
	// Refuse: the budget allows no more unavailable pods.
	Refuse
	// RefuseUnconfirmed: too many recorded disruptions wait for the controller.
	RefuseUnconfirmed
)

func (v Verdict) String() string {
	switch v {
	case Exempt:
		return "exempt"
	case Admit:
		return "admit"
	case Refuse:
		return "refuse"
	case RefuseUnconfirmed:
		return "refuse-unconfirmed"
	}
	return "unknown"
}

// Decision is a budget's answer to one disruption.
type Decision struct {
	Verdict Verdict
	// Reason says why, for the refusal message or the logs.
	Reason string
	// Status is, on Admit, the budget's status with the disruption recorded.
	Status *kruisepolicyv1alpha1.PodUnavailableBudgetStatus
}

// Decide answers a disruption (op) of pod under pub at now, as upstream: a budget that wants no pod available,
// an operation it does not protect or a pod it already counts as disrupted costs nothing; otherwise one
// unavailable pod of unavailableAllowed is taken and the pod recorded, an update in unavailablePods, a
// deletion or eviction in disruptedPods. The pod-level rules (PodExemption) are the caller's, before it reads pub.
func Decide(pub *kruisepolicyv1alpha1.PodUnavailableBudget, pod string, op kruisepolicyv1alpha1.PubOperation, now time.Time) Decision {
	st := &pub.Status
	switch {
	case st.DesiredAvailable == 0:
		return Decision{Verdict: Exempt, Reason: "the budget wants no pod available"}
	case !Protects(pub, op):
		return Decision{Verdict: Exempt, Reason: fmt.Sprintf("the budget does not protect %s", op)}
	case recorded(st, pod):
		return Decision{Verdict: Exempt, Reason: "the budget already counts the pod as disrupted"}
	case st.UnavailableAllowed <= 0:
		return Decision{Verdict: Refuse, Reason: fmt.Sprintf("the budget allows no more unavailable pods "+
			"(desiredAvailable %d, unavailableAllowed %d, disruptions recorded %d)", st.DesiredAvailable, st.UnavailableAllowed,
			len(st.DisruptedPods)+len(st.UnavailablePods))}
	case len(st.DisruptedPods)+len(st.UnavailablePods) > MaxRecordedPods:
		return Decision{Verdict: RefuseUnconfirmed, Reason: fmt.Sprintf("the budget records more than %d disruptions "+
			"its controller has not confirmed", MaxRecordedPods)}
	}
	return Decision{Verdict: Admit, Status: record(st, pod, op, now)}
}

func recorded(st *kruisepolicyv1alpha1.PodUnavailableBudgetStatus, pod string) bool {
	_, disrupted := st.DisruptedPods[pod]
	_, unavailable := st.UnavailablePods[pod]
	return disrupted || unavailable
}

// record is st with one unavailable pod taken and pod recorded at now.
func record(st *kruisepolicyv1alpha1.PodUnavailableBudgetStatus, pod string, op kruisepolicyv1alpha1.PubOperation,
	now time.Time) *kruisepolicyv1alpha1.PodUnavailableBudgetStatus {
	next := st.DeepCopy()
	next.UnavailableAllowed--
	records := &next.DisruptedPods
	if op == kruisepolicyv1alpha1.PubUpdateOperation {
		records = &next.UnavailablePods
	}
	if *records == nil {
		*records = map[string]metav1.Time{}
	}
	(*records)[pod] = metav1.NewTime(now)
	return next
}
