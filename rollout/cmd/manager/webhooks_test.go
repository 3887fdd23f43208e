package main

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flotilla-dev/flotilla/nodeagent"
	"github.com/flotilla-dev/flotilla/rollout"
	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	"github.com/flotilla-dev/flotilla/rollout/analysis"
	"github.com/flotilla-dev/flotilla/sidecarset"
	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob"
	acjadmission "github.com/flotilla-dev/flotilla/workloads/advancedcronjob/admission"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob"
	"github.com/flotilla-dev/flotilla/workloads/cloneset"
	"github.com/flotilla-dev/flotilla/workloads/daemonset"
	"github.com/flotilla-dev/flotilla/workloads/deletionprotection"
	dpadmission "github.com/flotilla-dev/flotilla/workloads/deletionprotection/admission"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution"
	"github.com/flotilla-dev/flotilla/workloads/statefulset"
	statefulsetadmission "github.com/flotilla-dev/flotilla/workloads/statefulset/admission"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread"
)

// servedPaths are the paths the manager serves with every module running: each module's admission
// webhooks, and the pod webhook its chain is served on.
func servedPaths(t *testing.T) []string {
	t.Helper()
	srv := webhooktest.NewServer()
	scheme := newScheme()
	reader := fake.NewClientBuilder().WithScheme(scheme).Build()
	pods := &webhooks.PodChain{}
	validations := &webhooks.PodValidationChain{}
	validations.Add(podunavailablebudget.PodValidation(reader, reader, events.NewFakeRecorder(1), true, false))
	err := errors.Join(
		rollout.RegisterWebhooks(srv, rollout.Readers{Cached: reader}, scheme, rolloutadmission.DefaultOptions()),
		cloneset.RegisterWebhooks(srv, reader, scheme, pods),
		statefulset.RegisterWebhooks(srv, reader, scheme, statefulsetadmission.Options{}),
		daemonset.RegisterWebhooks(srv, scheme),
		ephemeraljob.RegisterWebhooks(srv, scheme),
		broadcastjob.RegisterWebhooks(srv, scheme),
		uniteddeployment.RegisterWebhooks(srv, scheme),
		nodeagent.RegisterWebhook(srv, reader, scheme),
		nodeagent.RegisterImageJobWebhooks(srv, scheme, nil),
		nodeagent.RegisterPodProbeMarkerWebhook(srv, scheme, nil),
		advancedcronjob.RegisterWebhooks(srv, scheme, acjadmission.Options{}),
		sidecarset.RegisterWebhooks(srv, reader, scheme, sidecarset.WebhookOptions{}),
		resourcedistribution.RegisterWebhooks(srv, scheme, nil),
		analysis.RegisterWebhooks(srv, scheme),
		persistentpodstate.RegisterWebhooks(srv, reader, scheme, pods),
		deletionprotection.RegisterWebhooks(srv, &deletionprotection.APICounter{Reader: reader}, dpadmission.Options{}),
		podunavailablebudget.RegisterWebhooks(srv, reader, scheme, nil),
		workloadspread.Hooks{Client: reader, Live: reader, Scheme: scheme}.Register(srv, pods, validations),
		webhooks.RegisterPodChain(srv, scheme, pods),
		webhooks.RegisterPodValidationChain(srv, scheme, reader, validations),
	)
	if err != nil {
		t.Fatal(err)
	}
	return srv.Paths()
}

// The chart configures exactly the paths the modules serve.
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
	configured = slices.Compact(configured) // mpod.kb.io and msidecarset-pod.kb.io share the pod chain's path, vpod.kb.io
	// and vpodeviction.kb.io the pod validating chain's
	if diff := cmp.Diff(servedPaths(t), configured); diff != "" {
		t.Errorf("registered paths (-) and configured paths (+) differ:\n%s", diff)
	}
}

// The chart's webhook file as a whole: its objects' names, the webhooks in order, and what they all share.
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
		if w.Name == "mpod.kb.io" || w.Name == "msidecarset-pod.kb.io" {
			continue // failurePolicy Ignore and no objectSelector: the pod webhook tests of webhooks/ and sidecarset/
		}
		checkCommon(t, w.Name, w.FailurePolicy, w.SideEffects, w.AdmissionReviewVersions, w.NamespaceSelector)
		if diff := cmp.Diff(workloadType, w.ObjectSelector); freezing[w.Name] && diff != "" {
			t.Errorf("webhook %s objectSelector (-want +got):\n%s", w.Name, diff)
		}
	}
	for _, w := range validating.Webhooks {
		names = append(names, w.Name)
		if w.Name == "vpod.kb.io" || w.Name == "vpodeviction.kb.io" {
			continue // sideEffects NoneOnDryRun and upstream's namespaces: the pod validating webhook tests of webhooks/
		}
		checkCommon(t, w.Name, w.FailurePolicy, w.SideEffects, w.AdmissionReviewVersions, w.NamespaceSelector)
	}
	want := []string{"mdeployment.kb.io", "dcloneset.kb.io", "mcloneset.kb.io", "ddaemonset.kb.io", "mdaemonset.kb.io",
		"mdaemonset-native.kb.io", "mstatefulset.kb.io", "munifiedworload.kb.io", "mpod.kb.io", "msidecarset-pod.kb.io",
		"mcontainerrecreaterequest.kb.io", "mimagepulljob.kb.io", "mimagelistpulljob.kb.io", "madvancedcronjob.kb.io", "mbroadcastjob.kb.io", "muniteddeployment.kb.io", "msidecarset.kb.io", "vrollout.kb.io", "vcloneset.kb.io",
		"vstatefulset.kb.io", "vdaemonset.kb.io", "vephemeraljob.kb.io", "vadvancedcronjob.kb.io", "vbroadcastjob.kb.io", "vuniteddeployment.kb.io", "vimagepulljob.kb.io", "vimagelistpulljob.kb.io", "vpodprobemarker.kb.io", "vresourcedistribution.kb.io", "vsidecarset.kb.io",
		"vanalysistemplate.analysis.flotilla.dev", "vclusteranalysistemplate.analysis.flotilla.dev", "vanalysisrun.analysis.flotilla.dev",
		"vpersistentpodstate.kb.io", "vworkloadspread.kb.io", "vnamespace.kb.io", "vservice.kb.io", "vingress.kb.io", "vcustomresourcedefinition.kb.io",
		"vbuiltindeployment.kb.io", "vbuiltinreplicaset.kb.io", "vbuiltinstatefulset.kb.io", "vworkloaddeletion.kb.io", "vdeleteprotectionlabel.kb.io",
		"vpod.kb.io", "vpodeviction.kb.io", "vpodunavailablebudget.kb.io"}
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
