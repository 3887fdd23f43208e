package rollout

import (
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

func TestRegisterWebhooksNeedsItsInputs(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := RegisterWebhooks(webhooktest.NewServer(), Readers{}, scheme, rolloutadmission.DefaultOptions()); err == nil {
		t.Error("no error without a reader")
	}
}

// The unified webhook's matchConditions name exactly the kinds its handler skips, so the API server calls it
// for none of them and for every other kind.
func TestUnifiedMatchConditionsNameTheSkippedKinds(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	var expr string
	for _, w := range mutating.Webhooks {
		if w.ClientConfig.Service != nil && w.ClientConfig.Service.Path != nil && *w.ClientConfig.Service.Path == MutateUnifiedWorkloadPath {
			for _, c := range w.MatchConditions {
				expr += c.Expression
			}
		}
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`request\.kind\.group == '([^']*)' && request\.kind\.kind (?:==|in) \[?([^)|]*)`).FindAllStringSubmatch(expr, -1) {
		for _, kind := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(m[2], -1) {
			named[m[1]+"/"+kind[1]] = true
		}
	}
	want := map[string]bool{}
	for gk := range unifiedSkipped {
		want[gk.Group+"/"+gk.Kind] = true
	}
	if diff := cmp.Diff(want, named); diff != "" {
		t.Errorf("kinds the handler skips (-) and the matchConditions exclude (+) differ:\n%s\nexpression: %s", diff, expr)
	}
}

// The native DaemonSet's webhook selects every DaemonSet (a template changed before the Rollout controller
// labelled it must not roll every pod), but is called only for what can start a release.
func TestNativeDaemonSetWebhookSelectsTemplateChanges(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	i := slices.IndexFunc(mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == "mdaemonset-native.kb.io" })
	if i < 0 {
		t.Fatal("no mdaemonset-native.kb.io")
	}
	w := mutating.Webhooks[i]
	if w.ObjectSelector != nil && len(w.ObjectSelector.MatchExpressions)+len(w.ObjectSelector.MatchLabels) > 0 {
		t.Errorf("objectSelector %v: a DaemonSet not labelled yet would not be held", w.ObjectSelector)
	}
	want := `object.spec.template != oldObject.spec.template || (has(object.metadata.labels) && 'rollouts.kruise.io/workload-type' in object.metadata.labels)`
	if !slices.ContainsFunc(w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Expression == want }) {
		t.Errorf("matchConditions %+v lack %s", w.MatchConditions, want)
	}
}

// Every webhook that freezes workloads spares the manager's own writes, naming the identity the chart
// replaces with its release's manager service account.
func TestWorkloadWebhooksSpareTheManager(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	want := `request.userInfo.username != 'system:serviceaccount:flotilla-system:flotilla-manager'`
	freezing := 0
	for _, w := range mutating.Webhooks {
		selectsLabelled := w.ObjectSelector != nil && len(w.ObjectSelector.MatchExpressions) > 0 &&
			w.ObjectSelector.MatchExpressions[0].Key == rolloutsv1beta1.WorkloadTypeLabel
		if !selectsLabelled && w.Name != "mdaemonset-native.kb.io" {
			continue
		}
		freezing++
		if !slices.ContainsFunc(w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Expression == want }) {
			t.Errorf("%s: no matchCondition %s", w.Name, want)
		}
	}
	if freezing != 5 {
		t.Errorf("%d webhooks select the workload-type label, want the 5 that freeze workloads", freezing)
	}
}
