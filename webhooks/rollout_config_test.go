package webhooks

import (
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

func registeredRolloutPaths(t *testing.T) []string {
	t.Helper()
	srv := webhooktest.NewServer()
	scheme := rolloutTestScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).Build()
	if err := RegisterRolloutWebhooks(srv, reader, scheme, rolloutadmission.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	pods := &PodChain{} // the cloneset module adds its readiness gate
	pods.Add(unchanged)
	if err := RegisterPodChain(srv, scheme, pods); err != nil {
		t.Fatal(err)
	}
	if err := RegisterCloneSetWebhooks(srv, reader, scheme); err != nil {
		t.Fatal(err)
	}
	if err := RegisterContainerRecreateRequestWebhook(srv, reader, scheme); err != nil {
		t.Fatal(err)
	}
	return srv.Paths()
}

func TestWebhookConfigurationPathsAreServed(t *testing.T) {
	mutating, validating := webhooktest.Configurations(t)
	var configured []string
	for _, w := range mutating.Webhooks {
		configured = append(configured, webhooktest.ServicePath(t, w.Name, w.ClientConfig))
	}
	for _, w := range validating.Webhooks {
		configured = append(configured, webhooktest.ServicePath(t, w.Name, w.ClientConfig))
	}
	slices.Sort(configured)
	if diff := cmp.Diff(registeredRolloutPaths(t), configured); diff != "" {
		t.Errorf("registered paths (-) and configured paths (+) differ:\n%s", diff)
	}
}

func TestWebhookConfigurations(t *testing.T) {
	mutating, validating := webhooktest.Configurations(t)
	if mutating.Name != "flotilla-mutating-webhook-configuration" || validating.Name != "flotilla-validating-webhook-configuration" {
		t.Errorf("names %q and %q", mutating.Name, validating.Name)
	}
	workloadType := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "rollouts.kruise.io/workload-type", Operator: metav1.LabelSelectorOpExists,
	}}}
	// The engine's freezing webhooks must never block a workload no Rollout labelled; the module webhooks
	// (CloneSet defaulting, pod readiness gates) have their own scoping, tested with them.
	// The native DaemonSet's is the exception, as upstream's: TestNativeDaemonSetWebhookSelectsTemplateChanges.
	freezing := map[string]bool{"mdeployment.kb.io": true, "mcloneset.kb.io": true, "mdaemonset.kb.io": true,
		"munifiedworload.kb.io": true}
	var names []string
	for _, w := range mutating.Webhooks {
		names = append(names, w.Name)
		if w.Name == "mpod.kb.io" {
			continue // failurePolicy Ignore and no objectSelector: TestPodWebhookConfiguration
		}
		checkCommon(t, w.Name, w.FailurePolicy, w.SideEffects, w.AdmissionReviewVersions, w.NamespaceSelector)
		if diff := cmp.Diff(workloadType, w.ObjectSelector); freezing[w.Name] && diff != "" {
			t.Errorf("webhook %s objectSelector (-want +got):\n%s", w.Name, diff)
		}
	}
	for _, w := range validating.Webhooks {
		names = append(names, w.Name)
		checkCommon(t, w.Name, w.FailurePolicy, w.SideEffects, w.AdmissionReviewVersions, w.NamespaceSelector)
	}
	want := []string{"mdeployment.kb.io", "dcloneset.kb.io", "mcloneset.kb.io", "mdaemonset.kb.io", "mdaemonset-native.kb.io",
		"munifiedworload.kb.io", "mpod.kb.io", "mcontainerrecreaterequest.kb.io", "vrollout.kb.io", "vcloneset.kb.io"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("webhook names (-want +got):\n%s", diff)
	}
}

func checkCommon(t *testing.T, name string, policy *admissionregistrationv1.FailurePolicyType, sideEffects *admissionregistrationv1.SideEffectClass,
	versions []string, namespaces *metav1.LabelSelector) {
	t.Helper()
	if policy == nil || *policy != admissionregistrationv1.Fail {
		t.Errorf("webhook %s failurePolicy is not Fail", name)
	}
	if sideEffects == nil || *sideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("webhook %s sideEffects is not None", name)
	}
	if !slices.Equal(versions, []string{"v1"}) {
		t.Errorf("webhook %s admissionReviewVersions = %v", name, versions)
	}
	selector, err := metav1.LabelSelectorAsSelector(namespaces)
	if err != nil {
		t.Fatalf("webhook %s namespaceSelector: %v", name, err)
	}
	kubeSystem := map[string]string{"kubernetes.io/metadata.name": "kube-system"}
	other := map[string]string{"kubernetes.io/metadata.name": "apps"}
	if namespaces == nil || selector.Matches(labels.Set(kubeSystem)) || !selector.Matches(labels.Set(other)) {
		t.Errorf("webhook %s namespaceSelector must exclude kube-system only", name)
	}
}

func TestRegisterRolloutWebhooksNeedsItsInputs(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := RegisterRolloutWebhooks(webhooktest.NewServer(), nil, scheme, rolloutadmission.DefaultOptions()); err == nil {
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
