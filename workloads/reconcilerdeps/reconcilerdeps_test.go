package reconcilerdeps

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/flotilla-dev/flotilla/workloads/eventbudget"
)

type nopRecorder struct{}

func (nopRecorder) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}
func (nopRecorder) AnnotatedEventf(_, _ runtime.Object, _ map[string]string, _, _, _, _ string, _ ...any) {
}

// manager hands out its client and records which recorder names were asked for.
type manager struct {
	client client.Client
	asked  []string
}

func (m *manager) GetClient() client.Client { return m.client }
func (m *manager) GetEventRecorder(name string) recorder.EventRecorder {
	m.asked = append(m.asked, name)
	return nopRecorder{}
}

func TestDefaultFillsTheUnset(t *testing.T) {
	mgr := &manager{client: fake.NewClientBuilder().Build()}
	var d Deps
	d.Default(mgr, "flotilla-test")
	if d.Client != mgr.client {
		t.Errorf("Client = %v, want the manager's", d.Client)
	}
	if _, ok := d.Recorder.(*eventbudget.Recorder); !ok {
		t.Errorf("Recorder = %T, want the manager's behind an event budget", d.Recorder)
	}
	if len(mgr.asked) != 1 || mgr.asked[0] != "flotilla-test" {
		t.Errorf("recorders asked for %v, want [flotilla-test]", mgr.asked)
	}
	if _, ok := d.Clock.(clock.RealClock); !ok {
		t.Errorf("Clock = %T, want clock.RealClock", d.Clock)
	}
}

func TestDefaultKeepsTheSet(t *testing.T) {
	c, rec, clk := fake.NewClientBuilder().Build(), events.EventRecorder(nopRecorder{}), clocktesting.NewFakePassiveClock(time.Time{})
	mgr := &manager{client: fake.NewClientBuilder().Build()}
	d := Deps{Client: c, Recorder: rec, Clock: clk}
	d.Default(mgr, "flotilla-test")
	if d.Client != c || d.Recorder != rec || d.Clock != clk {
		t.Errorf("Default replaced a dependency the caller set: %+v", d)
	}
	if len(mgr.asked) != 0 {
		t.Errorf("recorders asked for %v, want none", mgr.asked)
	}
}
